// Package sandboxtest gives tests the Docker sandbox image: the engine must
// answer and the image built by scripts/sandbox-image.sh (busybox and this
// machine's Go toolchain, no registry needed) must exist; if only the image
// is missing, it is built once. With CI=true a missing engine or image fails
// the test; elsewhere it is skipped with the reason.
// PULLWRIGHT_SANDBOX_IMAGE names another image.
package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// DefaultImage is the tag scripts/sandbox-image.sh builds.
const DefaultImage = "pullwright/sandbox-go:test"

var (
	once  sync.Once
	image string
	err   error
)

// Image returns the sandbox image, or skips (fails under CI=true) the test.
func Image(t testing.TB) string {
	t.Helper()
	once.Do(func() { image, err = find() })
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the Docker sandbox cannot be tested: %v", err)
		}
		t.Skipf("Docker sandbox tests skipped (set CI=true to make this a failure): %v", err)
	}
	return image
}

func find() (string, error) {
	img := os.Getenv("PULLWRIGHT_SANDBOX_IMAGE")
	if img == "" {
		img = DefaultImage
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return "", fmt.Errorf("docker client: %w", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return "", fmt.Errorf("the Docker engine is not reachable: %w", err)
	}
	if _, err := cli.ImageInspect(ctx, img); err == nil {
		return img, nil
	}
	if img != DefaultImage {
		return "", fmt.Errorf("image %s (PULLWRIGHT_SANDBOX_IMAGE) is not on the Docker host", img)
	}
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "..", "scripts", "sandbox-image.sh")
	if out, err := exec.Command(script, img).CombinedOutput(); err != nil {
		return "", fmt.Errorf("image %s is missing and %s failed: %v\n%s", img, script, err, out)
	}
	return img, nil
}

// ImageWith is the sandbox image committed with changes (Dockerfile
// lines such as "ENV GOPROXY=…" or "VOLUME /data"), removed when the test
// ends: an image as a repository or an operator might have built it.
func ImageWith(t testing.TB, changes ...string) string {
	t.Helper()
	base := Image(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: base, Cmd: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
	ref := fmt.Sprintf("pullwright/sandbox-variant:test-%d-%d", os.Getpid(), time.Now().UnixNano())
	if _, err := cli.ContainerCommit(ctx, created.ID, client.ContainerCommitOptions{Reference: ref, Changes: changes}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := client.New(client.FromEnv)
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true})
	})
	return ref
}
