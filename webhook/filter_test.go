package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pullwright/pullwright/task"
)

// logLine decodes the one log line a delivery writes.
func logLine(t *testing.T, logs *bytes.Buffer) map[string]any {
	t.Helper()
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("want exactly one JSON log line: %v\n%s", err, logs)
	}
	return line
}

// author sets who wrote a comment: the sender and the comment's user.
func author(sender, senderType, commentUser, commentUserType string) func(map[string]any) {
	return func(m map[string]any) {
		s := obj(m, "sender")
		s["login"], s["type"] = sender, senderType
		u := obj(obj(m, "comment"), "user")
		u["login"], u["type"] = commentUser, commentUserType
	}
}

// by sets both to the same account, as GitHub does for a comment it did not
// receive through another app.
func by(login, typ string) func(map[string]any) { return author(login, typ, login, typ) }

// TestCommentAuthors covers loop prevention: which authors' comments are read.
func TestCommentAuthors(t *testing.T) {
	const fix = "/agent fix it"
	tests := []struct {
		name        string
		allowed     []string
		botLogin    *string // botLogin when nil
		edit        func(map[string]any)
		wantOutcome string
		wantLogin   string // the requester of the fix task, when one is made
	}{
		{name: "person", edit: commentBody(fix), wantOutcome: "fix", wantLogin: "Codertocat"},
		{name: "unlisted bot", allowed: []string{"renovate[bot]"}, edit: then(commentBody(fix), by("dependabot[bot]", "Bot")), wantOutcome: "comment_by_bot"},
		{name: "no bots listed", edit: then(commentBody(fix), by("renovate[bot]", "Bot")), wantOutcome: "comment_by_bot"},
		{name: "listed bot", allowed: []string{"renovate[bot]"}, edit: then(commentBody(fix), by("renovate[bot]", "Bot")), wantOutcome: "fix", wantLogin: "renovate[bot]"},
		{name: "listed in another case", allowed: []string{" Renovate[Bot] "}, edit: then(commentBody(fix), by("RENOVATE[bot]", "Bot")), wantOutcome: "fix", wantLogin: "RENOVATE[bot]"},
		{name: "listed bot without a command", allowed: []string{"renovate[bot]"}, edit: by("renovate[bot]", "Bot"), wantOutcome: "no_command"},
		{name: "listed sender, unlisted author", allowed: []string{"renovate[bot]"}, edit: then(commentBody(fix), author("renovate[bot]", "Bot", "dependabot[bot]", "Bot")), wantOutcome: "comment_by_bot"},
		{name: "unlisted sender, listed author", allowed: []string{"renovate[bot]"}, edit: then(commentBody(fix), author("dependabot[bot]", "Bot", "renovate[bot]", "Bot")), wantOutcome: "comment_by_bot"},
		{name: "bot login typed as a user", edit: then(commentBody(fix), by("dependabot[bot]", "User")), wantOutcome: "comment_by_bot"},
		{name: "person's login listed changes nothing", allowed: []string{"Codertocat"}, edit: commentBody(fix), wantOutcome: "fix", wantLogin: "Codertocat"},

		// The bot itself, however the payload describes it.
		{name: "self", edit: then(commentBody(fix), by(botLogin, "Bot")), wantOutcome: "comment_by_self"},
		{name: "self listed", allowed: []string{"renovate[bot]", "PULLWRIGHT[bot]"}, edit: then(commentBody(fix), by(botLogin, "Bot")), wantOutcome: "comment_by_self"},
		{name: "self as sender typed user", edit: then(commentBody(fix), author("PullWright[bot]", "User", "Codertocat", "User")), wantOutcome: "comment_by_self"},
		{name: "self as comment user, sender typed user", allowed: []string{botLogin}, edit: then(commentBody(fix), author("Codertocat", "User", botLogin, "User")), wantOutcome: "comment_by_self"},
		{name: "posted through the app with a person's token", edit: then(commentBody(fix), func(m map[string]any) {
			obj(m, "comment")["performed_via_github_app"] = map[string]any{"id": 1, "slug": "pullwright", "name": "Pullwright"}
		}), wantOutcome: "comment_by_self"},
		{name: "posted through another app", edit: then(commentBody(fix), func(m map[string]any) {
			obj(m, "comment")["performed_via_github_app"] = map[string]any{"id": 2, "slug": "other-app", "name": "Other"}
		}), wantOutcome: "fix", wantLogin: "Codertocat"},
		{name: "own identity unknown", botLogin: str(""), allowed: []string{"renovate[bot]"}, edit: then(commentBody(fix), by("pullwright[bot]", "Bot")), wantOutcome: "comment_by_bot"},

		// The marker silences a comment whoever posted it.
		{name: "marker from a person", edit: commentBody("/agent fix it\n\n<!-- pullwright:task=1 step=2 -->"), wantOutcome: "comment_has_marker"},
		{name: "listed bot quoting the bot's reply", allowed: []string{"renovate[bot]"}, edit: then(
			commentBody("<!-- pullwright:task=7 step=1 -->\nStarted on `/agent fix it`:\n/agent fix it"), by("renovate[bot]", "Bot")),
			wantOutcome: "comment_has_marker"},
		{name: "marker from self typed user", edit: then(commentBody("<!-- pullwright:task=7 -->\n/approve 7-1"), author("Codertocat", "User", botLogin, "User")), wantOutcome: "comment_by_self"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newFakeRecorder()
			h, logs := newHandler(t, rec, func(c *Config) {
				c.AllowedBots = tt.allowed
				if tt.botLogin != nil {
					c.BotLogin = *tt.botLogin
				}
			})
			logs.Reset() // New warns when the bot's own login is listed.
			d := delivery{event: "issue_comment", id: fmt.Sprint("author-", i), body: variant(t, "issue_comment.created.json", tt.edit)}
			w := serve(h, d)
			if got := logLine(t, logs)["outcome"]; got != tt.wantOutcome {
				t.Fatalf("outcome %v, want %s (status %d)", got, tt.wantOutcome, w.Code)
			}
			deliveries, tasks := rec.snapshot()
			if len(deliveries) != 1 {
				t.Fatalf("%d deliveries recorded, want 1", len(deliveries))
			}
			if tt.wantLogin == "" {
				if w.Code != http.StatusOK || len(tasks) != 0 {
					t.Fatalf("status %d, tasks %+v; want 200 and none", w.Code, tasks)
				}
				return
			}
			if w.Code != http.StatusAccepted || len(tasks) != 1 {
				t.Fatalf("status %d, %d tasks; want 202 and one", w.Code, len(tasks))
			}
			if got := tasks[0]; got.Kind != task.KindFix || got.Requester.Login != tt.wantLogin {
				t.Fatalf("task %s by %q, want fix by %q", got.Kind, got.Requester.Login, tt.wantLogin)
			}
		})
	}
}

func TestNewAllowedBots(t *testing.T) {
	rec := newFakeRecorder()
	for _, bad := range [][]string{{""}, {"  "}, {"renovate[bot] dependabot[bot]"}, {"renovate[bot],dependabot[bot]"}} {
		if _, err := New(Config{Secret: testSecret, Recorder: rec, AllowedBots: bad}); err == nil {
			t.Errorf("AllowedBots %q accepted", bad)
		}
	}
	h, logs := newHandler(t, rec, func(c *Config) { c.AllowedBots = []string{"Renovate[bot]", "pullwright[BOT]"} })
	if len(h.allowedBots) != 1 || !h.allowedBots["renovate[bot]"] {
		t.Errorf("allowed bots %v, want renovate[bot] alone", h.allowedBots)
	}
	if !strings.Contains(logs.String(), `"level":"WARN"`) {
		t.Errorf("listing the bot's own login is not warned about: %s", logs)
	}
}

// TestServes checks that deliveries from installations and owners the bot
// does not serve are acknowledged, recorded and start nothing.
func TestServes(t *testing.T) {
	type call struct {
		installation int64
		owner        string
	}
	onlyElectron := func(id int64, owner string) bool { return id == 690857 && owner == "electron" }
	approve := func(m map[string]any) {
		obj(m, "requested_action")["identifier"] = "approve"
		obj(m, "check_run")["external_id"] = "12-1"
	}
	tests := []struct {
		name        string
		serves      func(int64, string) bool
		event, file string
		edit        func(map[string]any)
		wantStatus  int
		wantOutcome string
		wantCall    *call // nil: Serves is not asked
	}{
		{name: "nil serves everyone", event: "issue_comment", file: "issue_comment.created.json", edit: commentBody("/agent fix it"),
			wantStatus: 202, wantOutcome: "fix"},
		{name: "comment served", serves: func(id int64, owner string) bool { return id == 1 && owner == "Codertocat" }, event: "issue_comment", file: "issue_comment.created.json", edit: commentBody("/agent fix it"),
			wantStatus: 202, wantOutcome: "fix", wantCall: &call{1, "Codertocat"}},
		{name: "comment not served", serves: onlyElectron, event: "issue_comment", file: "issue_comment.created.json", edit: commentBody("/agent fix it"),
			wantStatus: 200, wantOutcome: "not_served", wantCall: &call{1, "Codertocat"}},
		{name: "GHES comment not served", serves: onlyElectron, event: "issue_comment", file: "issue_comment.edited.ghes.json",
			edit:       then(commentBody("/agent fix it"), func(m map[string]any) { m["action"] = "created" }),
			wantStatus: 200, wantOutcome: "not_served", wantCall: &call{5, "Codertocat"}},
		{name: "comment without installation", serves: onlyElectron, event: "issue_comment", file: "issue_comment.edited.json",
			edit:       then(commentBody("/agent fix it"), func(m map[string]any) { m["action"] = "created" }),
			wantStatus: 200, wantOutcome: "not_served", wantCall: &call{0, "Codertocat"}},
		{name: "help is not answered either", serves: onlyElectron, event: "issue_comment", file: "issue_comment.created.json", edit: commentBody("/agent help"),
			wantStatus: 200, wantOutcome: "not_served", wantCall: &call{1, "Codertocat"}},
		{name: "button served", serves: onlyElectron, event: "check_run", file: "check_run.requested_action.json", edit: approve,
			wantStatus: 202, wantOutcome: "button_approve", wantCall: &call{690857, "electron"}},
		{name: "button not served", serves: func(int64, string) bool { return false }, event: "check_run", file: "check_run.requested_action.json", edit: approve,
			wantStatus: 200, wantOutcome: "not_served", wantCall: &call{690857, "electron"}},
		{name: "ping needs no serving", serves: func(int64, string) bool { return false }, event: "ping", file: "ping.json",
			wantStatus: 200, wantOutcome: "ping"},
		{name: "events not acted on are not asked about", serves: func(int64, string) bool { return false }, event: "installation", file: "installation.created.json",
			wantStatus: 200, wantOutcome: "event_ignored"},
		{name: "a label not served", serves: onlyElectron, event: "issues", file: "issues.labeled.json", edit: installed,
			wantStatus: 200, wantOutcome: "not_served", wantCall: &call{1, "Codertocat"}},
		// A pull request's head is recorded only for those served.
		{name: "pull request heads are asked about", serves: func(int64, string) bool { return false }, event: "pull_request", file: "pull_request.opened.json",
			wantStatus: 200, wantOutcome: "event_ignored", wantCall: &call{1, "Codertocat"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []call
			rec := newFakeRecorder()
			h, logs := newHandler(t, rec, func(c *Config) {
				if tt.serves != nil {
					c.Serves = func(id int64, owner string) bool {
						calls = append(calls, call{id, owner})
						return tt.serves(id, owner)
					}
				}
			})
			d := delivery{event: tt.event, id: fmt.Sprint("serves-", i), body: variant(t, tt.file, tt.edit)}
			w := serve(h, d)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d (%s)", w.Code, tt.wantStatus, w.Body)
			}
			line := logLine(t, logs)
			if line["outcome"] != tt.wantOutcome || line["level"] != "INFO" {
				t.Errorf("logged outcome %v at %v, want %s at INFO", line["outcome"], line["level"], tt.wantOutcome)
			}
			switch {
			case tt.wantCall == nil && len(calls) != 0:
				t.Errorf("Serves asked %v, want not asked", calls)
			case tt.wantCall != nil && (len(calls) != 1 || calls[0] != *tt.wantCall):
				t.Errorf("Serves asked %v, want once with %v", calls, *tt.wantCall)
			}
			deliveries, tasks := rec.snapshot()
			if len(deliveries) != 1 {
				t.Errorf("%d deliveries recorded, want 1: an ignored delivery is still de-duplicated", len(deliveries))
			}
			if (tt.wantStatus == http.StatusAccepted) != (len(tasks) == 1) || len(tasks) > 1 {
				t.Errorf("status %d with tasks %+v", w.Code, tasks)
			}
			if tt.wantOutcome == "not_served" {
				if line["installation_id"] != float64(tt.wantCall.installation) || line["owner"] != tt.wantCall.owner {
					t.Errorf("log has installation_id %v owner %v, want %d %s", line["installation_id"], line["owner"], tt.wantCall.installation, tt.wantCall.owner)
				}
				if strings.TrimSpace(w.Body.String()) != "ignored" {
					t.Errorf("body %q, want ignored", w.Body)
				}
			}
		})
	}
}
