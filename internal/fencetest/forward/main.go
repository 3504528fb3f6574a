// Command forward is what the bot's binary serves inside a sandbox, alone,
// as `bot fence-forward` and `bot gocache` run it, for tests
// (fencetest.Forwarder): built in seconds where the whole bot takes
// minutes.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/pullwright/pullwright/buildcache"
	"github.com/pullwright/pullwright/fence"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "gocache" {
		err = buildcache.Main(os.Args[2:], os.Stderr)
	} else {
		err = fence.RunForwarder(context.Background(), os.Stdin, os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, buildcache.ErrUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
