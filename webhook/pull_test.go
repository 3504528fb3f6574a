package webhook

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
)

// Commands on pull requests arrive two ways: in the conversation, as an
// issue_comment whose issue is a pull request (onPR), and in a review (line)
// comment on the diff, as pull_request_review_comment. Both payloads are
// GitHub's own (testdata), with the comment body set per case.

const (
	reviewEvent = "pull_request_review_comment"
	reviewFile  = "pull_request_review_comment.created.json"
	reviewBody  = "Maybe you should use more emoji on this line."
)

// helloWorld is the repository of the Codertocat payloads, as a task keeps it.
var helloWorld = pullwright.Repo{InstallationID: 1, Owner: "Codertocat", Name: "Hello-World", CloneURL: "https://github.com/Codertocat/Hello-World.git", DefaultBranch: "master", ID: 186853002}

// reviewTask is what reviewFile, with the comment body set to body, asks
// for, but for the kind and what follows from it.
func reviewTask(body string) task.Task {
	return task.Task{
		State:      task.Queued,
		Repo:       helloWorld,
		Issue:      2,
		IsPR:       true,
		Requester:  task.Person{Login: "Codertocat", ID: 21031067},
		IssueTitle: "Update the README with new information.",
		Review: &task.ReviewRef{
			CommentID: 284312630,
			Path:      "README.md",
			Line:      265,
			Side:      "RIGHT",
			DiffHunk:  "@@ -1 +1 @@\n-# Hello-World",
			CommitID:  "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
			Body:      body,
			URL:       "https://github.com/Codertocat/Hello-World/pull/2#discussion_r284312630",
		},
		// The comment's created_at in the payload.
		AskedAt:   time.Date(2019, 5, 15, 15, 20, 37, 0, time.UTC),
		CreatedAt: testNow,
		RunAfter:  testNow,
	}
}

// conversationTask is the same for issue_comment.created.json made a pull
// request by onPR.
func conversationTask() task.Task {
	return task.Task{
		State:      task.Queued,
		Repo:       helloWorld,
		Issue:      1,
		IsPR:       true,
		CommentID:  492700400,
		Requester:  task.Person{Login: "Codertocat", ID: 21031067},
		IssueTitle: "Spelling error in the README file",
		AskedAt:    time.Date(2019, 5, 15, 15, 20, 21, 0, time.UTC),
		CreatedAt:  testNow,
		RunAfter:   testNow,
	}
}

func TestPullRequestComments(t *testing.T) {
	fix := func(instructions string) func(*task.Task) {
		return func(w *task.Task) { w.Kind, w.Instructions = task.KindFix, instructions }
	}
	kind := func(k task.Kind) func(*task.Task) { return func(w *task.Task) { w.Kind = k } }
	review := func(edit func(*task.ReviewRef)) func(*task.Task) {
		return func(w *task.Task) { edit(w.Review) }
	}
	comment := func(key string, v any) func(map[string]any) {
		return func(m map[string]any) { obj(m, "comment")[key] = v }
	}
	pull := func(key string, v any) func(map[string]any) {
		return func(m map[string]any) { obj(m, "pull_request")[key] = v }
	}
	issue := func(key string, v any) func(map[string]any) {
		return func(m map[string]any) { obj(m, "issue")[key] = v }
	}
	both := func(edits ...func(*task.Task)) func(*task.Task) {
		return func(w *task.Task) {
			for _, e := range edits {
				e(w)
			}
		}
	}
	const conversation = "issue_comment"

	tests := []struct {
		name  string
		cfg   func(*Config)
		event string // reviewEvent when empty
		body  string // the comment's
		edits []func(map[string]any)
		// wantStatus is 202 when want is set, 200 otherwise.
		wantStatus  int
		wantOutcome string
		wantAction  string // "created" when empty
		noNumber    bool   // the log names no issue or pull request
		// want edits the expected task of the event; nil: no task.
		want      func(*task.Task)
		wantReply string // in the reply task's Reply
	}{
		// Review comments that ask for work.
		{name: "fix with instructions", body: "/agent fix use more emoji\non this line", wantOutcome: "fix", want: fix("use more emoji\non this line")},
		{name: "bare instructions", body: "Agreed.\n/agent use more emoji", wantOutcome: "fix", want: fix("use more emoji")},
		{name: "empty fix addresses the comment", body: "/agent fix", wantOutcome: "fix", want: fix("")},
		{name: "empty fix on a pull request without description", body: "/agent fix", edits: []func(map[string]any){pull("body", nil)}, wantOutcome: "fix", want: fix("")},
		{name: "reply in a thread", body: "/agent fix", edits: []func(map[string]any){comment("in_reply_to_id", 284312000)}, wantOutcome: "fix",
			want: both(fix(""), review(func(r *task.ReviewRef) { r.InReplyTo = 284312000 }))},
		{name: "comment on several lines", body: "/agent fix", edits: []func(map[string]any){comment("start_line", 260), comment("start_side", "RIGHT")}, wantOutcome: "fix",
			want: both(fix(""), review(func(r *task.ReviewRef) { r.StartLine = 260 }))},
		{name: "outdated comment without a line", body: "/agent fix", edits: []func(map[string]any){comment("line", nil)}, wantOutcome: "fix",
			want: both(fix(""), review(func(r *task.ReviewRef) { r.Line = 0 }))},
		{name: "custom command word", cfg: func(c *Config) { c.Command = "/bot" }, body: "/bot fix it", wantOutcome: "fix", want: fix("it")},
		{name: "listed bot", cfg: func(c *Config) { c.AllowedBots = []string{"renovate[bot]"} }, body: "/agent fix it", edits: []func(map[string]any){by("renovate[bot]", "Bot")}, wantOutcome: "fix",
			want: both(fix("it"), func(w *task.Task) { w.Requester.Login = "renovate[bot]" })},
		{name: "no installation with one token", cfg: func(c *Config) { c.OneToken = true }, body: "/agent fix it", edits: []func(map[string]any){func(m map[string]any) { delete(m, "installation") }}, wantOutcome: "fix",
			want: both(fix("it"), func(w *task.Task) { w.Repo.InstallationID = 0 })},

		// Every other verb works as in an issue comment; replies go to the thread.
		{name: "help", body: "/agent help", wantOutcome: "help", want: kind(task.KindReply), wantReply: Usage("/agent")},
		{name: "word alone", body: "/agent", wantOutcome: "reply", want: kind(task.KindReply), wantReply: Usage("/agent")},
		{name: "status", body: "/agent status", wantOutcome: "status", want: kind(task.KindStatus)},
		{name: "cancel", body: "/agent cancel", wantOutcome: "cancel", want: kind(task.KindCancel)},
		{name: "approve", body: "/approve 12-1", wantOutcome: "approve", want: func(w *task.Task) { w.Kind, w.Answering.RequestID = task.KindApprove, "12-1" }},
		{name: "reject", body: "/reject no network", wantOutcome: "reject", want: func(w *task.Task) { w.Kind, w.Instructions = task.KindReject, "no network" }},
		{name: "locked pull request", body: "/agent fix it", edits: []func(map[string]any){pull("locked", true)}, wantOutcome: "locked", want: kind(task.KindReply), wantReply: "locked"},
		{name: "cancel on a locked pull request", body: "/agent cancel", edits: []func(map[string]any){pull("locked", true)}, wantOutcome: "cancel", want: kind(task.KindCancel)},

		// Review comments recorded and left alone.
		{name: "no command", body: reviewBody, wantOutcome: "no_command"},
		{name: "edited", body: "/agent fix it", edits: []func(map[string]any){func(m map[string]any) { m["action"] = "edited" }}, wantOutcome: "review_comment_not_created", wantAction: "edited"},
		{name: "deleted", body: "/agent fix it", edits: []func(map[string]any){func(m map[string]any) { m["action"] = "deleted" }}, wantOutcome: "review_comment_not_created", wantAction: "deleted"},
		{name: "without the pull request", body: "/agent fix it", edits: []func(map[string]any){func(m map[string]any) { delete(m, "pull_request") }}, wantOutcome: "review_comment_incomplete", noNumber: true},
		{name: "without a sender", body: "/agent fix it", edits: []func(map[string]any){func(m map[string]any) { delete(m, "sender") }}, wantOutcome: "review_comment_incomplete"},
		{name: "by the bot", body: "/agent fix it", edits: []func(map[string]any){by(botLogin, "Bot")}, wantOutcome: "comment_by_self"},
		{name: "by the bot typed as a user", body: "/agent fix it", edits: []func(map[string]any){author("Codertocat", "User", botLogin, "User")}, wantOutcome: "comment_by_self"},
		{name: "posted through the app with a person's token", body: "/agent fix it",
			edits: []func(map[string]any){comment("performed_via_github_app", map[string]any{"id": 1, "slug": "pullwright", "name": "Pullwright"})}, wantOutcome: "comment_by_self"},
		{name: "marker", body: "<!-- pullwright:task=1 step=2 -->\n/agent fix it", wantOutcome: "comment_has_marker"},
		{name: "unlisted bot", cfg: func(c *Config) { c.AllowedBots = []string{"renovate[bot]"} }, body: "/agent fix it", edits: []func(map[string]any){by("dependabot[bot]", "Bot")}, wantOutcome: "comment_by_bot"},
		{name: "no installation", body: "/agent fix it", edits: []func(map[string]any){func(m map[string]any) { delete(m, "installation") }}, wantOutcome: "no_installation"},
		{name: "not served", cfg: func(c *Config) { c.Serves = func(int64, string) bool { return false } }, body: "/agent fix it", wantOutcome: "not_served"},
		{name: "wrong field type", body: "/agent fix it", edits: []func(map[string]any){pull("number", "two")}, wantStatus: http.StatusBadRequest},

		// The conversation of a pull request.
		{name: "conversation: fix", event: conversation, body: "/agent fix the typo", edits: []func(map[string]any){onPR}, wantOutcome: "fix", want: fix("the typo")},
		{name: "conversation: empty fix addresses the review comments", event: conversation, body: "/agent fix", edits: []func(map[string]any){onPR}, wantOutcome: "fix", want: fix("")},
		{name: "conversation: empty fix without description", event: conversation, body: "/agent fix", edits: []func(map[string]any){onPR, issue("body", nil)}, wantOutcome: "fix", want: fix("")},
		{name: "conversation: locked", event: conversation, body: "/agent fix", edits: []func(map[string]any){onPR, issue("locked", true)}, wantOutcome: "locked", want: kind(task.KindReply), wantReply: "locked"},
		{name: "conversation: review", event: conversation, body: "/agent review the parser", edits: []func(map[string]any){onPR}, wantOutcome: "review",
			want: func(w *task.Task) { w.Kind, w.Instructions = task.KindReview, "the parser" }},
		{name: "conversation: review locked", event: conversation, body: "/agent review", edits: []func(map[string]any){onPR, issue("locked", true)}, wantOutcome: "locked", want: kind(task.KindReply), wantReply: "locked"},
		{name: "issue: review is for pull requests", event: conversation, body: "/agent review", wantOutcome: "review_not_on_pull",
			want: both(kind(task.KindReply), func(w *task.Task) { w.IsPR = false }), wantReply: "works on a pull request"},
		// A plain issue is unchanged: an empty fix needs its description.
		{name: "issue: empty fix without description", event: conversation, body: "/agent fix", edits: []func(map[string]any){issue("body", nil)}, wantOutcome: "fix_without_instructions",
			want: both(kind(task.KindReply), func(w *task.Task) { w.IsPR = false }), wantReply: "What should I fix?"},
		{name: "issue: empty fix with description", event: conversation, body: "/agent fix", wantOutcome: "fix",
			want: both(fix(""), func(w *task.Task) { w.IsPR = false })},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event, file, want, number := reviewEvent, reviewFile, reviewTask(tt.body), 2.0
			if tt.event == conversation {
				event, file, want, number = conversation, "issue_comment.created.json", conversationTask(), 1.0
			}
			if tt.noNumber {
				number = 0
			}
			rec := newFakeRecorder()
			h, logs := newHandler(t, rec, tt.cfg)
			d := delivery{event: event, id: fmt.Sprint("pr-", i), body: variant(t, file, then(append([]func(map[string]any){commentBody(tt.body)}, tt.edits...)...))}
			w := serve(h, d)

			wantStatus := tt.wantStatus
			if wantStatus == 0 {
				wantStatus = http.StatusOK
				if tt.want != nil {
					wantStatus = http.StatusAccepted
				}
			}
			if w.Code != wantStatus {
				t.Fatalf("status %d, want %d (%s)", w.Code, wantStatus, w.Body)
			}
			deliveries, tasks := rec.snapshot()
			if wantStatus == http.StatusBadRequest {
				if len(deliveries)+len(tasks) != 0 {
					t.Fatalf("a bad payload was recorded: %v %v", deliveries, tasks)
				}
				return
			}

			line := logLine(t, logs)
			if line["outcome"] != tt.wantOutcome || line["issue"] != number {
				t.Errorf("logged outcome %v, issue %v; want %s, %v", line["outcome"], line["issue"], tt.wantOutcome, number)
			}
			if !outcomes[tt.wantOutcome] {
				// Config.Observe would see "other".
				t.Errorf("outcome %q is not in outcomes", tt.wantOutcome)
			}
			// Ignored or not, the delivery is recorded, so that a redelivery
			// is known.
			action := tt.wantAction
			if action == "" {
				action = "created"
			}
			if got, want := deliveries[d.id], (task.Delivery{ID: d.id, Event: event, Action: action, ReceivedAt: testNow}); len(deliveries) != 1 || got != want {
				t.Errorf("deliveries %+v, want only %+v", deliveries, want)
			}

			if tt.want == nil {
				if len(tasks) != 0 {
					t.Fatalf("got task %+v, want none", tasks[0])
				}
				return
			}
			if len(tasks) != 1 {
				t.Fatalf("got %d tasks, want 1", len(tasks))
			}
			got := tasks[0]
			tt.want(&want)
			want.ID, want.DeliveryID = got.ID, d.id
			if tt.wantReply != "" {
				if !strings.Contains(got.Reply, tt.wantReply) {
					t.Errorf("reply %q does not contain %q", got.Reply, tt.wantReply)
				}
				want.Reply = got.Reply
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("task\n %+v\nwant\n %+v", got, want)
				if got.Review != nil && want.Review != nil {
					t.Errorf("review\n %+v\nwant\n %+v", *got.Review, *want.Review)
				}
			}
		})
	}
}
