package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A commit that changes go.sum, with a Tidy: the edits of go.mod, then a
// run of the command with keep_changes, then write_file of what the run
// left other than the commit's (none when it left the commit's), then
// finish.
func TestScriptTidy(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		out, err := Git(repo, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
			"-c", "commit.gpgsign=false"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(p, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	write("go.mod", "module m\n\nrequire a v1\n")
	write("go.sum", "a v1 h1:a=\n")
	git("add", "-A")
	git("commit", "-q", "-m", "root")
	parent := git("rev-parse", "HEAD")
	const mod, sum = "module m\n\nrequire a v2\n", "a v2 h1:a=\n"
	write("go.mod", mod)
	write("go.sum", sum)
	git("commit", "-q", "-am", "a v2")
	commit := git("rev-parse", "HEAD")
	blobs, err := NewBlobs(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()

	const failed = "exit code 1 after 1s\nNothing the command changed was kept: the command did not exit 0, so nothing it changed is kept.\n" +
		"<untrusted-output>\ngo: downloading a v2\ngo: a@v2: module lookup disabled by GOPROXY=off\n</untrusted-output>"
	const kept = "exit code 0 after 1s\nKept what the command changed, now part of your change (1 files):\n- go.sum changed (+1 -1)\n" +
		"<untrusted-output>\n(no output)\n</untrusted-output>"
	for _, tc := range []struct {
		name, result string
		look         map[string]string // the workspace after the run
		tidied, note string
		fallback     []string // the calls after the run
	}{
		{"exact", kept, map[string]string{"go.mod": mod, "go.sum": sum}, TidyExact, "", nil},
		{"failed", failed, map[string]string{"go.mod": mod, "go.sum": "a v1 h1:a=\n"}, TidyFailed,
			"go: a@v2: module lookup disabled by GOPROXY=off", []string{`write_file go.sum`}},
		{"differed", kept, map[string]string{"go.mod": "module m\n", "go.sum": sum + "b v1 h1:b=\n"}, TidyDiffered,
			"go.mod and go.sum differed", []string{`write_file go.mod`, `write_file go.sum`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(repo, blobs, parent, commit, "a v2")
			if err != nil {
				t.Fatal(err)
			}
			s.Tidy = &Tidy{Command: "go mod tidy", Reason: "go.mod changed", Look: func(p string) ([]byte, bool, error) {
				c, ok := tc.look[p]
				return []byte(c), ok, nil
			}}
			var answers [][]Call
			results := []string(nil)
			for range 10 {
				calls, err := s.Next(results)
				if err != nil {
					t.Fatal(err)
				}
				if len(calls) == 0 {
					break
				}
				answers = append(answers, calls)
				results = nil
				for _, c := range calls {
					switch c.Name {
					case Run:
						results = append(results, tc.result)
					case ReadFile:
						results = append(results, "1\tmodule m\n2\t\n3\trequire a v1\n[lines 1-3 of 3]")
					default:
						results = append(results, "ok")
					}
				}
			}
			var names []string
			for _, a := range answers {
				var n []string
				for _, c := range a {
					var v map[string]any
					if err := json.Unmarshal([]byte(c.Args), &v); err != nil {
						t.Fatal(err)
					}
					if p, ok := v["path"].(string); ok {
						n = append(n, c.Name+" "+p)
					} else {
						n = append(n, c.Name)
					}
					if c.Name == Run && (v["command"] != "go mod tidy" || v["keep_changes"] != true || v["reason"] != "go.mod changed") {
						t.Errorf("run %s", c.Args)
					}
					// What the fallback writes is the commit's.
					if c.Name == WriteFile && v["content"] != map[string]string{"go.mod": mod, "go.sum": sum}[v["path"].(string)] {
						t.Errorf("write_file %s", c.Args)
					}
				}
				names = append(names, strings.Join(n, ", "))
			}
			want := []string{"read_file go.mod", "edit_file go.mod", "run"}
			if len(tc.fallback) > 0 {
				want = append(want, strings.Join(tc.fallback, ", "))
			}
			want = append(want, "finish")
			if strings.Join(names, " | ") != strings.Join(want, " | ") {
				t.Errorf("answers:\n got %q\nwant %q", names, want)
			}
			if s.Tidied != tc.tidied || s.TidyNote != tc.note || !s.NeedsKept {
				t.Errorf("tidied %q (%q), needs kept %v; want %q (%q)", s.Tidied, s.TidyNote, s.NeedsKept, tc.tidied, tc.note)
			}
		})
	}
}
