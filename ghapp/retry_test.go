package ghapp

import "github.com/pullwright/pullwright/internal/httpretry"

// sleepCtx is the transport's real sleep, for the tests that wait for real.
var sleepCtx = httpretry.Sleep
