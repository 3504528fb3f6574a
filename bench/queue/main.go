// Command queue measures the task queue engines side by side, to decide
// which one the embedded (SQLite) default runs on: the SQLite store's own
// polling queue (Record, Claim, Save, Release under a lease, through
// task.Pool as the bot runs it), River on SQLite (riversqlite over
// modernc.org/sqlite) and, for reference, River on Postgres (riverpgxv5)
// and the Postgres store as the bot runs it (River jobs plus the lease).
//
//	go run ./bench/queue [-n 400] [-paced 100] [-every 50ms] [-workers 4] [-producers 4] [-rounds 1] [-postgres DSN]
//	go run ./bench/queue -kill [-rescue-after 10s] [-lease 10s] [-observe 45s]
//
// Each engine gets a new, empty database (a file in a temporary directory;
// a new database on the Postgres server that -postgres, default
// $PULLWRIGHT_TEST_POSTGRES, names, as a user who may create databases)
// and is measured in three phases:
//
//   - warm-up: a few items, not measured;
//   - burst: -producers goroutines record -n items as fast as they can while
//     -workers workers take them: items per second from the first record
//     to the last item done, each record transaction's latency (webhook
//     ingest's write, contended by the workers and the engine's own
//     queries), and each item's wait from its commit to a worker taking it
//     (a backlog, so mostly queueing);
//   - paced: one producer records -paced items, one every -every, on an idle
//     queue: the wait from commit to a worker taking it is the pickup
//     latency a webhook sees.
//
// An item is what the bot's Record writes (a delivery row and a fix task
// row, linked, in one transaction) and, for River, the job inserted in that
// same transaction (InsertTx, unique by its arguments as the Postgres store
// inserts them). A worker marks the task done: the SQLite store's Claim,
// Save and Release; River's worker updates the task row and completes the
// job in the same transaction (river.JobCompleteTx).
//
// The machine may be shared and noisy, so each figure is also given as a
// ratio to the best of the same column in the same round.
//
// With -features (the default) the program also checks, on River's SQLite
// driver, the River features the Postgres queue uses. With -kill it runs
// the kill -9 experiments instead (kill.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"

	"github.com/pullwright/pullwright/bench/internal/benchpg"
	"github.com/pullwright/pullwright/bench/internal/stats"
)

type config struct {
	n, paced, workers, producers, rounds int
	every, cooldown                      time.Duration
	postgres                             string
	dir                                  string
	features                             bool
	log                                  *slog.Logger
}

func main() {
	var cfg config
	flag.IntVar(&cfg.n, "n", 400, "items recorded in the burst phase, per engine")
	flag.IntVar(&cfg.paced, "paced", 100, "items recorded one at a time in the paced phase, per engine")
	flag.DurationVar(&cfg.every, "every", 50*time.Millisecond, "interval between two records in the paced phase")
	flag.IntVar(&cfg.workers, "workers", 4, "workers per engine (the bot's default BOT_WORKERS)")
	flag.IntVar(&cfg.producers, "producers", 4, "concurrent recorders in the burst phase (webhook deliveries at once)")
	flag.IntVar(&cfg.rounds, "rounds", 1, "rounds of the whole measurement; figures are medians, with the spread")
	flag.DurationVar(&cfg.cooldown, "cooldown", time.Millisecond, "FetchCooldown of the River clients measured for their capacity (River's least, 1ms); one row has River's default (100ms), as the Postgres store has")
	flag.StringVar(&cfg.postgres, "postgres", os.Getenv("PULLWRIGHT_TEST_POSTGRES"), "postgres:// URL of a user who may create databases (default $PULLWRIGHT_TEST_POSTGRES); empty leaves Postgres out")
	flag.StringVar(&cfg.dir, "dir", "", "directory for the SQLite files (default: a new temporary directory, removed afterwards)")
	flag.BoolVar(&cfg.features, "features", true, "check the River features the queue uses on River's SQLite driver")
	kill := flag.Bool("kill", false, "run the kill -9 experiments instead of the throughput measurement")
	var kc killConfig
	flag.DurationVar(&kc.rescueAfter, "rescue-after", 10*time.Second, "-kill: River's RescueStuckJobsAfter for the rescue experiment (River's default is 1h)")
	flag.DurationVar(&kc.lease, "lease", 10*time.Second, "-kill: the SQLite store's lease for the lease experiment (BOT_LEASE, default 1m)")
	flag.DurationVar(&kc.observe, "observe", 45*time.Second, "-kill: how long to watch the job under River's default rescue")
	child := flag.String("child", "", "internal: run as the child process of -kill (river-block, store-block, river-insert, store-insert)")
	childDB := flag.String("db", "", "internal: the database file of -child")
	flag.Parse()
	cfg.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	if *child != "" {
		if err := runChild(*child, *childDB, kc.lease); err != nil {
			fmt.Fprintln(os.Stderr, "queue child:", err)
			os.Exit(1)
		}
		return
	}
	if cfg.n < 1 || cfg.paced < 1 || cfg.workers < 1 || cfg.producers < 1 || cfg.rounds < 1 || cfg.every <= 0 {
		fmt.Fprintln(os.Stderr, "queue: want -n, -paced, -workers, -producers, -rounds ≥ 1 and -every > 0")
		os.Exit(2)
	}
	if cfg.dir == "" {
		d, err := os.MkdirTemp("", "pullwright-queue-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "queue: temporary directory:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(d)
		cfg.dir = d
	}
	var err error
	if *kill {
		kc.dir, kc.log = cfg.dir, cfg.log
		err = runKill(kc)
	} else {
		err = run(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "queue:", err)
		os.RemoveAll(cfg.dir)
		os.Exit(1)
	}
}

// engine is one queue under measurement, on a fresh database.
type engine interface {
	// start begins working items: the engine calls tr.take(i) when a
	// worker takes item i and tr.finish(i) when it is done with it.
	start(ctx context.Context, tr *tracker) error
	// record commits item i the way the bot's Record would.
	record(ctx context.Context, i int) error
	// stop stops the workers and closes the database.
	stop() error
}

// subject names an engine and opens a fresh one.
type subject struct {
	name string
	open func(ctx context.Context, tag string) (engine, error)
}

// tracker keeps each item's times. Items are numbered across the phases of
// one engine, so each phase has its own range.
type tracker struct {
	insert    []time.Duration // the record transaction, begin to commit
	committed []time.Time     // when the record returned
	taken     []atomic.Int64  // unix ns of the first take
	finished  []atomic.Bool
	done      atomic.Int64
	twice     atomic.Int64 // items taken more than once
	signal    chan struct{}
}

func newTracker(n int) *tracker {
	return &tracker{
		insert:    make([]time.Duration, n),
		committed: make([]time.Time, n),
		taken:     make([]atomic.Int64, n),
		finished:  make([]atomic.Bool, n),
		signal:    make(chan struct{}, 1),
	}
}

func (t *tracker) take(i int) {
	if i < 0 || i >= len(t.taken) {
		return
	}
	if !t.taken[i].CompareAndSwap(0, time.Now().UnixNano()) {
		t.twice.Add(1)
	}
}

func (t *tracker) finish(i int) {
	if i < 0 || i >= len(t.finished) || !t.finished[i].CompareAndSwap(false, true) {
		return
	}
	t.done.Add(1)
	select {
	case t.signal <- struct{}{}:
	default:
	}
}

// waitDone waits until count items are finished in all.
func (t *tracker) waitDone(ctx context.Context, count int) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for t.done.Load() < int64(count) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d items done: %w", t.done.Load(), count, context.Cause(ctx))
		case <-t.signal:
		case <-tick.C:
		}
	}
	return nil
}

// figures are one engine's numbers in one round.
type figures struct {
	rate             float64 // burst items/s
	ins50, ins99     float64 // burst record transaction, seconds
	wait50, wait99   float64 // burst commit-to-take, seconds
	pick50, pick99   float64 // paced commit-to-take, seconds
	pickMax          float64
	twice, failedIns int
}

// columns lists the figures in table order; higher says whether more is
// better.
var columns = []struct {
	head   string
	get    func(figures) float64
	higher bool
	rate   bool
}{
	{"burst items/s", func(f figures) float64 { return f.rate }, true, true},
	{"record p50", func(f figures) float64 { return f.ins50 }, false, false},
	{"record p99", func(f figures) float64 { return f.ins99 }, false, false},
	{"burst wait p50", func(f figures) float64 { return f.wait50 }, false, false},
	{"burst wait p99", func(f figures) float64 { return f.wait99 }, false, false},
	{"pickup p50", func(f figures) float64 { return f.pick50 }, false, false},
	{"pickup p99", func(f figures) float64 { return f.pick99 }, false, false},
}

func run(cfg config) error {
	ctx := context.Background()
	subjects := []subject{
		{"SQLite store (ours: Claim/Save/Release, lease)", func(ctx context.Context, tag string) (engine, error) {
			return openSQLiteStore(ctx, filepath.Join(cfg.dir, tag+".db"), cfg)
		}},
		{"River on SQLite, write connection shared", func(ctx context.Context, tag string) (engine, error) {
			return openRiverSQLite(ctx, filepath.Join(cfg.dir, tag+".db"), false, cfg.cooldown, cfg)
		}},
		{"River on SQLite, River's own connection", func(ctx context.Context, tag string) (engine, error) {
			return openRiverSQLite(ctx, filepath.Join(cfg.dir, tag+".db"), true, cfg.cooldown, cfg)
		}},
		{"River on SQLite, shared, default cooldown", func(ctx context.Context, tag string) (engine, error) {
			return openRiverSQLite(ctx, filepath.Join(cfg.dir, tag+".db"), false, river.FetchCooldownDefault, cfg)
		}},
	}
	pgNote := "left out: give -postgres URL or set PULLWRIGHT_TEST_POSTGRES (dsn=$(scripts/test-postgres.sh start DIR) starts a throwaway server)"
	if cfg.postgres != "" {
		note, err := benchpg.Settings(ctx, cfg.postgres, "a new database per engine; synchronous_commit=on on the engines' connections")
		if err != nil {
			return err
		}
		pgNote = note
		subjects = append(subjects,
			subject{"River on Postgres", func(ctx context.Context, tag string) (engine, error) {
				return openRiverPostgres(ctx, cfg.cooldown, cfg)
			}},
			subject{"Postgres store (ours: River jobs + lease)", func(ctx context.Context, tag string) (engine, error) {
				return openPostgresStore(ctx, cfg)
			}})
	}

	all := make([][]figures, cfg.rounds)
	for round := range cfg.rounds {
		for si, sub := range subjects {
			fmt.Fprintf(os.Stderr, "round %d: %s…\n", round+1, sub.name)
			f, err := measure(ctx, sub, fmt.Sprintf("r%d-e%d", round, si), cfg)
			if err != nil {
				return fmt.Errorf("%s: %w", sub.name, err)
			}
			all[round] = append(all[round], f)
		}
	}
	var feat []string
	if cfg.features {
		fmt.Fprintln(os.Stderr, "River features on SQLite…")
		var err error
		feat, err = checkFeatures(ctx, filepath.Join(cfg.dir, "features.db"), cfg)
		if err != nil {
			return fmt.Errorf("features: %w", err)
		}
	}

	fmt.Printf("items: %d in the burst (%d producers), %d paced (one every %s); %d workers per engine; %d round(s)",
		cfg.n, cfg.producers, cfg.paced, cfg.every, cfg.workers, cfg.rounds)
	if cfg.rounds > 1 {
		fmt.Print(", medians [min–max] over them")
	}
	fmt.Printf("\nSQLite: WAL, synchronous=NORMAL, a new file per engine in %s\nPostgres: %s\n", cfg.dir, pgNote)
	fmt.Println("record: the Record transaction (delivery + task rows, and the job), begin to commit, while the workers work;")
	fmt.Println("wait: commit to a worker taking the item, in the burst (a backlog) and paced on an idle queue (pickup)")
	fmt.Println("(×N): the best of the column in the same round over this one's, or this one's over the best; 1 is the best, above 1 is worse")
	fmt.Println()
	tb := stats.NewTable(os.Stdout)
	heads := []string{"engine"}
	for _, c := range columns {
		heads = append(heads, c.head)
	}
	tb.Row(heads...)
	for si, sub := range subjects {
		row := []string{sub.name}
		for _, c := range columns {
			vals := make([]float64, cfg.rounds)
			ratios := make([]float64, cfg.rounds)
			for r := range cfg.rounds {
				vals[r] = c.get(all[r][si])
				best := c.get(all[r][0])
				for _, f := range all[r] {
					v := c.get(f)
					if (c.higher && v > best) || (!c.higher && v < best) {
						best = v
					}
				}
				if c.higher {
					ratios[r] = best / vals[r]
				} else {
					ratios[r] = vals[r] / max(best, 1e-9)
				}
			}
			cell := fmt.Sprintf("%s (×%.1f)", show(stats.Median(vals), c.rate), stats.Median(ratios))
			if cfg.rounds > 1 {
				cell += fmt.Sprintf(" [%s–%s]", show(slices.Min(vals), c.rate), show(slices.Max(vals), c.rate))
			}
			row = append(row, cell)
		}
		tb.Row(row...)
	}
	tb.Flush()
	fmt.Println()
	for si, sub := range subjects {
		twice, failed, worst := 0, 0, 0.0
		for r := range cfg.rounds {
			twice += all[r][si].twice
			failed += all[r][si].failedIns
			worst = max(worst, all[r][si].pickMax)
		}
		fmt.Printf("%s: slowest pickup %s; items taken twice %d; records failed and retried %d\n", sub.name, stats.Dur(worst), twice, failed)
	}
	if len(feat) > 0 {
		fmt.Println("\nRiver's SQLite driver, the features the Postgres queue uses:")
		for _, l := range feat {
			fmt.Println("  " + l)
		}
	}
	return nil
}

// measure runs the three phases on a fresh engine.
func measure(ctx context.Context, sub subject, tag string, cfg config) (figures, error) {
	const warm = 20
	burstFrom, pacedFrom := warm, warm+cfg.n
	total := pacedFrom + cfg.paced
	tr := newTracker(total)
	e, err := sub.open(ctx, tag)
	if err != nil {
		return figures{}, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := e.start(runCtx, tr); err != nil {
		return figures{}, errors.Join(err, e.stop())
	}
	var f figures
	err = func() error {
		// Every phase has a deadline: an engine that stalls fails the
		// run instead of hanging it.
		phase := func(d time.Duration) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, d)
		}
		c, stop := phase(time.Minute)
		defer stop()
		if _, err := burst(c, e, tr, 0, burstFrom, cfg.producers); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		c, stop = phase(3 * time.Minute)
		defer stop()
		elapsed, err := burst(c, e, tr, burstFrom, pacedFrom, cfg.producers)
		if err != nil {
			return fmt.Errorf("burst: %w", err)
		}
		f.rate = float64(cfg.n) / elapsed.Seconds()
		ins := durations(burstFrom, pacedFrom, func(i int) time.Duration { return tr.insert[i] })
		f.ins50, f.ins99 = pct(ins, 0.50), pct(ins, 0.99)
		w := waits(tr, burstFrom, pacedFrom)
		f.wait50, f.wait99 = pct(w, 0.50), pct(w, 0.99)
		c, stop = phase(time.Duration(cfg.paced)*cfg.every + time.Minute)
		defer stop()
		if err := paced(c, e, tr, pacedFrom, total, cfg.every); err != nil {
			return fmt.Errorf("paced: %w", err)
		}
		p := waits(tr, pacedFrom, total)
		f.pick50, f.pick99, f.pickMax = pct(p, 0.50), pct(p, 0.99), pct(p, 1)
		f.twice = int(tr.twice.Load())
		return nil
	}()
	cancel()
	return f, errors.Join(err, e.stop())
}

// burst records items [from, to) from producers goroutines as fast as the
// engine takes them and returns the time until all of them are done.
func burst(ctx context.Context, e engine, tr *tracker, from, to, producers int) (time.Duration, error) {
	start := time.Now()
	var next atomic.Int64
	next.Store(int64(from))
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range producers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= to {
					return
				}
				if err := recordOne(ctx, e, tr, i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return 0, first
	}
	if err := tr.waitDone(ctx, to); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// paced records items [from, to) one every interval, on schedule however
// long each record takes, and waits until all are done.
func paced(ctx context.Context, e engine, tr *tracker, from, to int, every time.Duration) error {
	start := time.Now()
	for i := from; i < to; i++ {
		if d := time.Until(start.Add(time.Duration(i-from) * every)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		if err := recordOne(ctx, e, tr, i); err != nil {
			return err
		}
	}
	return tr.waitDone(ctx, to)
}

func recordOne(ctx context.Context, e engine, tr *tracker, i int) error {
	t0 := time.Now()
	if err := e.record(ctx, i); err != nil {
		return fmt.Errorf("record item %d: %w", i, err)
	}
	tr.committed[i] = time.Now()
	tr.insert[i] = tr.committed[i].Sub(t0)
	return nil
}

// waits are the commit-to-take times of items [from, to). A worker may
// take an item between its commit and the record returning: that is a
// wait of zero, not a negative one.
func waits(tr *tracker, from, to int) []time.Duration {
	return durations(from, to, func(i int) time.Duration {
		return max(time.Unix(0, tr.taken[i].Load()).Sub(tr.committed[i]), 0)
	})
}

func durations(from, to int, get func(int) time.Duration) []time.Duration {
	out := make([]time.Duration, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, get(i))
	}
	return out
}

// pct is the p-quantile in seconds; 1 is the max.
func pct(d []time.Duration, p float64) float64 { return stats.Percentile(d, p).Seconds() }

func show(v float64, rate bool) string {
	if rate {
		return fmt.Sprintf("%.0f/s", v)
	}
	return stats.Dur(v)
}
