// Command ingest measures how fast the webhook handler takes deliveries when
// every one is committed to the real SQLite store before it is answered, and
// compares it with a bare handler that only checks the signature (the floor)
// and with the real handler over a store that does nothing (its own cost).
//
//	go run ./bench/ingest [-senders 8] [-n 5000] [-db file]
//
// Every handler listens on 127.0.0.1; the senders post signed "/agent fix"
// issue_comment deliveries derived from a real payload, each with its own
// delivery id and issue number, so each one creates a fix task.
package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/sqlite"
	"github.com/pullwright/pullwright/webhook"
)

// issue_comment.created.json is an unchanged copy of the octokit/webhooks
// example (see ../../../shared/testdata/github-webhooks/SOURCE.md).
//
//go:embed issue_comment.created.json
var commentPayload []byte

var secret = []byte("bench secret")

func main() {
	senders := flag.Int("senders", 8, "concurrent senders")
	n := flag.Int("n", 5000, "deliveries per run (at most 1000000)")
	dbPath := flag.String("db", "", "SQLite file (default: a new file in a temporary directory, removed afterwards)")
	flag.Parse()
	if *senders < 1 || *n < 1 || *n > 1_000_000 {
		fmt.Fprintln(os.Stderr, "ingest: -senders must be ≥ 1 and -n between 1 and 1000000")
		os.Exit(2)
	}
	if err := run(*senders, *n, *dbPath); err != nil {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
}

type result struct {
	name      string
	elapsed   time.Duration
	latencies []time.Duration
	failures  int
}

func (r result) rate() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

func (r result) pct(p float64) time.Duration {
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func run(senders, n int, dbPath string) error {
	ctx := context.Background()
	if dbPath == "" {
		dir, err := os.MkdirTemp("", "pullwright-ingest-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dbPath = filepath.Join(dir, "bench.db")
	}
	store, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		return err
	}
	defer store.Close()

	wh, err := webhook.New(webhook.Config{
		Secret:   secret,
		BotLogin: "pullwright[bot]",
		Recorder: store,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}

	// Distinct bodies for the two runs, so the store never sees a redelivery.
	warm := min(n, 20*senders)
	realBodies, err := deliveries(n+warm, "real")
	if err != nil {
		return err
	}
	bareBodies, err := deliveries(n+warm, "bare")
	if err != nil {
		return err
	}
	noopBodies, err := deliveries(n+warm, "noop")
	if err != nil {
		return err
	}
	noop, err := webhook.New(webhook.Config{Secret: secret, Recorder: noopRecorder{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}

	bare, err := measure("bare (signature only)", bareHandler{}, bareBodies, warm, senders, http.StatusOK)
	if err != nil {
		return err
	}
	parsed, err := measure("webhook, no-op store", noop, noopBodies, warm, senders, http.StatusAccepted)
	if err != nil {
		return err
	}
	full, err := measure("webhook + SQLite", wh, realBodies, warm, senders, http.StatusAccepted)
	if err != nil {
		return err
	}

	// Spot-check that the store really holds the tasks.
	probe := task.Task{Repo: pullwright.Repo{InstallationID: 1, Owner: "Codertocat", Name: "Hello-World"}, Issue: 1000 + n + warm - 1}
	last, err := store.Active(ctx, probe.IssueKey())
	if err != nil {
		return fmt.Errorf("last fix task not in the store: %w", err)
	}
	if last.Kind != task.KindFix || last.DeliveryID != realBodies[n+warm-1].id {
		return fmt.Errorf("last task is %s from %s, want fix from %s", last.Kind, last.DeliveryID, realBodies[n+warm-1].id)
	}

	fmt.Printf("deliveries: %d measured per run after %d warm-up, senders: %d, body: %d bytes, db: %s\n\n", n, warm, senders, len(realBodies[0].body), dbPath)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "handler\tdeliveries/s\tp50\tp99\tmax\tfailures\t")
	for _, r := range []result{bare, parsed, full} {
		fmt.Fprintf(tw, "%s\t%.0f\t%v\t%v\t%v\t%d\t\n", r.name, r.rate(), round(r.pct(0.50)), round(r.pct(0.99)), round(r.pct(1)), r.failures)
	}
	tw.Flush()
	fmt.Printf("\nbare vs webhook + SQLite: throughput ×%.1f, p50 ×%.1f, p99 ×%.1f\n",
		bare.rate()/full.rate(),
		float64(full.pct(0.50))/float64(bare.pct(0.50)),
		float64(full.pct(0.99))/float64(bare.pct(0.99)))
	if bare.failures+parsed.failures+full.failures > 0 {
		return errors.New("some deliveries failed")
	}
	return nil
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d > time.Microsecond:
		return d.Round(time.Microsecond)
	}
	return d
}

type signed struct {
	id   string
	body []byte
	sig  string
}

// deliveries derives n "/agent fix" comments on n different issues from the
// real payload, and signs them.
func deliveries(n int, tag string) ([]signed, error) {
	var base map[string]any
	if err := json.Unmarshal(commentPayload, &base); err != nil {
		return nil, err
	}
	issue, _ := base["issue"].(map[string]any)
	comment, _ := base["comment"].(map[string]any)
	if issue == nil || comment == nil {
		return nil, errors.New("payload has no issue or comment")
	}
	out := make([]signed, n)
	for i := range out {
		issue["number"] = 1000 + i
		comment["id"] = 5_000_000 + i
		comment["body"] = fmt.Sprintf("Thanks for the report.\r\n\r\n/agent fix the spelling of 'commit' in the README (%s %d)", tag, i)
		b, err := json.Marshal(base)
		if err != nil {
			return nil, err
		}
		out[i] = signed{id: fmt.Sprintf("bench-%s-%07d", tag, i), body: b, sig: sign(b)}
	}
	return out, nil
}

func sign(b []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(b)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// noopRecorder accepts everything and stores nothing: the handler's own cost.
type noopRecorder struct{}

func (noopRecorder) Record(context.Context, task.Delivery, *task.Task) error { return nil }

// bareHandler is the floor: read the body with the same limit, check the
// signature, answer 200.
type bareHandler struct{}

func (bareHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, webhook.DefaultMaxBody))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	got, err := hex.DecodeString(string(bytes.TrimPrefix([]byte(r.Header.Get("X-Hub-Signature-256")), []byte("sha256="))))
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if err != nil || !hmac.Equal(got, mac.Sum(nil)) {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	io.WriteString(w, "ok\n")
}

// measure serves h on a loopback listener and has senders post every
// delivery once; the first warm ones are not measured.
func measure(name string, h http.Handler, ds []signed, warm, senders, want int) (result, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-served
	}()

	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: senders, MaxConnsPerHost: senders},
	}
	defer client.CloseIdleConnections()
	url := "http://" + ln.Addr().String() + "/webhook"

	if _, err := send(client, url, ds[:warm], senders, want); err != nil {
		return result{}, fmt.Errorf("%s: warm-up: %w", name, err)
	}
	start := time.Now()
	res, err := send(client, url, ds[warm:], senders, want)
	res.elapsed = time.Since(start)
	res.name = name
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %d failures, first: %v\n", name, res.failures, err)
	}
	return res, nil
}

// send posts every delivery once from senders goroutines and returns each
// one's latency, the failure count and the first failure.
func send(client *http.Client, url string, ds []signed, senders, want int) (result, error) {
	res := result{latencies: make([]time.Duration, len(ds))}
	var next, failures atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ds) {
					return
				}
				d := ds[i]
				req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(d.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("User-Agent", "GitHub-Hookshot/bench")
				req.Header.Set("X-GitHub-Event", "issue_comment")
				req.Header.Set("X-GitHub-Delivery", d.id)
				req.Header.Set("X-Hub-Signature-256", d.sig)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != want {
						err = fmt.Errorf("delivery %s: status %d, want %d", d.id, resp.StatusCode, want)
					}
				}
				res.latencies[i] = time.Since(t0)
				if err != nil {
					failures.Add(1)
					once.Do(func() { firstErr = err })
				}
			}
		})
	}
	wg.Wait()
	res.failures = int(failures.Load())
	return res, firstErr
}
