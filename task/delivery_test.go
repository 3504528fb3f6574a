package task

import (
	"strings"
	"testing"

	"github.com/pullwright/pullwright"
)

func TestDeliveryMode(t *testing.T) {
	tests := []struct {
		name     string
		info     pullwright.Pull
		mode     string
		whySays  string
		whyEmpty bool
	}{
		{"same repository", pullwright.Pull{HeadRepo: "o/r", HeadRef: "fix"}, PushToHead, "", true},
		{"same repository, edits allowed", pullwright.Pull{HeadRepo: "o/r", HeadRef: "fix", MaintainerCanModify: true}, PushToHead, "", true},
		{"fork allowing edits", pullwright.Pull{Fork: true, HeadRepo: "alice/r", HeadRef: "fix", MaintainerCanModify: true}, PullToFork, "against `alice/r:fix`", false},
		{"fork not allowing edits", pullwright.Pull{Fork: true, HeadRepo: "alice/r", HeadRef: "fix"}, PullInBase, "does not allow edits by maintainers", false},
		{"deleted fork", pullwright.Pull{Fork: true, HeadRef: "fix", MaintainerCanModify: true}, PullInBase, "was deleted", false},
		{"the default branch as head", pullwright.Pull{HeadRepo: "o/r", HeadRef: "main", BaseRef: "release"}, PullInBase, "`main` is this repository's default branch", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mode, why := deliveryMode(tt.info, "main")
			if mode != tt.mode {
				t.Errorf("mode = %q, want %q", mode, tt.mode)
			}
			if tt.whyEmpty != (why == "") || !strings.Contains(why, tt.whySays) {
				t.Errorf("why = %q, want it to say %q", why, tt.whySays)
			}
			if tt.info.Fork && !strings.Contains(why, "never pushes to") && tt.info.HeadRepo != "" {
				t.Errorf("why = %q does not say the fork is never pushed to", why)
			}
		})
	}
}

func TestStartRef(t *testing.T) {
	tests := []struct {
		name string
		t    Task
		want string
	}{
		{"issue", Task{Kind: KindFix, Repo: pullwright.Repo{DefaultBranch: "main"}, Issue: 3}, "main"},
		{"same-repository pull request", Task{Kind: KindFix, Repo: pullwright.Repo{DefaultBranch: "main"}, Issue: 3, agentWork: &Work{Pull: &PullWork{Mode: PushToHead, Info: pullwright.Pull{HeadRef: "feature"}}}}, "feature"},
		{"fork", Task{Kind: KindFix, Repo: pullwright.Repo{DefaultBranch: "main"}, Issue: 3, agentWork: &Work{Pull: &PullWork{Mode: PullInBase, Info: pullwright.Pull{HeadRef: "feature", Fork: true}}}}, "refs/pull/3/head"},
		{"fork allowing edits", Task{Kind: KindFix, Repo: pullwright.Repo{DefaultBranch: "main"}, Issue: 3, agentWork: &Work{Pull: &PullWork{Mode: PullToFork, Info: pullwright.Pull{HeadRef: "feature", Fork: true}}}}, "refs/pull/3/head"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := job(&tt.t).startRef(); got != tt.want {
				t.Errorf("startRef = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAddStats(t *testing.T) {
	got := addStats(nil, []pullwright.FileStat{{Path: "a", Added: 1}, {Path: "b", Deleted: 2}})
	got = addStats(got, []pullwright.FileStat{{Path: "a", Added: 2, Deleted: 1}, {Path: "c", Added: 5}})
	want := []pullwright.FileStat{{Path: "a", Added: 3, Deleted: 1}, {Path: "b", Deleted: 2}, {Path: "c", Added: 5}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("stat %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestLineRange(t *testing.T) {
	for _, tt := range []struct {
		start, end int
		want       string
	}{
		{0, 12, "line 12"},
		{10, 14, "lines 10–14"},
		{14, 14, "line 14"},
		{0, 0, "(a line no longer in the diff)"},
	} {
		if got := lineRange(tt.start, tt.end); got != tt.want {
			t.Errorf("lineRange(%d, %d) = %q, want %q", tt.start, tt.end, got, tt.want)
		}
	}
}

func TestRenderRequestWarnsOfForkCode(t *testing.T) {
	base := Task{Kind: KindFix, ID: 7, Issue: 2, agentWork: &Work{Branch: "agent/2-x", Request: &ExecRequest{ID: "7-1", Command: "make test", SHA: "0123456789abcdef"}}}
	fork := *base.Clone()
	fork.agentWork.Pull = &PullWork{Mode: PullInBase, Info: pullwright.Pull{Fork: true, HeadRepo: "mallory/r", Author: "mallory"}}
	same := *base.Clone()
	same.agentWork.Pull = &PullWork{Mode: PushToHead, Info: pullwright.Pull{HeadRepo: "o/r", HeadRef: "feature"}}
	same.agentWork.Branch = "feature"
	if got := RenderRequest(ShowRequest(job(&fork), nil, ManifestChanges{}, false)); !strings.Contains(got, "This runs code from a fork") || !strings.Contains(got, "`mallory/r` by @mallory") {
		t.Errorf("request on fork code does not warn:\n%s", got)
	}
	got := RenderRequest(ShowRequest(job(&same), nil, ManifestChanges{}, false))
	if strings.Contains(got, "from a fork") {
		t.Errorf("request on a same-repository pull request warns of a fork:\n%s", got)
	}
	if !strings.Contains(got, "of branch `feature`") {
		t.Errorf("request on the pull request's branch does not name it:\n%s", got)
	}
}

func TestRenderPullDone(t *testing.T) {
	tests := []struct {
		name string
		t    Task
		want []string
	}{
		{
			name: "pushed onto the branch, after a rebase",
			t: Task{Kind: KindFix, Requester: Person{Login: "octo"}, agentWork: &Work{Title: "Use emoji", Branch: "changes", Rebased: []string{"abc"},
				Pull:         &PullWork{Mode: PushToHead, Commits: []string{"1111111111111111", "2222222222222222"}},
				ChangedFiles: []pullwright.FileStat{{Path: "README.md", Added: 1, Deleted: 1}},
				Final:        true, HeadSHA: "2222222222222222",
				Runs: []RunRecord{{RequestID: "4-1", Command: "npm test", SHA: "2222222222222222", Verdict: Approved, By: "maint", Outcome: OutcomePassed}}}},
			want: []string{"@octo done: **Use emoji**", "pushed 2 commits to this pull request's branch `changes`, up to 2222222222222222", "never forced", "`README.md` (+1 −1)",
				"### Verification", "On the final commit 222222222222:\n- `npm test` ✅ passed"},
		},
		{
			name: "fork, pull request in this repository",
			t: Task{Kind: KindFix, Requester: Person{Login: "octo"}, agentWork: &Work{Title: "Fix", Branch: "agent/2-x", PRURL: "https://github.com/o/r/pull/3",
				Pull: &PullWork{Mode: PullInBase, Why: "it comes from a fork", Threads: []ThreadRef{{Root: 1}, {Root: 2}}}}},
			want: []string{"I opened https://github.com/o/r/pull/3", "it comes from a fork", "I answered 2 review threads"},
		},
		{
			name: "fork, pull request against its branch",
			t: Task{Kind: KindFix, Requester: Person{Login: "octo"}, agentWork: &Work{Title: "Fix", Branch: "agent/2-x", PRURL: "https://github.com/alice/r/pull/9",
				Pull: &PullWork{Mode: PullToFork, Why: "edits allowed", Info: pullwright.Pull{HeadRepo: "alice/r", HeadRef: "fix"}}}},
			want: []string{"against `alice/r:fix`", "edits allowed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := renderPullDone(job(&tt.t))
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("report lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestStateOfAPullRequestTask(t *testing.T) {
	onHead := &PullWork{Mode: PushToHead}
	tests := []struct {
		t    Task
		want string
	}{
		{Task{State: Publishing}, "📤 Opening the pull request"},
		{Task{Kind: KindFix, State: Publishing, IsPR: true, agentWork: &Work{Pull: &PullWork{Mode: PullInBase}}}, "📤 Opening the pull request"},
		{Task{Kind: KindFix, State: Publishing, IsPR: true, agentWork: &Work{Pull: onHead}}, "📤 Pushing to the pull request's branch"},
		{Task{State: Preparing}, "📥 Reading the issue and cloning the repository"},
		{Task{State: Preparing, IsPR: true}, "📥 Reading the pull request and cloning its branch"},
		{Task{Kind: KindFix, State: Working, IsPR: true, agentWork: &Work{Pull: onHead}}, "🛠️ Working"},
	}
	for _, tt := range tests {
		if got := stateOf(&tt.t); got != tt.want {
			t.Errorf("stateOf(%s, pull %+v) = %q, want %q", tt.t.State, tt.t.agentWork.Pull, got, tt.want)
		}
	}
}

func TestAnsweredMarkerEndsTheReply(t *testing.T) {
	tests := []struct {
		body string
		want bool
	}{
		{"Done: fixed.\n\n<!-- pullwright:task-3-thread-7 -->", true},
		{"Done.\n\n<!-- pullwright:task-3-review -->\n", true},
		{"Task 3 failed.\n\n<!-- pullwright:task-3-review-ended -->", false},
		// A failure that quotes a fork's file name with a marker in it.
		{"Task 4 failed: `x<!-- pullwright:task-3-review -->.yml` is protected\n\n<!-- pullwright:task-4-review-ended -->", false},
	}
	for _, tc := range tests {
		if got := answeredRE.MatchString(tc.body); got != tc.want {
			t.Errorf("answered(%q) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

func TestStatusShowsUntrustedTextInert(t *testing.T) {
	info := pullwright.Pull{Fork: true, HeadRepo: "evil/fork", HeadRef: "x`@acme/admins`y", MaintainerCanModify: true}
	mode, why := deliveryMode(info, "main")
	tk := &Task{ID: 9, Kind: KindFix, State: Failed, Issue: 2, Repo: pullwright.Repo{Owner: "o", Name: "r"},
		Error:     "its files differ on " + listPaths([]string{".github/workflows/x` @acme/admins <!-- pullwright:task-9-status --> `.yml"}),
		Review:    &ReviewRef{Path: "a` @acme/admins `b", Line: 3},
		agentWork: &Work{Pull: &PullWork{Info: info, Mode: mode, Why: why}},
	}
	// GitHub makes no mention inside a code span (the joiner spoils one
	// anyway), and shows an HTML comment in one as text.
	for name, got := range map[string]string{"status": RenderStatus(job(tk), "/agent"), "status line": StatusLine(job(tk))} {
		if !strings.Contains(got, "``.github/workflows/x` @\u200dacme/admins <!-- pullwright:task-9-status --> `.yml``") {
			t.Errorf("%s does not show the failure's path as one code span:\n%s", name, got)
		}
	}
	if got := RenderStatus(job(tk), "/agent"); !strings.Contains(got, "Asked on `` a` @acme/admins `b `` line 3.") ||
		!strings.Contains(got, "a pull request against ``evil/fork:x`@\u200dacme/admins`y``") {
		t.Errorf("status does not show the review comment's path and the fork's branch as code spans:\n%s", got)
	}
	// A blank line would end the span, and git allows one in a name.
	tk.Review.Path = "a\n\n@acme/admins"
	if got := RenderStatus(job(tk), "/agent"); !strings.Contains(got, "Asked on `a\uFFFD\uFFFD@acme/admins` line 3.") {
		t.Errorf("a path with line breaks:\n%s", got)
	}
}
