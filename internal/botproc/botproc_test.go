package botproc_test

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakellm"
)

func TestMain(m *testing.M) {
	code := m.Run()
	botproc.Cleanup()
	os.Exit(code)
}

// The harness runs the real binary, which answers signed deliveries, dies
// on Kill, and comes back on Restart at the same address and database, on
// SQLite and on Postgres.
func TestHarness(t *testing.T) { botproc.OnEachDatabase(t, harness) }

func harness(t *testing.T, databaseURL string) {
	h := botproc.New(t, fakellm.New(t), botproc.Options{DatabaseURL: databaseURL})
	if got := h.Bot.Get("/healthz"); !strings.Contains(got, "ok") {
		t.Fatalf("/healthz = %q", got)
	}
	if n := h.Bot.Metric("go_goroutines"); n <= 0 {
		t.Fatalf("go_goroutines = %v", n)
	}
	st, err := h.Bot.ProcStatus("VmRSS", "VmHWM")
	if err != nil || st["VmRSS"] <= 0 || st["VmHWM"] < st["VmRSS"] {
		t.Fatalf("/proc status = %v, %v", st, err)
	}

	if code := h.Comment("d1", 1, botproc.Owner, "/agent help"); code != http.StatusAccepted {
		t.Fatalf("help answered %d", code)
	}
	h.Eventually(timeout, func() bool { return len(h.BotComments(1)) == 1 }, func() string { return "no reply to /agent help" })
	// A delivery with a bad signature is refused by the binary too.
	req, _ := http.NewRequest(http.MethodPost, h.Bot.URL()+"/webhook", strings.NewReader("{}"))
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-GitHub-Delivery", "bad")
	req.Header.Set("X-Hub-Signature-256", botproc.Sign([]byte("other")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad signature answered %d", resp.StatusCode)
	}

	url, pid := h.Bot.URL(), h.Bot.PID()
	h.Bot.Kill()
	if h.Bot.Running() {
		t.Fatal("the bot runs after Kill")
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("the killed bot still answers")
	}
	h.Bot.Restart()
	if h.Bot.URL() != url || h.Bot.PID() == pid {
		t.Fatalf("restart: url %s pid %d, before %s %d", h.Bot.URL(), h.Bot.PID(), url, pid)
	}
	// The delivery id is remembered across the kill: a redelivery is a no-op.
	if code := h.Deliver("d1", "issue_comment", h.CommentPayload(1, botproc.Owner, "/agent help")); code != http.StatusOK {
		t.Fatalf("redelivery after restart answered %d, want 200", code)
	}
	// A button press for a request that does not exist is accepted and
	// ends in nothing (no issue to answer on).
	if code := h.Button("b1", botproc.Owner, "approve", "99-1", strings.Repeat("a", 40)); code != http.StatusAccepted {
		t.Fatalf("button answered %d", code)
	}
	// The harness reads the bot's database directly too: no fix task, so
	// none is parked.
	if n := h.Parked(); n != 0 {
		t.Fatalf("%d parked tasks, want 0", n)
	}
	h.Bot.Stop()
	if h.Bot.Running() {
		t.Fatal("the bot runs after Stop")
	}
	if !strings.Contains(h.Bot.Logs(), `"msg":"listening"`) {
		t.Fatalf("the bot's JSON logs were not captured:\n%s", h.Bot.Logs())
	}
}

const timeout = 30 * time.Second
