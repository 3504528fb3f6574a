// Command forward is the fence's forwarder alone, as `bot fence-forward`
// runs it, for tests (fencetest.Forwarder): built in seconds where the whole bot
// takes minutes.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/pullwright/pullwright/fence"
)

func main() {
	if err := fence.RunForwarder(context.Background(), os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
