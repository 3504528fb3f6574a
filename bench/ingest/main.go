// Command ingest measures how fast the webhook handler takes deliveries when
// every one is committed to the real store before it is answered, on SQLite
// and on Postgres, and compares each with a bare handler that only checks
// the signature (the floor) measured in the same run, and with the real
// handler over a store that does nothing (its own cost).
//
//	go run ./bench/ingest [-senders 1,8] [-n 2000] [-rounds 1] [-postgres DSN] [-dir DIR]
//
// Every handler listens on 127.0.0.1; the senders post signed "/agent fix"
// issue_comment deliveries derived from a real payload, each with its own
// delivery id and issue number, so each one creates a fix task. Each store
// measurement gets a new, empty store: a new SQLite file, and a new
// database on the Postgres server that -postgres (default
// $PULLWRIGHT_TEST_POSTGRES) names, as a user who may create databases;
// scripts/test-postgres.sh starts a throwaway one. Without it, Postgres is
// left out, and the program says so.
//
// The machine it runs on may be shared and noisy, so what it reports are
// ratios to the bare handler measured in the same round with the same
// number of senders, and, with -rounds above 1, the median of each figure
// and ratio over the rounds. It then checks the goal of issue 18 on each
// database: p99 within 10× of the bare handler's, throughput with the most
// senders at least that with the fewest, and no delivery over 1 s.
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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/bench/internal/benchpg"
	"github.com/pullwright/pullwright/bench/internal/stats"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/postgres"
	"github.com/pullwright/pullwright/task/sqlite"
	"github.com/pullwright/pullwright/webhook"
)

// issue_comment.created.json is an unchanged copy of the octokit/webhooks
// example (see ../../../shared/testdata/github-webhooks/SOURCE.md).
//
//go:embed issue_comment.created.json
var commentPayload []byte

var secret = []byte("bench secret")

// The goal of issue 18, per database.
const (
	goalP99Ratio = 10
	goalMax      = time.Second
)

func main() {
	sendersFlag := flag.String("senders", "1,8", "comma-separated counts of concurrent senders, each measured in turn")
	n := flag.Int("n", 2000, "deliveries measured per handler and sender count (at most 1000000)")
	rounds := flag.Int("rounds", 1, "rounds of the whole measurement; figures are the medians over them")
	pg := flag.String("postgres", os.Getenv("PULLWRIGHT_TEST_POSTGRES"), "postgres:// URL of a user who may create databases (default $PULLWRIGHT_TEST_POSTGRES); empty leaves Postgres out")
	dir := flag.String("dir", "", "directory for the SQLite files (default: a new temporary directory, removed afterwards)")
	flag.Parse()
	var senders []int
	for f := range strings.SplitSeq(*sendersFlag, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			fmt.Fprintf(os.Stderr, "ingest: -senders: %q is not a count ≥ 1\n", f)
			os.Exit(2)
		}
		senders = append(senders, c)
	}
	if *n < 1 || *n > 1_000_000 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "ingest: want -n between 1 and 1000000 and -rounds ≥ 1")
		os.Exit(2)
	}
	if err := run(config{senders: senders, n: *n, rounds: *rounds, postgres: *pg, dir: *dir}); err != nil {
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(1)
	}
}

type config struct {
	senders  []int
	n        int
	rounds   int
	postgres string
	dir      string
}

// A handler under measurement. open gives it a fresh store (nil for the
// handlers that keep none) and a function that checks the last delivery's
// task is in it and closes it.
type subject struct {
	name string
	key  string // names its files, databases and delivery ids
	want int    // the status a delivery is answered with
	open func(ctx context.Context, tag string) (http.Handler, func(last signed) error, error)
}

type result struct {
	elapsed   time.Duration
	latencies []time.Duration
	failures  int
}

func (r result) rate() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

// pct is the p-quantile of the latencies; 1 is the max.
func (r result) pct(p float64) time.Duration { return stats.Percentile(r.latencies, p) }

// figures are one measurement's numbers; ratio is the same against the bare
// handler of the same round and sender count (for the floor itself, 1).
type figures struct {
	rate, p50, p99, max float64 // deliveries/s, and seconds
	failures            int
}

func figuresOf(r result) figures {
	return figures{rate: r.rate(), p50: r.pct(0.50).Seconds(), p99: r.pct(0.99).Seconds(), max: r.pct(1).Seconds(), failures: r.failures}
}

func ratio(f, bare figures) figures {
	// Throughput as how many times fewer than the floor, latencies as how
	// many times longer: above 1 is worse, in every column.
	return figures{rate: bare.rate / f.rate, p50: f.p50 / bare.p50, p99: f.p99 / bare.p99, max: f.max / bare.max}
}

func run(cfg config) error {
	ctx := context.Background()
	if cfg.dir == "" {
		d, err := os.MkdirTemp("", "pullwright-ingest-")
		if err != nil {
			return fmt.Errorf("temporary directory: %w", err)
		}
		defer os.RemoveAll(d)
		cfg.dir = d
	}
	subjects := []subject{
		{name: "bare (signature only)", key: "bare", want: http.StatusOK, open: func(context.Context, string) (http.Handler, func(signed) error, error) {
			return bareHandler{}, func(signed) error { return nil }, nil
		}},
		{name: "webhook, no-op store", key: "noop", want: http.StatusAccepted, open: func(context.Context, string) (http.Handler, func(signed) error, error) {
			h, err := handler(noopRecorder{})
			return h, func(signed) error { return nil }, err
		}},
		{name: "webhook + SQLite", key: "sqlite", want: http.StatusAccepted, open: func(ctx context.Context, tag string) (http.Handler, func(signed) error, error) {
			s, err := sqlite.Open(ctx, filepath.Join(cfg.dir, tag+".db"))
			if err != nil {
				return nil, nil, err
			}
			return storeHandler(ctx, s, s.Close)
		}},
	}
	pgNote := "left out: give -postgres URL or set PULLWRIGHT_TEST_POSTGRES (dsn=$(scripts/test-postgres.sh start DIR) starts a throwaway server)"
	if cfg.postgres != "" {
		note, err := benchpg.Settings(ctx, cfg.postgres, "a new database per measurement; commits wait for the WAL write (synchronous_commit=on)")
		if err != nil {
			return err
		}
		pgNote = note
		subjects = append(subjects, subject{name: "webhook + Postgres", key: "postgres", want: http.StatusAccepted, open: func(ctx context.Context, tag string) (http.Handler, func(signed) error, error) {
			dbURL, drop, err := benchpg.CreateDatabase(ctx, cfg.postgres)
			if err != nil {
				return nil, nil, err
			}
			s, err := postgres.Open(ctx, dbURL)
			if err != nil {
				return nil, nil, errors.Join(err, drop())
			}
			return storeHandler(ctx, s, func() error { return errors.Join(s.Close(), drop()) })
		}})
	}

	// all[round][senders index][subject index]
	all := make([][][]figures, cfg.rounds)
	var body int
	for round := range cfg.rounds {
		all[round] = make([][]figures, len(cfg.senders))
		for si, senders := range cfg.senders {
			warm := min(cfg.n, 20*senders)
			for _, sub := range subjects {
				tag := fmt.Sprintf("r%d-s%d-%s", round, senders, sub.key)
				fmt.Fprintf(os.Stderr, "round %d, %d senders: %s…\n", round+1, senders, sub.name)
				ds, err := deliveries(cfg.n+warm, tag)
				if err != nil {
					return err
				}
				body = len(ds[0].body)
				h, done, err := sub.open(ctx, tag)
				if err != nil {
					return fmt.Errorf("%s: %w", sub.name, err)
				}
				res, err := measure(sub.name, h, ds, warm, senders, sub.want)
				if err == nil {
					err = done(ds[len(ds)-1])
				} else {
					err = errors.Join(err, done(signed{}))
				}
				if err != nil {
					return fmt.Errorf("%s, %d senders: %w", sub.name, senders, err)
				}
				all[round][si] = append(all[round][si], figuresOf(res))
			}
		}
	}

	fmt.Printf("deliveries: %d measured per handler and sender count, after a warm-up of 20 per sender; body %d bytes; %d round(s)", cfg.n, body, cfg.rounds)
	if cfg.rounds > 1 {
		fmt.Print(", medians over them")
	}
	fmt.Printf("\nSQLite: a new file per measurement in %s\nPostgres: %s\n", cfg.dir, pgNote)
	fmt.Println("vs bare: the bare handler's throughput over this one's, and this one's latencies over the bare handler's,\nboth in the same round with the same senders; 1 is the floor, above 1 is slower")
	failed := 0
	for si, senders := range cfg.senders {
		fmt.Printf("\n%d sender(s)\n", senders)
		tb := stats.NewTable(os.Stdout)
		tb.Row("handler", "deliveries/s", "p50", "p99", "max", "failures", "", "vs bare: throughput", "p50", "p99", "max")
		for i, sub := range subjects {
			f := median(cfg.rounds, func(r int) figures { return all[r][si][i] })
			q := median(cfg.rounds, func(r int) figures { return ratio(all[r][si][i], all[r][si][0]) })
			failed += f.failures
			tb.Row(sub.name, fmt.Sprintf("%.0f", f.rate), stats.Dur(f.p50), stats.Dur(f.p99), stats.Dur(f.max), strconv.Itoa(f.failures),
				"", fmt.Sprintf("%.2f", q.rate), fmt.Sprintf("%.2f", q.p50), fmt.Sprintf("%.2f", q.p99), fmt.Sprintf("%.2f", q.max))
		}
		tb.Flush()
	}

	// The goal, on each database: judged on the medians.
	if len(cfg.senders) > 0 {
		fewest, most := 0, 0
		for i, c := range cfg.senders {
			if c < cfg.senders[fewest] {
				fewest = i
			}
			if c > cfg.senders[most] {
				most = i
			}
		}
		fmt.Printf("\ngoal (issue 18): p99 with %d senders within %d× the bare handler's; throughput with %d senders ≥ with %d; no delivery over %s\n",
			cfg.senders[most], goalP99Ratio, cfg.senders[most], cfg.senders[fewest], goalMax)
		for i, sub := range subjects {
			if !strings.Contains(sub.name, "+") {
				continue
			}
			q := median(cfg.rounds, func(r int) figures { return ratio(all[r][most][i], all[r][most][0]) })
			hi := median(cfg.rounds, func(r int) figures { return all[r][most][i] })
			lo := median(cfg.rounds, func(r int) figures { return all[r][fewest][i] })
			worst := 0.0
			for r := range cfg.rounds {
				for si := range cfg.senders {
					worst = max(worst, all[r][si][i].max)
				}
			}
			// On a machine busy with other work even the bare handler may
			// do less with more senders; its own ratio says how much of a
			// store's shortfall is the machine's.
			bareHi := median(cfg.rounds, func(r int) figures { return all[r][most][0] })
			bareLo := median(cfg.rounds, func(r int) figures { return all[r][fewest][0] })
			fmt.Printf("  %s: p99 %.1f× bare (%s); throughput %.0f/s vs %.0f/s, %.2f× (%s; the bare handler's own: %.2f×); slowest delivery %s (%s)\n",
				sub.name, q.p99, verdict(q.p99 <= goalP99Ratio), hi.rate, lo.rate, hi.rate/lo.rate, verdict(hi.rate >= lo.rate),
				bareHi.rate/bareLo.rate, stats.Dur(worst), verdict(worst <= goalMax.Seconds()))
		}
	}
	if failed > 0 {
		return errors.New("some deliveries failed")
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// median takes each figure's median over the rounds separately.
func median(rounds int, get func(round int) figures) figures {
	col := func(f func(figures) float64) float64 {
		v := make([]float64, rounds)
		for r := range rounds {
			v[r] = f(get(r))
		}
		return stats.Median(v)
	}
	failures := 0
	for r := range rounds {
		failures += get(r).failures
	}
	return figures{
		rate:     col(func(f figures) float64 { return f.rate }),
		p50:      col(func(f figures) float64 { return f.p50 }),
		p99:      col(func(f figures) float64 { return f.p99 }),
		max:      col(func(f figures) float64 { return f.max }),
		failures: failures,
	}
}

func handler(r webhook.Recorder) (http.Handler, error) {
	h, err := webhook.New(webhook.Config{
		Secret:   secret,
		BotLogin: "pullwright[bot]",
		Recorder: r,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, fmt.Errorf("webhook handler: %w", err)
	}
	return h, nil
}

// storeHandler is the real handler over s; its check spot-checks that the
// last delivery's task is in s, then closes it.
func storeHandler(ctx context.Context, s task.Store, closeStore func() error) (http.Handler, func(signed) error, error) {
	h, err := handler(s)
	if err != nil {
		return nil, nil, errors.Join(err, closeStore())
	}
	check := func(last signed) error {
		if last.id == "" {
			return closeStore()
		}
		probe := task.Task{Repo: pullwright.Repo{InstallationID: 1, Owner: "Codertocat", Name: "Hello-World"}, Issue: last.issue}
		got, err := s.Active(ctx, probe.IssueKey())
		if err != nil {
			return errors.Join(fmt.Errorf("last fix task not in the store: %w", err), closeStore())
		}
		if got.Kind != task.KindFix || got.DeliveryID != last.id {
			return errors.Join(fmt.Errorf("last task is %s from %s, want fix from %s", got.Kind, got.DeliveryID, last.id), closeStore())
		}
		return closeStore()
	}
	return h, check, nil
}

type signed struct {
	id    string
	issue int
	body  []byte
	sig   string
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
		out[i] = signed{id: fmt.Sprintf("bench-%s-%07d", tag, i), issue: 1000 + i, body: b, sig: sign(b)}
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
	target := "http://" + ln.Addr().String() + "/webhook"

	if _, err := send(client, target, ds[:warm], senders, want); err != nil {
		return result{}, fmt.Errorf("%s: warm-up: %w", name, err)
	}
	start := time.Now()
	res, err := send(client, target, ds[warm:], senders, want)
	res.elapsed = time.Since(start)
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
