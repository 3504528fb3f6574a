// Package browsertest gives a test a real browser: headless Chromium from
// the machine's packages, driven from Go with chromedp over the DevTools
// protocol. Without a Chromium the test is skipped, except with CI=true,
// where a missing browser is a failure: .ci/run installs Debian's.
//
// When a test fails, each of its browsers writes a screenshot of the page
// it shows into the test's artifact directory (go test -artifacts keeps
// it) and logs the path.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pullwright/pullwright/internal/prereq"
)

// names are the browser's executable names, Debian's first.
var names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Path is the Chromium to run, or "" when the machine has none.
func Path() string {
	if p := os.Getenv("PULLWRIGHT_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

var browsers atomic.Int64

// New starts a browser of its own (its own profile and cookies) for the
// test, and returns the context that drives it. It is closed when the
// test ends, after the screenshot of a failure.
func New(t testing.TB) context.Context {
	t.Helper()
	path := Path()
	if path == "" {
		prereq.Missing(t, "Chromium", "no Chromium on this machine (apt-get install chromium, or set PULLWRIGHT_CHROMIUM)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		// The tests may run as root, where Chromium's sandbox refuses to
		// start; the pages are the test's own.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	n := browsers.Add(1)
	// Start it now, so that a browser that cannot start fails here. Not
	// under a deadline: the context of the first call is the browser's life.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("browsertest: start %s: %v", path, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			name := fmt.Sprintf("%s-browser%d.png", strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()), n)
			if p, err := Screenshot(ctx, artifacts(t), name); err != nil {
				t.Logf("browsertest: screenshot: %v", err)
			} else {
				t.Logf("browsertest: screenshot of the failed page: %s", p)
			}
		}
		cancel()
		cancelAlloc()
	})
	return ctx
}

// artifacts is where failure screenshots go.
func artifacts(t testing.TB) string {
	if a, ok := t.(interface{ ArtifactDir() string }); ok {
		return a.ArtifactDir()
	}
	return os.TempDir()
}

// Screenshot writes the whole page the browser shows to dir/name as PNG and
// returns the file's path.
func Screenshot(ctx context.Context, dir, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "", fmt.Errorf("take screenshot: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("screenshot directory: %w", err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		return "", fmt.Errorf("write screenshot: %w", err)
	}
	return p, nil
}

// Do runs steps in the browser under a deadline of d.
func Do(ctx context.Context, d time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// Eval evaluates a script in the page under a deadline of d, waiting for
// a promise it returns.
func Eval[T any](ctx context.Context, d time.Duration, script string) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](script, chromedp.EvalAwaitPromise))
}
