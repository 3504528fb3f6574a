// Package prereq is how a test says that it cannot run on this machine
// because a part it needs is missing (a Docker engine, Postgres, a
// browser): skipped where a developer runs the tests, failed with
// CI=true, where every part must be there. Every such skip says
// "missing part: PART: …" so that scripts/gotest can count them at the end
// of a run and say how to get each part, instead of leaving them unsaid
// among hundreds of passing tests.
package prereq

import (
	"fmt"
	"os"
	"testing"
)

// Marker opens the message of every test skipped for a missing part.
const Marker = "missing part: "

// Missing ends t, which needs part (a short name: "Docker", "Postgres",
// "Chromium") that this machine lacks, with detail saying what was tried
// and how to get it.
func Missing(t testing.TB, part, detail string) {
	t.Helper()
	msg := fmt.Sprintf("%s%s: %s", Marker, part, detail)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true, so a missing part is a failure; .ci/run installs every part)")
	}
	t.Skip(msg + " (set CI=true to make this a failure)")
}
