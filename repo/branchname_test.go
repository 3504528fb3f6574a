package repo_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/repo"
)

func TestBranchName(t *testing.T) {
	tests := []struct {
		prefix string
		issue  int
		title  string
		want   string
	}{
		{"", 12, "Fix off-by-one in pagination", "agent/12-fix-off-by-one-in-pagination"},
		{"agent/", 12, "Fix off-by-one in pagination", "agent/12-fix-off-by-one-in-pagination"},
		{"bot/", 3, "Add README", "bot/3-add-readme"},
		{"", 7, "", "agent/7"},
		{"", 7, "   ", "agent/7"},
		{"", 7, "!!! ??? ...", "agent/7"},
		{"", 7, "修复分页错误", "agent/7"},
		{"", 7, "🚀🔥", "agent/7"},
		{"", 0, "", "agent/task"},
		{"", -1, "Hello", "agent/hello"},
		{"", 8, "Café crème brûlée: naïve façade", "agent/8-cafe-creme-brulee-naive-facade"},
		{"", 8, "Straße über Ölçek", "agent/8-strasse-uber-olcek"},
		{"", 9, "Don't crash on nil pointer", "agent/9-dont-crash-on-nil-pointer"},
		{"", 9, "feat(api): add /v2/users?limit=10 & paging", "agent/9-feat-api-add-v2-users-limit-10-paging"},
		{"", 10, "--leading and trailing--", "agent/10-leading-and-trailing"},
		{"", 10, "a..b~c^d:e?f*g[h\\i", "agent/10-a-b-c-d-e-f-g-h-i"},
		{"", 10, "refs.lock", "agent/10-refs-lock"},
		{"", 10, "@{upstream}", "agent/10-upstream"},
		{"", 10, "CamelCaseTitle WITH Shouting", "agent/10-camelcasetitle-with-shouting"},
		{"", 10, "tab\tnew\nline\x00nul", "agent/10-tab-new-line-nul"},
		// Long titles are cut at a word boundary, to at most 40 characters.
		{"", 11, "Refactor the pagination helpers so that they handle empty pages and huge offsets", "agent/11-refactor-the-pagination-helpers-so-that"},
		{"", 11, "exactly forty characters long title here", "agent/11-exactly-forty-characters-long-title-here"},
		{"", 11, "exactly forty characters long title hereX more", "agent/11-exactly-forty-characters-long-title"},
		{"", 11, strings.Repeat("a", 100), "agent/11-" + strings.Repeat("a", 40)},
		{"", 11, "a " + strings.Repeat("b", 60), "agent/11-a"},
		// Unusable prefixes fall back to the default.
		{"bad prefix/", 1, "x", "agent/1-x"},
		{"a..b/", 1, "x", "agent/1-x"},
		{"-x/", 1, "x", "agent/1-x"},
		{"0.", 0, "loCk", "agent/lock"}, // "0.lock" is no branch name
		{"agent-", 1, "x", "agent-1-x"},
		{"bot", 1, "x", "bot/1-x"},
		{"team/bot", 1, "x", "team/bot/1-x"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := repo.BranchName(tt.prefix, tt.issue, tt.title)
			if got != tt.want {
				t.Errorf("BranchName(%q, %d, %q) = %q, want %q", tt.prefix, tt.issue, tt.title, got, tt.want)
			}
			slug := strings.TrimPrefix(strings.TrimPrefix(got, "agent/"), "bot/")
			if i := strings.IndexByte(slug, '-'); i >= 0 && len(slug[i+1:]) > 40 {
				t.Errorf("slug %q longer than 40", slug[i+1:])
			}
			if _, err := exec.LookPath("git"); err == nil {
				if out, err := exec.Command("git", "check-ref-format", "--branch", got).CombinedOutput(); err != nil {
					t.Errorf("git check-ref-format --branch %q: %v %s", got, err, out)
				}
			}
		})
	}
}

func FuzzBranchName(f *testing.F) {
	for _, s := range []string{"Fix it", "", "ü..lock", "a/b/c", strings.Repeat("x y ", 30)} {
		f.Add("agent/", 1, s)
	}
	f.Fuzz(func(t *testing.T, prefix string, issue int, title string) {
		got := repo.BranchName(prefix, issue, title)
		if got == "" || strings.HasSuffix(got, "/") || strings.HasSuffix(got, "-") {
			t.Fatalf("BranchName(%q, %d, %q) = %q", prefix, issue, title, got)
		}
		if strings.ContainsAny(got, " ~^:?*[\\\x7f") || strings.Contains(got, "..") || strings.Contains(got, "@{") || strings.HasSuffix(got, ".lock") {
			t.Fatalf("BranchName(%q, %d, %q) = %q: invalid ref", prefix, issue, title, got)
		}
	})
}
