package repo_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestTouched(t *testing.T) {
	s := newServer(t)
	u, base := seed(t, s)
	first := s.Commits(t, owner, name, "main")[3].SHA // the seed commit, below the depth-1 clone
	w := clone(t, u)

	// The bot's own commit: every kind of difference at once.
	write(t, w, map[string]string{
		"pager/pager.go":  "package pager\n\nfunc Last(n, size int) int { return 0 }\n",
		"new/dir/file.go": "package dir\n",
	})
	remove(t, w, "docs/old.txt")
	if err := os.Chmod(filepath.Join(w.Dir(), "z", "last", "file.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	mine, err := w.CommitAll("mine", bot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Touched(first, mine, []string{"README.md"}); err == nil || !strings.Contains(err.Error(), "not in the workspace") {
		t.Errorf("Touched from beyond the shallow boundary = %v, want not in the workspace", err)
	}
	// A person's commit on the server, fetched as a resumed task would.
	person := s.Push(t, owner, name, "main", map[string]string{"README.md": "# widgets\nby a person\n", "docs/old.txt": ""}, "Person")
	if err := w.Fetch(ctxT(t), token, person); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		from, to string
		paths    []string
		want     []string
	}{
		{name: "unchanged", from: base, to: mine, paths: []string{"README.md", "docs/keep.md", "data/blob.bin", "cmd"}},
		{name: "modified", from: base, to: mine, paths: []string{"README.md", "pager/pager.go"}, want: []string{"pager/pager.go"}},
		{name: "added", from: base, to: mine, paths: []string{"new/dir/file.go"}, want: []string{"new/dir/file.go"}},
		{name: "deleted", from: base, to: mine, paths: []string{"docs/old.txt"}, want: []string{"docs/old.txt"}},
		{name: "mode only", from: base, to: mine, paths: []string{"z/last/file.txt"}, want: []string{"z/last/file.txt"}},
		{name: "backwards", from: mine, to: base, paths: []string{"new/dir/file.go", "docs/old.txt", "docs/keep.md"}, want: []string{"new/dir/file.go", "docs/old.txt"}},
		{name: "directory", from: base, to: mine, paths: []string{"docs", "new", "pager", "z/last", "cmd"}, want: []string{"docs", "new", "pager", "z/last"}},
		{name: "in neither", from: base, to: mine, paths: []string{"nope.txt", "nope/deeper.txt", "README.md/under-a-file"}},
		{name: "order kept, repeats dropped", from: base, to: mine, paths: []string{"./pager//pager.go", "docs/old.txt", "pager/pager.go", "docs/keep.md", "docs/old.txt"}, want: []string{"pager/pager.go", "docs/old.txt"}},
		{name: "same commit", from: mine, to: mine, paths: []string{"pager/pager.go"}},
		{name: "no paths", from: base, to: mine},
		{name: "person touched one of ours", from: base, to: person, paths: []string{"pager/pager.go", "docs/old.txt", "new/dir/file.go"}, want: []string{"docs/old.txt"}},
		{name: "person touched none of ours", from: base, to: person, paths: []string{"pager/pager.go", "z/last/file.txt"}},
		{name: "person's own file", from: base, to: person, paths: []string{"README.md"}, want: []string{"README.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.Touched(tt.from, tt.to, tt.paths)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 0 || len(tt.want) != 0 {
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Touched = %q, want %q", got, tt.want)
				}
			}
		})
	}

	for _, tt := range []struct {
		name, from, to string
		paths          []string
		want           string
	}{
		{name: "from missing", from: strings.Repeat("ab", 20), to: mine, paths: []string{"README.md"}, want: "not in the workspace"},
		{name: "to missing", from: base, to: strings.Repeat("cd", 20), paths: []string{"README.md"}, want: "not in the workspace"},
		{name: "not a SHA", from: "main", to: mine, want: "not a full"},
		{name: "short SHA", from: base[:12], to: mine, want: "not a full"},
		{name: "upper-case SHA", from: strings.ToUpper(base), to: mine, want: "not a full"},
		{name: "parent path", from: base, to: mine, paths: []string{"../x"}, want: "invalid path"},
		{name: "absolute path", from: base, to: mine, paths: []string{"/README.md"}, want: "invalid path"},
		{name: "empty path", from: base, to: mine, paths: []string{""}, want: "invalid path"},
		{name: "root", from: base, to: mine, paths: []string{"."}, want: "invalid path"},
	} {
		t.Run("error/"+tt.name, func(t *testing.T) {
			got, err := w.Touched(tt.from, tt.to, tt.paths)
			if err == nil {
				t.Fatalf("Touched = %q, want an error", got)
			}
			t.Logf("error: %v", err)
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "touched") {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}
