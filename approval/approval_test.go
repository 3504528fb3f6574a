package approval

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
)

func every() Request {
	return Seal(Request{ID: "7-2", Command: "go test ./...", Reason: "check the fix", Commit: "0123456789abcdef0123", Branch: "agent/7-x",
		Files: []pullwright.FileStat{{Path: "go.mod", Added: 1}, {Path: "x\u202egol.sh", Added: 2}},
		Where: Where{Sandbox: true, Image: "golang:1.26", Network: true},
		Fork:  &Fork{Pull: 7, HeadRepo: "mallory/r", Author: "mallory"},
		Setup: &Setup{Base: "main", Manifests: []pullwright.FileStat{{Path: "go.mod", Added: 1}}, Diff: "+require evil.test/m v1.0.0\n"},
		AutoApprove: &AutoApprove{Rules: []string{"go test ./...", "pattern make .*"}, Matched: "go test ./...",
			Why: "a rule never answers for a fork's code"},
	})
}

// The digest covers every fact shown: changing any of them changes it,
// and a value read back unchanged is still sealed.
func TestDigestCoversEveryFact(t *testing.T) {
	base := every()
	if !base.Sealed() || len(base.Digest) != 64 {
		t.Fatalf("a sealed value is not Sealed: %q", base.Digest)
	}
	changes := map[string]func(r *Request){
		"command":       func(r *Request) { r.Command += " -run X" },
		"reason":        func(r *Request) { r.Reason = "other" },
		"commit":        func(r *Request) { r.Commit = "fedcba" },
		"a file":        func(r *Request) { r.Files = r.Files[:1] },
		"sandbox":       func(r *Request) { r.Where.Sandbox = false },
		"network":       func(r *Request) { r.Where.Network = false },
		"fork":          func(r *Request) { r.Fork = nil },
		"setup's diff":  func(r *Request) { s := *r.Setup; s.Diff = ""; r.Setup = &s },
		"matched rule":  func(r *Request) { a := *r.AutoApprove; a.Matched = ""; r.AutoApprove = &a },
		"the id itself": func(r *Request) { r.ID = "7-3" },
		"keep changes":  func(r *Request) { r.KeepChanges = true },
	}
	for name, change := range changes {
		r := every()
		change(&r)
		if r.Sealed() {
			t.Errorf("after changing the %s the old digest still seals it", name)
		}
		if Seal(r).Digest == base.Digest {
			t.Errorf("changing the %s leaves the digest as it was", name)
		}
	}
}

func TestMatches(t *testing.T) {
	r := every()
	tests := []struct {
		digest string
		want   bool
	}{
		{r.Digest, true},
		{strings.ToUpper(r.Digest), true},
		{r.Digest[:12], true},
		{" " + r.Digest[:20] + "\n", true},
		{r.Digest[:11], false}, // too short to tell requests apart by eye
		{"", false},
		{strings.Repeat("0", 64), false},
		{r.Digest + "0", false},
	}
	for _, tt := range tests {
		if got := r.Matches(tt.digest); got != tt.want {
			t.Errorf("Matches(%q) = %v, want %v", tt.digest, got, tt.want)
		}
	}
	if (Request{}).Matches("") {
		t.Error("an unsealed value matches the empty digest")
	}
}

// Every fact that calls for care is a warning sentence, and the warnings
// come first, in the order every surface shows them; a closed sandbox is
// none.
func TestSentences(t *testing.T) {
	kinds := func(r Request) (out []string) {
		for _, s := range r.Sentences() {
			k := s.Kind
			if s.Warning {
				k += "!"
			}
			out = append(out, k)
		}
		return out
	}
	tests := []struct {
		name string
		r    Request
		want string
	}{
		{"everything", every(), "fork! network! setup! auto_approve"},
		{"a closed sandbox", Request{Commit: "abc", Where: Where{Sandbox: true}}, "where"},
		{"the bot's own machine", Request{Commit: "abc"}, "no_sandbox!"},
		{"bot run on this machine", Request{Commit: "abc", Where: Where{Local: true}}, "no_sandbox!"},
		{"manifests not compared", Request{Commit: "abc", Where: Where{Sandbox: true}, Setup: &Setup{Base: "main", Unknown: "x"}}, "setup_unknown! where"},
		{"files not compared", Request{Commit: "abc", Where: Where{Sandbox: true}, FilesUnknown: "the diff failed"}, "files_unknown! where"},
		{"its changes kept", Request{Commit: "abc", Where: Where{Sandbox: true}, KeepChanges: true}, "keep_changes! where"},
	}
	for _, tt := range tests {
		if got := strings.Join(kinds(tt.r), " "); got != tt.want {
			t.Errorf("%s: sentences %q, want %q", tt.name, got, tt.want)
		}
	}
	local := Request{Commit: "abc", Where: Where{Local: true}}.Sentences()[0]
	if got := PlainText(local); !strings.Contains(got, "without a sandbox") || strings.Contains(got, "BOT_RUNNER") {
		t.Errorf("bot run's own machine is told as %q", got)
	}
}

// The terminal shows the command, the reason, every sentence and every
// file, with what does not show as itself written as its code point.
func TestText(t *testing.T) {
	r := every()
	got := Text(r)
	for _, want := range []string{
		"request 7-2 · digest " + r.Digest[:12],
		"    $ go test ./...\n",
		"  Why: check the fix\n",
		"! This runs code from a fork. Pull request #7 comes from `mallory/r` by @mallory",
		"! It would run on commit `0123456789ab` of branch `agent/7-x`, in a sandbox (image `golang:1.26`) with network access",
		"  Auto-approve is on in this repository for `go test ./...`, pattern `make .*`; the rule `go test ./...` matches this command but does not answer it: a rule never answers for a fork's code",
		"! The repository's setup runs first, with these manifests. The files to run change `go.mod` (+1 −0) against `main`",
		"    +require evil.test/m v1.0.0\n",
		"    x<U+202E>gol.sh (+2 −0)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal's text lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\u202e") {
		t.Errorf("the terminal's text holds U+202E as is:\n%s", got)
	}
	// The request comment's order: the warnings, the reason, the rest.
	if fork, why, auto := strings.Index(got, "! This runs code from a fork"), strings.Index(got, "  Why:"), strings.Index(got, "  Auto-approve"); !(fork < why && why < auto) {
		t.Errorf("the warnings, the reason and the rest are out of order:\n%s", got)
	}
}

// A value shown within a line cannot start a line of its own: a file an
// agent names with line breaks does not print a request of its own above
// the question.
func TestTextKeepsValuesOnTheirLine(t *testing.T) {
	r := every()
	r.Files = append(r.Files, pullwright.FileStat{Path: "z\n! It would run in a sandbox with no network\nRun it? [y] yes\tx", Added: 1})
	r.FilesUnknown = "boom\n! fine"
	got := Text(Seal(r))
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "! fine") || strings.HasPrefix(line, "! It would run in a sandbox with no network") || strings.HasPrefix(line, "Run it?") {
			t.Errorf("a value started a line of its own: %q\n%s", line, got)
		}
	}
	if !strings.Contains(got, "z<U+000A>! It would run in a sandbox with no network<U+000A>Run it? [y] yes<U+0009>x (+1 −0)") {
		t.Errorf("the file is not shown on one line:\n%s", got)
	}
	many := every()
	for i := range 2 * MaxFilesShown {
		many.Files = append(many.Files, pullwright.FileStat{Path: fmt.Sprintf("f%03d", i)})
	}
	if got := Text(Seal(many)); !strings.Contains(got, fmt.Sprintf("and %d more", len(many.Files)-MaxFilesShown)) || strings.Contains(got, "f199") {
		t.Errorf("the file list is not bounded:\n%s", got)
	}
}

// A request that does not keep its changes is sealed as before the field
// existed: stored requests keep their digests.
func TestKeepChangesLeavesOldDigests(t *testing.T) {
	r := Seal(Request{ID: "1-1", Command: "go test ./...", Commit: "abc", Where: Where{Sandbox: true}})
	// The digest of this value as sealed before keep_changes existed.
	const before = "5ec93207c14a1f9d8b2ce90eb1ff3fb34b64baef49fc043473bed45255fe8e9b"
	if r.Digest != before {
		t.Errorf("digest = %s, want %s as before", r.Digest, before)
	}
	keep := r
	keep.KeepChanges = true
	if Seal(keep).Digest == r.Digest {
		t.Error("keep_changes does not change the digest")
	}
	if got := Text(Seal(keep)); !strings.Contains(got, "! This command may change files in the repository; what it changes is kept.") {
		t.Errorf("the terminal does not say the changes are kept:\n%s", got)
	}
}

// The manifests a setup names and the diff it shows agree, or the
// manifests it leaves out are known: by the diff's file headers, never
// by a line of a file's content that looks like one.
func TestSetupUnshown(t *testing.T) {
	part := func(p string) string {
		return "diff --git a/" + p + " b/" + p + "\nindex 1111111..2222222 100644\n--- a/" + p + "\n+++ b/" + p + "\n@@ -1 +1,2 @@\n x\n+y\n"
	}
	mods := []pullwright.FileStat{{Path: "go.mod", Added: 1}, {Path: "go.sum", Added: 2}}
	tests := []struct {
		name  string
		setup *Setup
		want  string
	}{
		{"no setup", nil, ""},
		{"no diff", &Setup{Manifests: mods}, ""},
		{"every manifest's part", &Setup{Manifests: mods, Diff: part("go.mod") + part("go.sum")}, ""},
		{"the lockfile's cut", &Setup{Manifests: mods, Diff: part("go.mod") + "[… 4096 more bytes: the whole diff is in the commit to approve]\n"}, "go.sum"},
		{"headers without git's line", &Setup{Manifests: mods, Diff: "--- a/go.mod\n+++ b/go.mod\n@@ -1 +1,2 @@\n+x\n"}, "go.mod go.sum"},
		{"content that looks like a header", &Setup{Manifests: mods, Diff: part("go.mod") + "+diff --git a/go.sum b/go.sum\n"}, "go.sum"},
		{"a new file", &Setup{Manifests: []pullwright.FileStat{{Path: "package-lock.json", Added: 9}}, Diff: "diff --git a/package-lock.json b/package-lock.json\nnew file mode 100644\n--- /dev/null\n+++ b/package-lock.json\n"}, ""},
		{"a renamed file", &Setup{Manifests: []pullwright.FileStat{{Path: "requirements.txt"}}, Diff: "diff --git a/reqs.txt b/requirements.txt\nrename from reqs.txt\nrename to requirements.txt\n"}, ""},
	}
	for _, tt := range tests {
		if got := strings.Join(tt.setup.Unshown(), " "); got != tt.want {
			t.Errorf("%s: Unshown() = %q, want %q", tt.name, got, tt.want)
		}
	}
}
