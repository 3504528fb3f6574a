//go:build linux

package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pullwright/pullwright/internal/botproc"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/internal/pgtest"
	"github.com/pullwright/pullwright/task"
)

// Fix tasks completed per second by 1 and by 3 bot serve replicas on one
// Postgres, with a model whose every call takes a fixed time (the goal:
// 3 replicas at least 2.5 times 1, the workers and not the database being
// the limit). Run it as
//
//	go test ./cmd/bot -run '^$' -bench Replicas -benchtime 1x
//
// For each model latency, replicas=1 and then replicas=3 run one after the
// other in the same process; replicas=3 reports its tasks/s over that of
// the replicas=1 just before it as speedup: the machine is shared, so a
// ratio within one run says more than either figure. Each also reports
// what tells the limit apart: how many tasks the workers held on average
// (held, out of 4 per replica) and for how long each (held-s, from its
// claim to done), how busy the machine's CPUs were (busy-%), and the CPU
// time per task of the bots and of this process with its children (the
// fake GitHub, the git server's http-backend, the model). Workers that are
// the limit are all busy, each task taking as long as with fewer of them;
// a CPU that is the limit makes each task take longer the more run at
// once. At 2 s and 5 s a call the model's waiting dominates a task, at
// 50 ms the CPU work of the clone and push does: on a machine whose CPUs
// the fakes' git server fills, the longer latencies are where the workers,
// not the CPU, are the limit.
func BenchmarkReplicas(b *testing.B) {
	for _, latency := range []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 2 * time.Second, 5 * time.Second} {
		b.Run("model="+latency.String(), func(b *testing.B) {
			var one float64 // tasks/s of replicas=1 in this run
			for _, replicas := range []int{1, 3} {
				b.Run("replicas="+strconv.Itoa(replicas), func(b *testing.B) {
					var r result
					for range b.N {
						r.add(runReplicas(b, replicas, latency))
					}
					rate := float64(r.tasks) / r.elapsed.Seconds()
					b.ReportMetric(rate, "tasks/s")
					b.ReportMetric(100*r.busy.Seconds()/(r.elapsed.Seconds()*float64(r.cpus)), "busy-%")
					b.ReportMetric(float64(r.botCPU.Milliseconds())/float64(r.tasks), "bot-cpu-ms/task")
					b.ReportMetric(float64(r.fakesCPU.Milliseconds())/float64(r.tasks), "fakes-cpu-ms/task")
					b.ReportMetric(r.held.Seconds()/r.elapsed.Seconds(), "held")
					b.ReportMetric(r.held.Seconds()/float64(r.tasks), "held-s")
					// The steps of a held task: the clone, the model's turns,
					// the push and pull request.
					b.ReportMetric(r.prepare.Seconds()/float64(r.tasks), "prepare-s")
					b.ReportMetric(r.work.Seconds()/float64(r.tasks), "work-s")
					b.ReportMetric(r.publish.Seconds()/float64(r.tasks), "publish-s")
					switch {
					case replicas == 1:
						one = rate
					case one > 0:
						b.ReportMetric(rate/one, "speedup")
					}
				})
			}
		})
	}
}

const (
	benchIssues  = 48 // a multiple of 3 replicas × 4 workers
	benchWorkers = 4
)

// result is what one or more measurements add up to.
type result struct {
	tasks            int
	elapsed          time.Duration
	busy             time.Duration // CPU time the whole machine spent busy
	cpus             int
	botCPU, fakesCPU time.Duration
	held             time.Duration // the tasks' times from claim to done, summed
	// held, step by step: preparing, working and publishing.
	prepare, work, publish time.Duration
}

func (r *result) add(o result) {
	r.tasks += o.tasks
	r.elapsed += o.elapsed
	r.busy += o.busy
	r.cpus = o.cpus
	r.botCPU += o.botCPU
	r.fakesCPU += o.fakesCPU
	r.held += o.held
	r.prepare += o.prepare
	r.work += o.work
	r.publish += o.publish
}

// runReplicas starts replicas bots on a new Postgres database, delivers a
// fix for each of benchIssues issues, spread round-robin over them, and
// measures from the first delivery until no task is left undone.
func runReplicas(b *testing.B, replicas int, latency time.Duration) result {
	b.StopTimer()
	// The model edits the README and finishes: no command, so no approval
	// to wait for, and two calls per task.
	llm := fakellm.NewByTurn(b,
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("edit_file", map[string]any{"path": "README.md", "old_text": "comitt", "new_text": "commit"})}},
		fakellm.Step{ToolCalls: []fakellm.ToolCall{call("finish", map[string]any{"title": "Fix the spelling of commit", "summary": "Fixed."})}},
	).WithLatency(latency)
	// Under the default rates (5 at once, 30 an hour per installation) the
	// one installation's fixes would be refused past five: the rates are
	// raised to the task count, so they still apply but refuse none.
	config := filepath.Join(b.TempDir(), "operator.yml")
	limits := fmt.Sprintf("rate:\n  concurrent_tasks: %d\n  tasks_per_hour: %d\n", benchIssues, benchIssues)
	if err := os.WriteFile(config, []byte(limits), 0o600); err != nil {
		b.Fatal(err)
	}
	h := botproc.New(b, llm, botproc.Options{
		DatabaseURL: pgtest.URL(b),
		Workers:     benchWorkers,
		Issues:      benchIssues,
		Env:         []string{"BOT_CONFIG=" + config},
	})
	bots := []*botproc.Bot{h.Bot}
	for len(bots) < replicas {
		bots = append(bots, h.AddReplica())
	}
	// Made (on the fake GitHub too) before the clock starts: the time is
	// the bots'.
	payloads := make([][]byte, benchIssues)
	for i := range payloads {
		payloads[i] = h.CommentPayload(i+1, botproc.Owner, "/agent fix the typo")
	}

	before := takeCPU(b, bots)
	b.StartTimer()
	began := time.Now()
	// A sender per replica, each with its share: one bot's slow answer
	// holds up no other's deliveries.
	var wg sync.WaitGroup
	for r, bot := range bots {
		wg.Go(func() {
			for i := r; i < benchIssues; i += replicas {
				code, err := h.TryDeliverTo(bot, "fix-"+strconv.Itoa(i+1), "issue_comment", payloads[i])
				if err != nil || code != http.StatusAccepted {
					b.Errorf("fix for #%d answered %d, %v", i+1, code, err)
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	// Every task exists now (a 202 follows its commit): once none is left
	// unended, all are.
	deadline := began.Add(5 * time.Minute)
	for undone(b, h) > 0 {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d tasks not done after 5 minutes\n%s", undone(b, h), benchIssues, tail(bots))
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(began)
	b.StopTimer()
	after := takeCPU(b, bots)

	for i := 1; i <= benchIssues; i++ {
		if tk := h.Latest(i); tk == nil || tk.State != task.Done {
			b.Fatalf("#%d: %s\n%s", i, botproc.Describe(tk), tail(bots))
		}
	}
	if n, want := llm.Calls(), 2*benchIssues; n != want {
		b.Errorf("the model was called %d times, want %d (two a task)", n, want)
	}
	steps := heldSteps(b, bots)
	return result{
		held:     steps[task.Done],
		prepare:  steps[task.Working],
		work:     steps[task.Publishing] - steps[task.Working],
		publish:  steps[task.Done] - steps[task.Publishing],
		tasks:    benchIssues,
		elapsed:  elapsed,
		busy:     after.busy - before.busy,
		cpus:     after.cpus,
		botCPU:   after.bots - before.bots,
		fakesCPU: after.self - before.self,
	}
}

// undone counts the tasks of any kind not yet ended.
func undone(b *testing.B, h *botproc.Harness) int {
	b.Helper()
	counts, err := h.Store().Counts(context.Background())
	if err != nil {
		b.Fatalf("count tasks: %v", err)
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// heldSteps sums, over the tasks, the time from a worker's first claim
// (the move out of queued) to the first move into working, into
// publishing and into done, as the bots logged them.
func heldSteps(b *testing.B, bots []*botproc.Bot) map[task.State]time.Duration {
	b.Helper()
	claimed, moved := map[int64]time.Time{}, map[task.State]map[int64]time.Time{}
	for _, bot := range bots {
		for line := range strings.Lines(bot.Logs()) {
			var l struct {
				Time     time.Time `json:"time"`
				Msg      string    `json:"msg"`
				Task     int64     `json:"task_id"`
				From, To task.State
			}
			if json.Unmarshal([]byte(line), &l) != nil || l.Msg != "task moved" {
				continue
			}
			if _, ok := claimed[l.Task]; !ok && l.From == task.Queued {
				claimed[l.Task] = l.Time
			}
			if moved[l.To] == nil {
				moved[l.To] = map[int64]time.Time{}
			}
			if _, ok := moved[l.To][l.Task]; !ok {
				moved[l.To][l.Task] = l.Time
			}
		}
	}
	out := map[task.State]time.Duration{}
	for _, s := range []task.State{task.Working, task.Publishing, task.Done} {
		if len(moved[s]) != benchIssues || len(claimed) != benchIssues {
			b.Fatalf("the logs show %d tasks claimed and %d moved to %s, want %d", len(claimed), len(moved[s]), s, benchIssues)
		}
		for id, at := range moved[s] {
			out[s] += at.Sub(claimed[id])
		}
	}
	return out
}

// tail is the end of each bot's output, for a failure.
func tail(bots []*botproc.Bot) string {
	var s strings.Builder
	for i, bot := range bots {
		logs := bot.Logs()
		fmt.Fprintf(&s, "--- replica %d:\n%s\n", i, logs[max(0, len(logs)-4000):])
	}
	return s.String()
}

// cpuTimes are CPU clocks read at one moment.
type cpuTimes struct {
	busy time.Duration // the machine's, summed over its CPUs (/proc/stat)
	cpus int
	bots time.Duration // the bot processes' user and system time
	self time.Duration // this process's and its waited-for children's
}

// clockTick is USER_HZ, the unit of /proc's CPU times: 100 on Linux
// everywhere (sysconf(_SC_CLK_TCK) is not reachable without cgo).
const clockTick = 10 * time.Millisecond

func takeCPU(b *testing.B, bots []*botproc.Bot) cpuTimes {
	b.Helper()
	var c cpuTimes
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatalf("read the CPU times: %v", err)
	}
	for line := range strings.Lines(string(stat)) {
		f := strings.Fields(line)
		switch {
		case len(f) > 5 && f[0] == "cpu":
			// user nice system idle iowait irq softirq steal …: all but
			// idle and iowait is busy.
			for i, v := range f[1:] {
				n, _ := strconv.ParseInt(v, 10, 64)
				if i != 3 && i != 4 && i < 8 {
					c.busy += time.Duration(n) * clockTick
				}
			}
		case strings.HasPrefix(f[0], "cpu"):
			c.cpus++
		}
	}
	for _, bot := range bots {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", bot.PID()))
		if err != nil {
			b.Fatalf("read a bot's CPU time: %v", err)
		}
		// After the command name, which may hold spaces: state is field 3,
		// utime and stime fields 14 and 15.
		_, rest, _ := strings.Cut(string(raw), ") ")
		f := strings.Fields(rest)
		for _, v := range f[11:13] {
			n, _ := strconv.ParseInt(v, 10, 64)
			c.bots += time.Duration(n) * clockTick
		}
	}
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			b.Fatalf("getrusage: %v", err)
		}
		c.self += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return c
}
