package sandboxtest_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/pullwright/pullwright/internal/sandboxtest"
)

// An image with ENV lines is its base with those variables, whichever
// way it was made (loaded over the base's layers, or committed): a
// variable the base has is replaced, a new one added, the files are the
// base's, and the image is gone when the test ends. So is one with a
// line only a commit makes.
func TestCommitWithVariables(t *testing.T) {
	base := sandboxtest.Image(t)
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	baseImg, err := cli.ImageInspect(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		changes []string
		script  string
		want    string
	}{
		{"ENV lines", []string{"ENV GOPROXY=http://modproxy.test:1234", "ENV PATH=/bin:/usr/local/go/bin", "ENV GOSUMDB=off"},
			`echo "$GOPROXY $GOSUMDB $PATH"; go version >/dev/null && echo go`, "http://modproxy.test:1234 off /bin:/usr/local/go/bin\ngo\n"},
		{"a quoted value", []string{`ENV GREETING="hello world"`}, `echo "$GREETING"`, "hello world\n"},
		{"a label", []string{"LABEL pullwright.test=variant", "ENV A=b"}, `echo "$A"`, "b\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ref string
			t.Run("make", func(t *testing.T) {
				ref = sandboxtest.Commit(t, base, tc.changes...)
				out, err := exec.Command("docker", "run", "--rm", ref, "sh", "-c", tc.script).CombinedOutput()
				if err != nil || string(out) != tc.want {
					t.Errorf("in %s: %q, %v; want %q", ref, out, err, tc.want)
				}
				img, err := cli.ImageInspect(t.Context(), ref)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := strings.Join(img.RootFS.Layers, " "), strings.Join(baseImg.RootFS.Layers, " "); !strings.HasPrefix(got, want) {
					t.Errorf("%s's layers %s are not on %s's %s", ref, got, base, want)
				}
			})
			if _, err := cli.ImageInspect(context.Background(), ref); err == nil {
				t.Errorf("%s outlived its test", ref)
			}
		})
	}
}

// An image with a file is its base with that file, executable if its
// mode says so, and the base's other files.
func TestWithFile(t *testing.T) {
	base := sandboxtest.NodeAndPython(t)
	img := sandboxtest.WithFile(t, base, "/usr/local/bin/du", 0o755, "#!/bin/sh\necho \"0\t$2 isn't it\"\n")
	out, err := exec.Command("docker", "run", "--rm", img, "sh", "-c", "du -sk /etc; ls -l /usr/local/bin/du | cut -c1-10; node --version >/dev/null && echo node").CombinedOutput()
	if want := "0\t/etc isn't it\n-rwxr-xr-x\nnode\n"; err != nil || string(out) != want {
		t.Errorf("in %s: %q, %v; want %q", img, out, err, want)
	}
}
