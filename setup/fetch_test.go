package setup_test

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fencetest"
	"github.com/pullwright/pullwright/internal/sandboxtest"
	"github.com/pullwright/pullwright/runner"
	"github.com/pullwright/pullwright/setup"
)

// writeFiles writes files into a new directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// volumesOf lists the volumes on the engine that carry repo as their
// owner.
func volumesOf(t *testing.T, repo string) string {
	t.Helper()
	out, err := exec.Command("docker", "volume", "ls", "-q", "--filter", "label="+runner.LabelOwner+"="+repo).Output()
	if err != nil {
		t.Fatalf("docker volume ls: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// A dependency command runs as the setup does: go get reaches the module
// proxy the image's go env names, through the fence, into a cache of its
// own that is gone afterwards, and its changes to go.mod and go.sum come
// back. One that reaches for a host off the list is refused, fails and
// keeps nothing; files the setup cannot be planned from run nothing.
func TestFetch(t *testing.T) {
	host, served := fencetest.ModProxy(t)
	image := sandboxtest.ImageWith(t, "ENV GOPROXY=http://"+host, "ENV GOSUMDB=off")
	repo := fmt.Sprintf("test/setup-fetch-%d", os.Getpid())
	d := newDocker(t, repo, "")
	s := &setup.Setup{Runner: d, Resolver: fencetest.Resolver()}
	want := fencetest.GoModule("")
	req := func(dir string) pullwright.SetupRequest {
		return pullwright.SetupRequest{Repo: repo, Dir: dir, Image: image, ToolchainHosts: true,
			Nets: []netip.Prefix{fencetest.Loopback}, Timeout: 2 * time.Minute}
	}
	spec := func(dir, command string) pullwright.RunSpec {
		return pullwright.RunSpec{Dir: dir, Image: image, Command: command, KeepChanges: true, Timeout: 2 * time.Minute,
			Labels: map[string]string{"pullwright.task": "1"}}
	}
	const get = "GOTOOLCHAIN=local go get github.com/hashicorp/yamux@v0.1.2"

	t.Run("adds the dependency", func(t *testing.T) {
		// The module uses the package and does not require it yet.
		dir := writeFiles(t, map[string]string{"go.mod": "module example.com/app\n\ngo 1.21\n", "main.go": want["main.go"]})
		res, rec, err := s.Fetch(t.Context(), req(dir), spec(dir, get+" && ls \"$GOMODCACHE\"/github.com/hashicorp"))
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 || rec == nil || rec.Failed || served.Load() == 0 {
			t.Fatalf("fetch = exit %d, record %+v (served %d)\n%s", res.ExitCode, rec, served.Load(), res.Output)
		}
		// What it downloaded went to the run's own cache, as setup's does.
		if !strings.Contains(res.Output, "yamux@v0.1.2") {
			t.Errorf("the module cache was not the run's cache:\n%s", res.Output)
		}
		var got []string
		for _, c := range res.Changes {
			got = append(got, c.Path)
			// go get leaves "// indirect" on a requirement it did not
			// see imported (go mod tidy drops it); go.sum is exact.
			ok := string(c.Content) == want[c.Path]
			if c.Path == "go.mod" {
				ok = strings.HasPrefix(string(c.Content), want["go.mod"][:len(want["go.mod"])-1])
			}
			if c.Deleted || c.Refused != "" || !ok {
				t.Errorf("change %s = %+v (%q), want %q", c.Path, c, c.Content, want[c.Path])
			}
		}
		if !slices.Equal(got, []string{"go.mod", "go.sum"}) || res.KeptNote != "" {
			t.Errorf("changes = %q, note %q; want go.mod and go.sum", got, res.KeptNote)
		}
		if !slices.Equal(rec.Steps, []string{get + " && ls \"$GOMODCACHE\"/github.com/hashicorp"}) || rec.ExitCode != 0 {
			t.Errorf("record = %+v, want the command alone", rec)
		}
		if !slices.Equal(rec.Reached, []string{host}) || len(rec.Blocked) != 0 {
			t.Errorf("the fence reached %v and blocked %v, want %s alone", rec.Reached, rec.Blocked, host)
		}
		if v := volumesOf(t, repo); v != "" {
			t.Errorf("volumes left after the fetch: %s", v)
		}
	})

	t.Run("a host off the list", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"go.mod": "module example.com/app\n\ngo 1.21\n", "main.go": want["main.go"]})
		before := served.Load()
		_, port, _ := strings.Cut(host, ":")
		elsewhere := "elsewhere.test:" + port
		res, rec, err := s.Fetch(t.Context(), req(dir), spec(dir, "GOPROXY=http://"+elsewhere+" "+get))
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode == 0 || rec == nil || !rec.Failed || served.Load() != before {
			t.Fatalf("fetch = exit %d, record %+v (served %d more)\n%s", res.ExitCode, rec, served.Load()-before, res.Output)
		}
		if len(res.Changes) != 0 || !strings.Contains(res.KeptNote, "did not exit 0") {
			t.Errorf("changes = %+v, note %q; want nothing kept", res.Changes, res.KeptNote)
		}
		if !slices.Equal(rec.Blocked, []string{elsewhere}) || len(rec.Reached) != 0 {
			t.Errorf("the fence reached %v and blocked %v, want %s blocked", rec.Reached, rec.Blocked, elsewhere)
		}
		if v := volumesOf(t, repo); v != "" {
			t.Errorf("volumes left after the fetch: %s", v)
		}
	})

	t.Run("files the setup cannot be planned from", func(t *testing.T) {
		dir := writeFiles(t, map[string]string{"requirements.txt": "-r ../elsewhere.txt\n"})
		res, rec, err := s.Fetch(t.Context(), req(dir), spec(dir, "echo ran"))
		if err != nil {
			t.Fatal(err)
		}
		if !res.NotStarted || strings.Contains(res.Output, "ran") || !strings.Contains(res.Output, "outside the repository") ||
			rec == nil || !rec.Failed || rec.Output != res.Output {
			t.Errorf("fetch = %+v, record %+v; want nothing run, and why", res, rec)
		}
	})
}

// Fetch keeps what its command changes: a spec that does not ask to is
// refused before anything runs.
func TestFetchRefusesASpecThatKeepsNothing(t *testing.T) {
	_, rec, err := (&setup.Setup{}).Fetch(t.Context(), pullwright.SetupRequest{}, pullwright.RunSpec{Command: "go get x"})
	if !errors.Is(err, setup.ErrFetchKeepsChanges) || rec != nil {
		t.Errorf("Fetch = %+v, %v; want ErrFetchKeepsChanges", rec, err)
	}
}
