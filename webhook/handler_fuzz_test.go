package webhook

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/task"
)

var update = flag.Bool("update", false, "rewrite the seed corpus of FuzzHandler from testdata")

// fuzzMaxBody is small enough that the fuzzer reaches the size limit, and
// large enough for every payload in testdata.
const fuzzMaxBody = 32 << 10

// fuzzServes refuses one owner, so that the fuzzer meets not_served.
func fuzzServes(_ int64, owner string) bool { return !strings.EqualFold(owner, "unserved-org") }

// FuzzHandler sends each input as a correctly signed delivery, so that the
// fuzzer gets past the signature into the parsing behind it, and once with a
// corrupted signature. Seeds are in testdata/fuzz/FuzzHandler: every payload
// of testdata and the mutations of fuzzSeeds, kept there by
// TestFuzzHandlerSeeds.
func FuzzHandler(f *testing.F) {
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		rec := newFakeRecorder()
		h, err := New(Config{
			Secret:      testSecret,
			BotLogin:    botLogin,
			AllowedBots: []string{"renovate[bot]"},
			Serves:      fuzzServes,
			Recorder:    rec,
			Logger:      slog.New(slog.DiscardHandler),
			Now:         func() time.Time { return testNow },
			MaxBody:     fuzzMaxBody,
		})
		if err != nil {
			t.Fatal(err)
		}

		// A corrupted signature: one hex digit of the right one changed.
		good := sign(testSecret, body)
		bad := []byte(good)
		if bad[len(bad)-1] == '0' {
			bad[len(bad)-1] = '1'
		} else {
			bad[len(bad)-1] = '0'
		}
		w := serve(h, delivery{event: event, id: "fuzz-1", body: body, sig: str(string(bad))})
		if w.Code != http.StatusUnauthorized && w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("corrupted signature: status %d, want 401", w.Code)
		}
		if w.Code == http.StatusRequestEntityTooLarge && len(body) <= fuzzMaxBody {
			t.Fatalf("corrupted signature: 413 for %d bytes", len(body))
		}
		if rec.calls != 0 {
			t.Fatalf("corrupted signature reached the store %d times", rec.calls)
		}

		first := checkDelivery(t, h, rec, delivery{event: event, id: "fuzz-1", body: body})

		// A redelivery keeps its id: it is answered, and changes nothing.
		deliveries, tasks := rec.snapshot()
		again := serve(h, delivery{event: event, id: "fuzz-1", body: body})
		switch {
		case first.Code/100 == 2 && (again.Code != http.StatusOK || strings.TrimSpace(again.Body.String()) != "duplicate delivery"):
			t.Fatalf("redelivery: status %d body %q, want 200 duplicate delivery", again.Code, again.Body)
		case first.Code/100 != 2 && again.Code != first.Code:
			t.Fatalf("redelivery of a refused delivery: status %d, first %d", again.Code, first.Code)
		}
		if d2, t2 := rec.snapshot(); len(d2) != len(deliveries) || len(t2) != len(tasks) {
			t.Fatalf("redelivery recorded something: %d deliveries, %d tasks; before %d, %d", len(d2), len(t2), len(deliveries), len(tasks))
		}

		// The same payload as a form, under another id, means the same.
		form := []byte(url.Values{"payload": {string(body)}}.Encode())
		d := delivery{event: event, id: "fuzz-2", body: form, header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}}
		if w := checkDelivery(t, h, rec, d); w.Code != first.Code && w.Code != http.StatusRequestEntityTooLarge && first.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("as a form: status %d, as JSON %d", w.Code, first.Code)
		}
	})
}

// checkDelivery serves a correctly signed, new delivery and checks what any
// answer to one must hold.
func checkDelivery(t *testing.T, h *Handler, rec *fakeRecorder, d delivery) *httptest.ResponseRecorder {
	t.Helper()
	_, before := rec.snapshot()
	calls := rec.calls
	w := serve(h, d)
	deliveries, tasks := rec.snapshot()
	switch {
	case w.Code == http.StatusOK, w.Code == http.StatusAccepted:
		if _, ok := deliveries[d.id]; !ok {
			t.Fatalf("status %d, but delivery %s is not recorded", w.Code, d.id)
		}
	case w.Code == http.StatusBadRequest, w.Code == http.StatusRequestEntityTooLarge:
		if rec.calls != calls {
			t.Fatalf("status %d, but the store was called", w.Code)
		}
		if w.Code == http.StatusRequestEntityTooLarge && len(d.body) <= fuzzMaxBody {
			t.Fatalf("413 for %d bytes", len(d.body))
		}
	default:
		t.Fatalf("status %d (%q), want 200, 202, 400 or 413", w.Code, w.Body)
	}
	if rec.noDeadline {
		t.Fatal("the store was called without a deadline")
	}
	added := tasks[len(before):]
	if w.Code != http.StatusAccepted {
		if len(added) != 0 {
			t.Fatalf("status %d with new tasks %+v", w.Code, added)
		}
		return w
	}
	// Accepted means exactly one task, and the store holds it.
	if len(added) != 1 {
		t.Fatalf("accepted with %d new tasks", len(added))
	}
	checkFuzzTask(t, added[0], d.id)
	return w
}

// checkFuzzTask checks what holds for any task the handler makes, whatever
// the payload: the rules that keep the bot from acting for itself or for
// someone it does not serve.
func checkFuzzTask(t *testing.T, got task.Task, deliveryID string) {
	t.Helper()
	if got.DeliveryID != deliveryID || got.State != task.Queued || got.ID == 0 {
		t.Fatalf("task %+v: delivery %q state %q id %d", got, got.DeliveryID, got.State, got.ID)
	}
	switch got.Kind {
	case task.KindFix, task.KindReply, task.KindStatus, task.KindCancel, task.KindBusy, task.KindApprove, task.KindReject, task.KindTrigger:
	default:
		t.Fatalf("task of unknown kind %q", got.Kind)
	}
	if got.Repo.InstallationID == 0 {
		t.Fatalf("task without an installation: %+v", got)
	}
	if !fuzzServes(got.Repo.InstallationID, got.Repo.Owner) {
		t.Fatalf("task for an owner not served: %+v", got.Repo)
	}
	if strings.EqualFold(got.Requester.Login, botLogin) {
		t.Fatalf("task asked for by the bot itself: %+v", got)
	}
	if (got.Kind == task.KindReply) != (got.Reply != "") {
		t.Fatalf("%s task with reply %q", got.Kind, got.Reply)
	}
	// A review comment is reached through Review alone: its id is no
	// issue comment's, and it is always on a pull request.
	if got.Review != nil && (!got.IsPR || got.CommentID != 0 || got.Review.CommentID == 0) {
		t.Fatalf("review task on a pull request %v, comment %d, review comment %d", got.IsPR, got.CommentID, got.Review.CommentID)
	}
}

// fuzzSeed is one seed of FuzzHandler's corpus.
type fuzzSeed struct {
	file  string // under testdata/fuzz/FuzzHandler
	event string
	body  []byte
}

// fuzzSeeds lists FuzzHandler's seed corpus: every payload of testdata as
// GitHub sent it, then mutations that reach the branches a sample payload
// does not (commands, bots, the bot itself, unserved owners, bad JSON).
func fuzzSeeds(t *testing.T) []fuzzSeed {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var seeds []fuzzSeed
	for _, name := range names {
		base := filepath.Base(name)
		event, _, _ := strings.Cut(base, ".")
		seeds = append(seeds, fuzzSeed{"payload-" + strings.TrimSuffix(base, ".json"), event, payload(t, base)})
	}
	created := "issue_comment.created.json"
	review := "pull_request_review_comment.created.json"
	button := func(identifier string) func(map[string]any) {
		return func(m map[string]any) {
			obj(m, "requested_action")["identifier"] = identifier
			obj(m, "check_run")["external_id"] = "12-1"
		}
	}
	unserved := func(m map[string]any) { obj(obj(m, "repository"), "owner")["login"] = "unserved-org" }
	for _, s := range []struct {
		name, event, file string
		edit              func(map[string]any)
	}{
		{"fix", "issue_comment", created, commentBody("/agent fix the typo\nin the README")},
		{"help", "issue_comment", created, commentBody("/agent help")},
		{"approve-on-pr", "issue_comment", created, then(commentBody("/approve 12-1"), onPR)},
		{"empty-fix-on-pr", "issue_comment", created, then(commentBody("/agent fix"), onPR, func(m map[string]any) { obj(m, "issue")["body"] = nil })},
		{"review-fix", "pull_request_review_comment", review, commentBody("/agent fix use more emoji")},
		{"review-reply-in-thread", "pull_request_review_comment", review, then(commentBody("/agent fix"), func(m map[string]any) { obj(m, "comment")["in_reply_to_id"] = 284312000 })},
		{"review-self-via-app", "pull_request_review_comment", review, then(commentBody("/agent fix it"), func(m map[string]any) {
			obj(m, "comment")["performed_via_github_app"] = map[string]any{"id": 1, "slug": "pullwright", "name": "Pullwright"}
		})},
		{"review-no-installation", "pull_request_review_comment", review, then(commentBody("/agent status"), func(m map[string]any) { delete(m, "installation") })},
		{"allowed-bot", "issue_comment", created, then(commentBody("/agent fix deps"), by("renovate[bot]", "Bot"))},
		{"other-bot", "issue_comment", created, then(commentBody("/agent fix deps"), by("dependabot[bot]", "Bot"))},
		{"self-typed-user", "issue_comment", created, then(commentBody("/agent fix it"), author("Codertocat", "User", botLogin, "User"))},
		{"marker", "issue_comment", created, commentBody("<!-- pullwright:task=1 step=2 -->\n/agent fix it")},
		{"unserved-comment", "issue_comment", created, then(commentBody("/agent fix it"), unserved)},
		{"button-approve", "check_run", "check_run.requested_action.json", button("approve")},
		{"button-unserved", "check_run", "check_run.requested_action.json", then(button("reject"), unserved)},
		{"wrong-type", "issue_comment", created, then(commentBody("/agent fix it"), func(m map[string]any) { obj(m, "installation")["id"] = "1" })},
		{"no-installation", "issue_comment", created, then(commentBody("/agent status"), func(m map[string]any) { delete(m, "installation") })},
		{"label-added", "issues", "issues.labeled.json", then(installed, labelled("pullwright"))},
		{"label-removed", "issues", "issues.unlabeled.json", then(installed, labelled("pullwright"))},
		{"label-by-self", "issues", "issues.labeled.json", then(installed, sentBy(botLogin, "Bot"))},
		{"label-on-pr", "issues", "issues.labeled.json", then(installed, onPR)},
		{"assigned-bot", "issues", "issues.assigned.json", assignedTo(botLogin)},
	} {
		seeds = append(seeds, fuzzSeed{"mutation-" + s.name, s.event, edited(t, compact(t, payload(t, s.file)), s.edit)})
	}
	truncated := compact(t, payload(t, created))
	seeds = append(seeds,
		fuzzSeed{"mutation-truncated", "issue_comment", truncated[:len(truncated)/2]},
		fuzzSeed{"mutation-not-json", "ping", []byte("Hello, World!")},
		fuzzSeed{"mutation-no-event", "", []byte("{}")},
	)
	return seeds
}

// compact keeps only what the handler reads of a payload. Mutating a few
// hundred bytes finds more per second than mutating thirty kilobytes, and
// what the fuzzer finds from them is minimised in moments, not a minute.
func compact(t *testing.T, body []byte) []byte {
	t.Helper()
	var p event
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// corpusFile encodes a seed as go test writes a corpus entry.
func corpusFile(event string, body []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\nstring(%q)\n[]byte(%q)\n", event, body)
}

// TestFuzzHandlerSeeds keeps the committed seed corpus in step with
// testdata: a payload added there is fuzzed once -update has been run.
// Files the fuzzer added (its findings) are left alone.
func TestFuzzHandlerSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzHandler")
	for _, s := range fuzzSeeds(t) {
		path := filepath.Join(dir, s.file)
		want := corpusFile(s.event, s.body)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("seed %s is missing or stale (run go test -run TestFuzzHandlerSeeds ./webhook/ -update): %v", path, err)
		}
	}
}
