// Package sandboxtest gives tests the Docker sandbox image: the engine must
// answer and the image built by scripts/sandbox-image.sh (busybox and this
// machine's Go toolchain, no registry needed) must exist; if only the image
// is missing, it is built once; the same for the Node and Python image
// of scripts/sandbox-image-debian.sh (NodeAndPython). With CI=true a missing engine or image fails
// the test; elsewhere it is skipped with the reason.
// PULLWRIGHT_SANDBOX_IMAGE names another image.
package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
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

// WithFile is base with one more file, name (absolute, in a directory
// base has) holding content with mode, removed when the test ends: an
// image whose files differ from base's, made by loading one small layer
// over base's rather than by committing a container (see withEnv).
func WithFile(t testing.TB, base, name string, mode int64, content string) string {
	t.Helper()
	if !path.IsAbs(name) || path.Clean(name) != name {
		t.Fatalf("WithFile: %q is not a clean absolute path", name)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: name[1:], Mode: mode, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(tw, content); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ref := variant(t)
	err = load(context.Background(), cli, base, ref, nil, layer.Bytes())
	if err == nil {
		return ref
	}
	t.Logf("%s: the layer could not be loaded over %s's (%v); committing a container instead", ref, base, err)
	quoted := "'" + strings.ReplaceAll(content, "'", `'\''`) + "'"
	return CommitAfter(t, base, fmt.Sprintf("printf '%%s' %s > %s && chmod %o %s", quoted, name, mode, name))
}

// variant is the name of a new image of the test's, removed when it ends.
func variant(t testing.TB) string {
	ref := fmt.Sprintf("pullwright/sandbox-variant:test-%d-%d", os.Getpid(), time.Now().UnixNano())
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

func commit(t testing.TB, base, script string, changes []string) string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	ref := variant(t)
	if script == "" {
		if err := withEnv(ctx, cli, base, ref, changes); err == nil {
			return ref
		} else if !errors.Is(err, errNotEnv) {
			t.Logf("%s: the image's configuration could not be loaded over its layers (%v); committing a container instead", ref, err)
		}
	}
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
	if _, err := cli.ContainerCommit(ctx, created.ID, client.ContainerCommitOptions{Reference: ref, Changes: changes}); err != nil {
		t.Fatal(err)
	}
	return ref
}

// errNotEnv is withEnv's answer to a change it does not make.
var errNotEnv = errors.New("not a plain ENV line")

// envLine is the ENV line withEnv makes: one variable, a value with
// nothing a Dockerfile would unquote or expand.
var envLine = regexp.MustCompile(`^ENV ([A-Za-z_][A-Za-z0-9_]*)=([^\s"'\\$]*)$`)

// withEnv tags ref as base with changes, ENV lines only, by loading an
// image whose configuration is base's with those variables and whose
// layers are base's, which the engine already has and so does not read
// (the archive holds none). A commit does the same with a container, and
// on an engine whose storage driver diffs by walking the files
// (fuse-overlayfs) takes seconds to a minute for a change of no file.
// Another engine may want the layers: the error says so, and the caller
// commits instead.
func withEnv(ctx context.Context, cli *client.Client, base, ref string, changes []string) error {
	return load(ctx, cli, base, ref, changes, nil)
}

// load tags ref as base with changes (ENV lines only) and, if layer is
// not nil, that layer (an uncompressed tar) on top of base's: the archive
// holds the layer, and none of base's (see withEnv).
func load(ctx context.Context, cli *client.Client, base, ref string, changes []string, layer []byte) error {
	vars := make([][]string, len(changes))
	for i, c := range changes {
		if vars[i] = envLine.FindStringSubmatch(c); vars[i] == nil {
			return errNotEnv
		}
	}
	var raw bytes.Buffer
	if _, err := cli.ImageInspect(ctx, base, client.ImageInspectWithRawResponse(&raw)); err != nil {
		return err
	}
	var img struct {
		Architecture, Os, Variant string
		Config                    map[string]json.RawMessage
		RootFS                    struct{ Layers []string }
	}
	if err := json.Unmarshal(raw.Bytes(), &img); err != nil {
		return err
	}
	if img.Config == nil || len(img.RootFS.Layers) == 0 {
		return fmt.Errorf("%s has no configuration or no layers", base)
	}
	var env []string
	if e, ok := img.Config["Env"]; ok {
		if err := json.Unmarshal(e, &env); err != nil {
			return err
		}
	}
	for _, v := range vars {
		i := slices.IndexFunc(env, func(e string) bool { return strings.HasPrefix(e, v[1]+"=") })
		if i < 0 {
			env = append(env, v[1]+"="+v[2])
		} else {
			env[i] = v[1] + "=" + v[2]
		}
	}
	img.Config["Env"], _ = json.Marshal(env)
	diffIDs := img.RootFS.Layers
	if layer != nil {
		sum := sha256.Sum256(layer)
		diffIDs = append(slices.Clip(diffIDs), "sha256:"+hex.EncodeToString(sum[:]))
	}
	config, err := json.Marshal(map[string]any{
		"architecture": img.Architecture, "os": img.Os, "variant": img.Variant, "config": img.Config,
		// A time of its own, so that it is an image of its own, as a
		// commit's is: removing it leaves another test's alone.
		"created": time.Now().UTC(),
		"rootfs":  map[string]any{"type": "layers", "diff_ids": diffIDs},
	})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(config)
	name := hex.EncodeToString(sum[:]) + ".json"
	layers := make([]string, len(diffIDs))
	for i := range layers {
		layers[i] = fmt.Sprintf("%d/layer.tar", i) // base's are not in the archive
	}
	files := []struct {
		name string
		data []byte
	}{{name, config}}
	if layer != nil {
		files = append(files, struct {
			name string
			data []byte
		}{layers[len(layers)-1], layer})
	}
	manifest, err := json.Marshal([]map[string]any{{"Config": name, "RepoTags": []string{ref}, "Layers": layers}})
	if err != nil {
		return err
	}
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	for _, f := range append(files, struct {
		name string
		data []byte
	}{"manifest.json", manifest}) {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	res, err := cli.ImageLoad(ctx, &archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		return err
	}
	defer res.Close()
	dec := json.NewDecoder(res)
	for {
		var msg struct {
			Error       string
			ErrorDetail *struct{ Message string }
		}
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			return err
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
		if msg.ErrorDetail != nil {
			return errors.New(msg.ErrorDetail.Message)
		}
	}
	// What it loaded is base with the variables, or no image at all.
	got, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return err
	}
	if !slices.Equal(got.RootFS.Layers, diffIDs) || got.Config == nil || !slices.Equal(got.Config.Env, env) {
		return fmt.Errorf("the image loaded as %s is not %s with %q", ref, base, changes)
	}
	return nil
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
