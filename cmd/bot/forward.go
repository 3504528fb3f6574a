package main

import (
	"context"
	"io"

	"github.com/pullwright/pullwright/fence"
)

// fenceForward is "bot fence-forward": not for people (nor is "bot
// gocache", the Go build cache's link step that setup copies into a
// cache, buildcache.Main). The runner copies
// this binary into a sandbox that fetches dependencies, which has no
// network but loopback, and starts it there; it carries the sandbox's
// connections over its stdin and stdout to the bot's fence.
func fenceForward(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	return fence.RunForwarder(ctx, stdin, stdout, stderr)
}
