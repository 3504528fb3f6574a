// Command approvals measures what waiting for approval costs the real bot,
// and how fast an approval reaches the sandbox.
//
//	go run ./bench/approvals [-tasks 1000] [-approvals 200] [-workers 4] [-senders 8] [-wait 1h] [-postgres DSN]
//
// It builds ./cmd/bot and runs `bot serve` as a child process (BOT_RUNNER=local,
// SQLite, or with -postgres a new database on that server, where the queue
// is River's) against the test servers: a fake GitHub with -tasks issues, a real
// git http-backend server, and a model that answers every turn by asking to
// run a command. Everything is on 127.0.0.1. The bot gets an operator
// configuration (BOT_CONFIG) whose rates admit all -tasks fixes; under the
// default rates nearly all of them would be refused.
//
//  1. Parking: one signed "/agent fix" delivery per issue; every task clones,
//     asks to run its command, posts the request and parks. The figures are
//     the time until every task is a parked row (awaiting approval, no lease),
//     and the bot's go_goroutines and resident memory (its /metrics and
//     /proc/<pid>/status) idle before, and idle after with all tasks parked.
//  2. Approval latency: -approvals tasks, one after another, each get a signed
//     "/approve". The approved command is `date +%s%N >> FILE`; the latency is
//     the time it wrote minus the time taken just before the delivery was
//     posted. After each one the bot is left to park the task again (its model
//     asks for another run) before the next approval, so each is measured on
//     an idle bot with -tasks parked rows.
//
// It is a program rather than a `go test -bench` benchmark because it is one
// long measurement of a fixed workload with its own figures (goroutines,
// memory, time to park N tasks, latency percentiles), not an operation
// repeated b.N times; as in ./bench/ingest and ./bench/clone, the flags say
// the workload. The test servers take a testing.TB, so this program hands
// them a small one of its own (tb.go).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/pullwright/pullwright/bench/internal/stats"
	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/pgtest"
)

func main() {
	tasks := flag.Int("tasks", 1000, "tasks to park (issues), at most 10000")
	approvals := flag.Int("approvals", 200, "approvals to time, one after another (at most -tasks)")
	workers := flag.Int("workers", 4, "BOT_WORKERS")
	senders := flag.Int("senders", 8, "concurrent senders of the /agent fix deliveries")
	settle := flag.Duration("settle", 5*time.Second, "idle time before each goroutine/memory reading (the workers poll every 2s)")
	// Parking costs each task a clone, a model turn, a push, a pull request
	// and three comments: 10,000 took longer than half an hour on a busy
	// 2-core machine.
	wait := flag.Duration("wait", time.Hour, "how long to wait for every task to park")
	pg := flag.String("postgres", "", "postgres:// URL of a user who may create databases: run the bot on a new database there instead of SQLite")
	flag.Parse()
	if *tasks < 1 || *tasks > 10000 || *approvals < 0 || *approvals > *tasks || *workers < 1 || *senders < 1 {
		fmt.Fprintln(os.Stderr, "approvals: want 1 ≤ -tasks ≤ 10000, 0 ≤ -approvals ≤ -tasks, -workers ≥ 1, -senders ≥ 1")
		os.Exit(2)
	}
	t := newTB("approvals")
	code := 0
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fatal); !ok {
					panic(r)
				}
				code = 1
			}
		}()
		database := ""
		if *pg != "" {
			// pgtest reads its server from the environment.
			os.Setenv(pgtest.Env, *pg)
			database = pgtest.URL(t)
		}
		run(t, *tasks, *approvals, *workers, *senders, *settle, *wait, database)
	}()
	t.cleanup()
	botproc.Cleanup()
	if t.Failed() {
		code = 1
	}
	os.Exit(code)
}

// sample is the bot's footprint at one moment.
type sample struct {
	goroutines    float64
	residentBytes float64 // process_resident_memory_bytes
	heapInuse     float64 // go_memstats_heap_inuse_bytes: what the heap holds now, apart from memory the runtime has freed but not yet returned, which RSS still counts
	vmRSS, vmHWM  int64   // /proc/<pid>/status
	sockets       int     // open sockets (/proc/<pid>/fd): the listener and keep-alive connections
}

func measure(t *tb, h *botproc.Harness, settle time.Duration) sample {
	time.Sleep(settle)
	// Our own keep-alive connections to the bot would each hold a goroutine
	// in it; they are the load generator's, not the bot's.
	h.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond)
	st, err := h.Bot.ProcStatus("VmRSS", "VmHWM")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	s := sample{
		goroutines:    h.Bot.Metric("go_goroutines"),
		residentBytes: h.Bot.Metric("process_resident_memory_bytes"),
		heapInuse:     h.Bot.Metric("go_memstats_heap_inuse_bytes"),
		vmRSS:         st["VmRSS"],
		vmHWM:         st["VmHWM"],
		sockets:       sockets(t, h.Bot.PID()),
	}
	return s
}

func run(t *tb, tasks, approvals, workers, senders int, settle, wait time.Duration, database string) {
	starts := filepath.Join(t.TempDir(), "starts.ns")
	command := "date +%s%N >> " + starts
	llm := fakellm.NewFunc(t, func(req openai.ChatCompletionRequest) fakellm.Step {
		args, _ := json.Marshal(map[string]string{"command": command, "reason": "benchmark"})
		return fakellm.Step{ToolCalls: []fakellm.ToolCall{{Name: "run", Arguments: string(args)}}}
	})
	// The operator's rates must admit every task: under the defaults (5
	// at once, 30 an hour per installation) all but five of the fixes are
	// refused, and no more than five ever park. Both are set to the task
	// count, so the rates still apply (the usage is counted for every
	// task) but refuse none.
	config := filepath.Join(t.TempDir(), "operator.yml")
	limits := fmt.Sprintf("rate:\n  concurrent_tasks: %d\n  tasks_per_hour: %d\n", tasks, tasks)
	if err := os.WriteFile(config, []byte(limits), 0o600); err != nil {
		t.Fatalf("write the operator configuration: %v", err)
	}
	fmt.Printf("building and starting the bot (%d workers, %d issues, operator rates: %d at once, %d an hour)…\n", workers, tasks, tasks, tasks)
	h := botproc.New(t, llm, botproc.Options{Workers: workers, Issues: tasks, DatabaseURL: database, Env: []string{"BOT_CONFIG=" + config}})
	idle := measure(t, h, settle)

	// 1. Park every task.
	fmt.Printf("delivering %d /agent fix comments with %d senders…\n", tasks, senders)
	fromCall := len(h.GitHub.Requests())
	at100 := -1 // the fake's request count when 100 tasks had parked
	began := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failures atomic.Int64
	for range senders {
		wg.Go(func() {
			for {
				issue := int(next.Add(1))
				if issue > tasks {
					return
				}
				body := h.CommentPayload(issue, botproc.Owner, "/agent fix the typo")
				code, err := h.TryDeliver("fix-"+strconv.Itoa(issue), "issue_comment", body)
				if err != nil || code != http.StatusAccepted {
					failures.Add(1)
					t.Errorf("delivery for #%d: %d %v", issue, code, err)
				}
			}
		})
	}
	wg.Wait()
	delivered := time.Since(began)
	if failures.Load() > 0 {
		t.Fatalf("%d deliveries failed", failures.Load())
	}
	deadline := time.Now().Add(wait)
	lastReport := time.Now()
	for h.Parked() < tasks {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d tasks parked after %s (-wait)\n%s", h.Parked(), tasks, wait, tail(h.Bot.Logs()))
		}
		if !h.Bot.Running() {
			t.Fatalf("the bot died\n%s", tail(h.Bot.Logs()))
		}
		// A task that ended never parks: say so rather than wait out the
		// deadline (a refusal by the rates, a failed step).
		if ended := tasks - active(t, h); ended > 0 {
			t.Fatalf("%d of %d fix tasks ended without parking\n%s", ended, tasks, tail(h.Bot.Logs()))
		}
		if at100 < 0 && h.Parked() >= min(100, tasks) {
			at100 = len(h.GitHub.Requests())
		}
		if time.Since(lastReport) > 10*time.Second {
			fmt.Printf("  %d/%d parked after %s\n", h.Parked(), tasks, time.Since(began).Round(time.Second))
			lastReport = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	parkedIn := time.Since(began)
	calls := llm.Calls()
	ghCalls := gitHubCalls(h, fromCall, at100, tasks)
	parked := measure(t, h, settle)

	// 2. Time approvals, one at a time.
	fmt.Printf("timing %d approvals…\n", approvals)
	lat := make([]time.Duration, 0, approvals)
	for i := 1; i <= approvals; i++ {
		body := h.CommentPayload(i, botproc.Owner, "/approve")
		before := len(readStarts(t, starts))
		sent := time.Now()
		if code := h.Deliver("approve-"+strconv.Itoa(i), "issue_comment", body); code != http.StatusAccepted {
			t.Fatalf("/approve on #%d answered %d", i, code)
		}
		var got []int64
		until := time.Now().Add(time.Minute)
		for got = readStarts(t, starts); len(got) <= before; got = readStarts(t, starts) {
			if time.Now().After(until) {
				t.Fatalf("the command approved on #%d never started\n%s", i, tail(h.Bot.Logs()))
			}
			time.Sleep(time.Millisecond)
		}
		if len(got) != before+1 {
			t.Fatalf("%d commands started for one approval", len(got)-before)
		}
		lat = append(lat, time.Duration(got[len(got)-1]-sent.UnixNano()))
		// Let the task park again (its model asks for another run).
		until = time.Now().Add(time.Minute)
		for h.Parked() < tasks {
			if time.Now().After(until) {
				t.Fatalf("task #%d did not park again\n%s", i, tail(h.Bot.Logs()))
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	after := measure(t, h, settle)

	// Report.
	cpus := runtime.NumCPU()
	store := "SQLite"
	if database != "" {
		store = "Postgres, River queue"
	}
	fmt.Printf("\nbot serve (BOT_RUNNER=local, %s, BOT_WORKERS=%d) on %d CPUs, %s; fakes and git http-backend in this process, all on loopback\n\n", store, workers, cpus, runtime.Version())
	fmt.Printf("Parking %d tasks: deliveries sent in %s (%d senders); all %d parked (awaiting approval, no lease) after %s (%.0f tasks/s); %d model calls\n\n",
		tasks, delivered.Round(time.Millisecond), senders, tasks, parkedIn.Round(time.Millisecond), float64(tasks)/parkedIn.Seconds(), calls)
	fmt.Println(ghCalls)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "bot, idle %s after\t go_goroutines\t open sockets\t go_memstats_heap_inuse_bytes\t process_resident_memory_bytes\t VmRSS\t VmHWM (peak)\t\n", settle)
	row := func(name string, s sample) {
		fmt.Fprintf(w, "%s\t %.0f\t %d\t %s\t %s\t %s\t %s\t\n", name, s.goroutines, s.sockets, mib(int64(s.heapInuse)), mib(int64(s.residentBytes)), mib(s.vmRSS), mib(s.vmHWM))
	}
	row("start, nothing to do", idle)
	row(fmt.Sprintf("%d tasks parked", tasks), parked)
	row(fmt.Sprintf("%d approvals later, %d parked again", approvals, tasks), after)
	w.Flush()
	if approvals > 0 {
		slices.Sort(lat)
		fmt.Printf("\nApproval latency, signed /approve POSTed → approved command started (its own `date +%%s%%N`), %d approvals one at a time, %d tasks parked:\n", approvals, tasks)
		w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "min\t p50\t p90\t p99\t max\t")
		fmt.Fprintf(w, "%s\t %s\t %s\t %s\t %s\t\n", ms(lat[0]), ms(stats.Percentile(lat, 0.50)), ms(stats.Percentile(lat, 0.90)), ms(stats.Percentile(lat, 0.99)), ms(lat[len(lat)-1]))
		w.Flush()
	}
}

// gitHubCalls reports the GitHub API calls the fake answered while the
// tasks parked (from its request log, from index from on), per parked task:
// over the first 100 to park (up to index at100) and over all of them, with
// the check-run listings among them and how many approval check runs the
// busiest commit holds, so that a cost growing with the runs on a commit
// shows.
func gitHubCalls(h *botproc.Harness, from, at100, tasks int) string {
	reqs := h.GitHub.Requests()
	if at100 < 0 {
		at100 = len(reqs)
	}
	count := func(rs []fakegithub.Request) (calls, lists int) {
		for _, r := range rs {
			if !strings.HasPrefix(r.Path, "/repos/") {
				continue // tokens and the app: minted and cached, not per task
			}
			calls++
			if r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/check-runs") {
				lists++
			}
		}
		return calls, lists
	}
	first, firstLists := count(reqs[from:at100])
	all, allLists := count(reqs[from:])
	perCommit := map[string]int{}
	for _, cr := range h.GitHub.CheckRuns(botproc.Owner, botproc.Repo) {
		if cr.Name == "pullwright / approval" {
			perCommit[cr.HeadSHA]++
		}
	}
	most := 0
	for _, n := range perCommit {
		most = max(most, n)
	}
	n100 := min(100, tasks)
	return fmt.Sprintf("GitHub API calls while parking (repository calls; tokens left out): %.2f per task over the first %d parked (%d check-run listings), %.2f per task over all %d (%d check-run listings); approval check runs on %d commits, %d on the busiest\n",
		float64(first)/float64(n100), n100, firstLists, float64(all)/float64(tasks), tasks, allLists, len(perCommit), most)
}

// active counts the tasks that have not ended: here every task is a fix,
// so the tasks less these are the fixes that ended.
func active(t *tb, h *botproc.Harness) int {
	counts, err := h.Store().Counts(context.Background())
	if err != nil {
		t.Fatalf("count tasks: %v", err)
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// sockets counts the open sockets of process pid.
func sockets(t *tb, pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
func mib(b int64) string        { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
func tail(logs string) string   { return logs[max(0, len(logs)-8000):] }
func readStarts(t *tb, p string) []int64 {
	raw, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	lines := bytes.Split(raw, []byte("\n"))
	// The last piece follows the last newline: empty, or a line still being
	// written, read next time.
	lines = lines[:len(lines)-1]
	out := make([]int64, 0, len(lines))
	for _, l := range lines {
		n, err := strconv.ParseInt(string(l), 10, 64)
		if err != nil {
			t.Fatalf("%s: line %q: %v", p, l, err)
		}
		out = append(out, n)
	}
	return out
}
