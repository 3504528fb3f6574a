// Package sandboxtest gives tests the Docker sandbox image: the engine must
// answer and the image built by scripts/sandbox-image.sh (busybox and this
// machine's Go toolchain, no registry needed) must exist; if only the image
// is missing, it is built once; the same for the Node and Python image
// of scripts/sandbox-image-debian.sh (NodeAndPython). With CI=true a missing engine or image fails
// the test; elsewhere it is skipped with the reason.
// PULLWRIGHT_SANDBOX_IMAGE names another image.
package sandboxtest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright/internal/prereq"
)

// DefaultImage is the tag scripts/sandbox-image.sh builds.
const DefaultImage = "pullwright/sandbox-go:test"

// NodePythonImage is the tag scripts/sandbox-image-debian.sh builds.
const NodePythonImage = "pullwright/sandbox-node-python:test"

// kind is one of the test images: the variable naming another, its
// default tag and the script that builds that tag.
type kind struct {
	env, tag, script string
	once             sync.Once
	image            string
	err              error
}

var (
	goImage   = &kind{env: "PULLWRIGHT_SANDBOX_IMAGE", tag: DefaultImage, script: "sandbox-image.sh"}
	nodeImage = &kind{env: "PULLWRIGHT_SANDBOX_NODE_IMAGE", tag: NodePythonImage, script: "sandbox-image-debian.sh"}
)

// Image returns the sandbox image, or skips (fails under CI=true) the test.
func Image(t testing.TB) string {
	t.Helper()
	return goImage.get(t)
}

// NodeAndPython returns the image with Node, npm, Python and pip (a
// Debian root file system, scripts/sandbox-image-debian.sh), or skips
// (fails under CI=true) the test.
func NodeAndPython(t testing.TB) string {
	t.Helper()
	return nodeImage.get(t)
}

func (k *kind) get(t testing.TB) string {
	t.Helper()
	k.once.Do(func() { k.image, k.err = k.find() })
	if k.err != nil {
		prereq.Missing(t, "Docker", fmt.Sprintf("the Docker sandbox cannot be tested: %v (a Docker engine, and the image scripts/sandbox-image.sh, or for Node and Python scripts/sandbox-image-debian.sh, builds)", k.err))
	}
	return k.image
}

func (k *kind) find() (string, error) {
	img := os.Getenv(k.env)
	if img == "" {
		img = k.tag
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
	if img != k.tag {
		return "", fmt.Errorf("image %s (%s) is not on the Docker host", img, k.env)
	}
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "..", "scripts", k.script)
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
	return Commit(t, Image(t), changes...)
}

// Commit is base committed with changes, removed when the test ends.
func Commit(t testing.TB, base string, changes ...string) string {
	t.Helper()
	return commit(t, base, "", changes)
}

// CommitAfter is base after script ran in it as root (sh -c), committed
// with changes, removed when the test ends: an image whose files differ
// from base's.
func CommitAfter(t testing.TB, base, script string, changes ...string) string {
	t.Helper()
	return commit(t, base, script, changes)
}

func commit(t testing.TB, base, script string, changes []string) string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	cfg := &container.Config{Image: base, Cmd: []string{"true"}}
	if script != "" {
		cfg.User, cfg.Cmd = "0", []string{"sh", "-c", script}
	}
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
	if script != "" {
		if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatal(err)
		}
		wait := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case r := <-wait.Result:
			if r.StatusCode != 0 {
				t.Fatalf("%s in %s: exit %d", script, base, r.StatusCode)
			}
		case err := <-wait.Error:
			t.Fatal(err)
		}
	}
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

// OwnedCopy is a copy of dir whose files belong to user ("uid:gid"), for
// a bind mount, as the sandbox's copy belongs to the sandbox's user. The
// test runs as root, or as the sandbox's user itself.
func OwnedCopy(t testing.TB, dir, user string) string {
	t.Helper()
	var uid, gid int
	if _, err := fmt.Sscanf(user, "%d:%d", &uid, &gid); err != nil {
		t.Fatalf("user %q: %v", user, err)
	}
	dst := filepath.Join(t.TempDir(), "plain")
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dst, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
