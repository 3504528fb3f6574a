// Package runner owns running one approved command in a sandbox and returning
// its exit code and bounded output. It must not decide whether a command is
// allowed: whoever calls Run has already asked policy and a maintainer.
//
// A Runner never works in the caller's workspace: it runs the command on a
// copy (for container backends, a copy sent into the container), so whatever
// the command writes, deletes or chmods, the workspace the agent edits is
// unchanged. The command gets a minimal environment, never the bot's.
//
// Backends: Docker (one locked-down container per command, the default) and
// Local (a process group on this machine; no isolation, for development and
// GitHub Actions runners only).
//
// Import rule: none of policy, approval or task.
package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
)

// Defaults applied to a RunSpec's zero values.
const (
	DefaultTimeout   = 10 * time.Minute
	DefaultMaxOutput = 1 << 20 // 1 MiB
)

// validLinkName reports whether a Link's name is a path inside the
// workspace: relative, clean, with no "." or ".." and no backslash or NUL.
func validLinkName(l pullwright.Link) bool {
	if l.Name == "" || strings.ContainsAny(l.Name, "\\\x00") || path.Clean(l.Name) != l.Name || path.IsAbs(l.Name) {
		return false
	}
	for _, part := range strings.Split(l.Name, "/") {
		if part == "." || part == ".." {
			return false
		}
	}
	return true
}

// CacheFiles is the directory of a cache volume that holds its files.
const CacheFiles = "files"

// Network modes a Spec may ask for. Anything else (host, container:<id>, a
// user-defined network) would give the command more than the operator
// decided per repository, so it is refused rather than passed to the backend.
const (
	NetworkNone   = "none"
	NetworkBridge = "bridge"
)

// checkLimits refuses RunSpec limits no backend should see.
func checkLimits(s pullwright.RunSpec) error {
	switch s.Network {
	case "", NetworkNone, NetworkBridge:
	default:
		return fmt.Errorf("run: network %q refused: a run may ask for %q or %q only", s.Network, NetworkNone, NetworkBridge)
	}
	if s.Memory < 0 {
		return fmt.Errorf("run: negative memory limit %d", s.Memory)
	}
	if s.NanoCPUs < 0 {
		return fmt.Errorf("run: negative CPU limit %d", s.NanoCPUs)
	}
	if s.Disk < 0 {
		return fmt.Errorf("run: negative disk limit %d", s.Disk)
	}
	for _, c := range s.Caches {
		t := path.Clean(c.Target)
		switch {
		case c.Volume == "" || !path.IsAbs(c.Target) || t != c.Target:
			return fmt.Errorf("run: cache mount %q at %q: want a volume and a clean absolute path", c.Volume, c.Target)
		case t == "/" || t == SandboxWorkdir || strings.HasPrefix(t, SandboxWorkdir+"/") || t == "/tmp" || t == "/var/tmp" || t == ToolsDir:
			return fmt.Errorf("run: cache mount at %s would cover the sandbox's own", t)
		}
	}
	for _, e := range s.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("run: environment entry %q is not NAME=value", e)
		}
	}
	return nil
}

// Runner runs one approved command. The error is only for failures of the
// runner itself (the workspace cannot be copied, the shell cannot be started)
// and for ctx being done, in which case the partial Result is returned too
// and the error wraps ctx.Err().
type Runner interface {
	Run(ctx context.Context, s pullwright.RunSpec) (pullwright.RunResult, error)
}

// withDefaults returns s with its zero values replaced by the defaults.
func withDefaults(s pullwright.RunSpec) pullwright.RunSpec {
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxOutput <= 0 {
		s.MaxOutput = DefaultMaxOutput
	}
	return s
}

// copyWorkspace makes a fresh run directory under tempDir (named after
// pattern) and copies src into its "work" folder. It returns the run
// directory, the copy, and the function that removes both, which the
// caller defers.
func copyWorkspace(ctx context.Context, log *slog.Logger, tempDir, pattern, src string) (base, work string, remove func(), err error) {
	base, err = os.MkdirTemp(tempDir, pattern)
	if err != nil {
		return "", "", nil, fmt.Errorf("create run directory: %w", err)
	}
	remove = func() {
		if err := removeTree(base); err != nil {
			log.Error("runner: remove workspace copy", "dir", base, "err", err)
		}
	}
	work = filepath.Join(base, "work")
	if err := copyTree(ctx, src, work); err != nil {
		remove()
		return "", "", nil, fmt.Errorf("copy workspace %s: %w", src, err)
	}
	return base, work, remove, nil
}
