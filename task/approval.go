package task

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/approval"
	"github.com/pullwright/pullwright/changes"
	"github.com/pullwright/pullwright/deps"
	"github.com/pullwright/pullwright/policy"

	"github.com/pullwright/pullwright/internal/words"
	"github.com/pullwright/pullwright/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Check run names, as maintainers see them on the commit.
const (
	ApprovalCheck = "pullwright / approval"
	RunCheck      = "pullwright / run"
)

// The buttons of the approval check run; GitHub sends the identifier back.
var approvalActions = []pullwright.CheckAction{
	{Label: "Approve", Description: "Run this command as the request shows", Identifier: "approve"},
	{Label: "Reject", Description: "Do not run it; the agent goes on", Identifier: "reject"},
}

// requests is the asking side of an approval: a fix's execution request
// shown on GitHub (comments, the approval check run, the draft pull
// request), the wait for its answer or deadline, the approved run handed to
// runs, and the outcome handed back to the agent. The answer itself comes
// through answers; the fix's commits through Flow.
type requests struct {
	desk
	gh interface {
		OpenPullRequest(ctx context.Context, r pullwright.Repo, pr pullwright.NewPullRequest) (pullwright.PullRequest, error)
		UpdatePullRequest(ctx context.Context, r pullwright.Repo, number int, title, body string) error
		UpsertCheckRun(ctx context.Context, r pullwright.Repo, cr pullwright.CheckRun) (int64, error)
	}
	// answers is the store's side of an answer: the deadline's own
	// answer, recorded against any that beats it.
	answers interface {
		Answer(ctx context.Context, id int64, requestID string, a Answer) error
		Get(ctx context.Context, id int64) (*Task, error)
	}
	agent interface {
		Resolve(conversation []byte, o Outcome) (Resolved, error)
	}
	checkouts checkouts
	runs      runs
	// timeout is how long a request waits (Flow.ApprovalTimeout).
	timeout time.Duration
	// unisolated and setups are Flow.Unisolated and whether Flow.Deps is
	// set: what the request comment promises about where it runs.
	unisolated, setups bool
}

func (rq requests) approvalTimeout() time.Duration {
	if rq.timeout > 0 {
		return rq.timeout
	}
	return 24 * time.Hour
}

// ask shows the agent's execution request, bound to its checkpoint commit
// (r.SHA, which Flow pushed), and parks the task until it is answered:
// open or keep the draft pull request, post the request on the issue and
// the pull request, and put a check run with Approve and Reject buttons on
// the checkpoint commit. Each call performs the first phase of asking
// (asking) that is due, and only that one: its side effect is recorded
// in the request, which the worker saves before the next call, so a
// restart resumes at the phase after the last one saved.
func (rq requests) ask(ctx context.Context, t Job) error {
	for _, p := range asking {
		if p.due(rq, t) {
			return p.do(rq, ctx, t)
		}
	}
	return fmt.Errorf("request %s: no phase of asking is due", t.Request.ID)
}

// askPhase is one phase of asking for a request (asking).
type askPhase int

const (
	// Refusals, before anything is shown: the request is answered by the
	// bot and the agent hears why.
	askRefuseUnsafe  askPhase = iota // a command that would show as other than what runs
	askRefuseNoFence                 // a command that needs network, without the fence
	askShow                          // build the value every surface shows, once
	askAutoApprove                   // the repository's auto_approve rule answers it
	askOpenDraft                     // open the task's draft pull request
	askUpdateDraft                   // bring a draft's body up to the work
	askComment                       // post the request on the issue
	askPullComment                   // post it on the pull request too
	askCheckRun                      // the approval check run, with its buttons
	askPark                          // wait for the answer
)

// asking is the protocol of asking, in order: ask performs the first
// phase that is due. Each phase has one side effect and records it in the
// request (or moves the task on), which is what makes it not due again.
var asking = []struct {
	phase askPhase
	// effect is the phase's side effect, for a reader of the protocol.
	effect string
	due    func(rq requests, t Job) bool
	do     func(rq requests, ctx context.Context, t Job) error
}{
	{askRefuseUnsafe, "none outside: the request is answered Rejected by the bot, unshown, and the task parks",
		func(rq requests, t Job) bool {
			return t.Request.Answer == nil && policy.CheckCommand(t.Request.Command) != nil
		}, requests.refuseUnsafe},
	{askRefuseNoFence, "none outside: the request is answered Rejected by the bot (no fence), unshown, and the task parks",
		func(rq requests, t Job) bool {
			return t.Request.Answer == nil && t.Request.Fetch && (rq.unisolated || !rq.setups)
		}, requests.refuseNoFence},
	{askShow, "none outside: the request's shown value and digest are built and stored (ExecRequest.Shown)",
		func(rq requests, t Job) bool { return t.Request.Shown == nil && t.Request.Answer == nil }, requests.showOnce},
	{askAutoApprove, "none outside: the request is answered Approved by the rule, and the task parks",
		func(rq requests, t Job) bool {
			r := t.Request
			_, ok := rq.settings(t.Task).AutoApproved(r.Command)
			// Code from a fork was written by nobody with write access: a
			// person reads every command that would run it, whatever the
			// rules say. Nor when the files change a dependency manifest:
			// the setup would run them with network, and a person must
			// see that first. Both are in the value shown (Fork, Setup),
			// which is what decides here.
			return ok && r.Shown != nil && r.Shown.AutoApprove.Answers() && r.Answer == nil && r.CommentID == 0
		}, requests.autoApprove},
	{askOpenDraft, "GitHub: opens the task's draft pull request (Job.PRNumber)",
		func(rq requests, t Job) bool { return t.PRNumber == 0 && t.PushedSHA != "" && t.draftable() }, requests.openDraft},
	{askUpdateDraft, "GitHub: updates the draft pull request's body (ExecRequest.PRUpdated)",
		func(rq requests, t Job) bool { return t.PRNumber != 0 && t.Draft && !t.Request.PRUpdated }, requests.updateDraft},
	{askComment, "GitHub: posts the request on the issue (ExecRequest.CommentID)",
		func(rq requests, t Job) bool { return t.Request.CommentID == 0 }, requests.comment},
	{askPullComment, "GitHub: posts the request on the pull request (ExecRequest.PRCommentID)",
		func(rq requests, t Job) bool { return t.Request.PRCommentID == 0 && t.PRNumber != 0 }, requests.pullComment},
	{askCheckRun, "GitHub: creates the approval check run on the request's commit (ExecRequest.CheckRunID)",
		func(rq requests, t Job) bool { return t.Request.CheckRunID == 0 }, requests.checkRun},
	{askPark, "GitHub: updates the status comment; the task parks until the answer or the deadline (ExecRequest.Asked)",
		func(rq requests, t Job) bool { return true }, requests.park},
}

// refuseUnsafe answers a command that would show as something other than
// what runs: it is never shown for approval, and the agent hears why and
// goes on. (The agent refuses such a request itself; this is the task's
// own word.)
func (rq requests) refuseUnsafe(ctx context.Context, t Job) error {
	r := t.Request
	err := policy.CheckCommand(r.Command)
	now := rq.now()
	r.Answer = &Answer{Verdict: Rejected, By: botAnswer, Reason: err.Error(), At: now}
	r.Asked, r.ParkedAt, r.Deadline = true, now, now
	t.RunAfter = now
	rq.log.WarnContext(ctx, "request refused unshown", "task_id", t.ID, "request", r.ID, "error", err)
	return t.Move(AwaitingApproval)
}

// refuseNoFence answers a request for network without the fence: only the
// fence gives a command network, so the request is never shown, and the
// agent hears how to do without.
func (rq requests) refuseNoFence(ctx context.Context, t Job) error {
	r := t.Request
	now := rq.now()
	r.Answer = &Answer{Verdict: Rejected, By: botAnswer, At: now, Reason: NoFence}
	r.Asked, r.ParkedAt, r.Deadline = true, now, now
	t.RunAfter = now
	rq.log.WarnContext(ctx, "request for network refused unshown: no fence", "task_id", t.ID, "request", r.ID)
	return t.Move(AwaitingApproval)
}

// showOnce builds the value every surface shows and every answer names,
// once, and stores it before anything shows it.
func (rq requests) showOnce(ctx context.Context, t Job) error {
	shown := rq.show(ctx, t)
	t.Request.Shown = &shown
	return nil
}

// autoApprove answers the request by the repository's rule: it chose to
// run this command without asking. The answer is recorded as the rule's,
// and the run is shown as usual.
func (rq requests) autoApprove(ctx context.Context, t Job) error {
	r := t.Request
	rule, _ := rq.settings(t.Task).AutoApproved(r.Command)
	now := rq.now()
	r.Auto = rule
	r.Answer = &Answer{Verdict: Approved, By: "auto_approve", Reason: rule, At: now}
	r.Asked, r.ParkedAt, r.Deadline = true, now, now
	t.RunAfter = now
	rq.log.InfoContext(ctx, "request auto-approved", "task_id", t.ID, "request", r.ID, "rule", rule)
	return t.Move(AwaitingApproval)
}

func (rq requests) openDraft(ctx context.Context, t Job) error {
	pctx, span := tracing.Start(ctx, "open pull request", attribute.Bool("pullwright.pull.draft", true))
	pr, err := rq.gh.OpenPullRequest(pctx, t.Repo, pullwright.NewPullRequest{
		Title: "[WIP] " + draftTitle(t.Task),
		Body:  RenderPullRequest(t),
		Head:  t.Branch,
		Base:  t.prBase(),
		Draft: true,
	})
	tracing.End(span, err)
	if err != nil {
		return retryf(err, "opening the draft pull request failed")
	}
	t.PRNumber, t.PRURL, t.Draft = pr.Number, pr.URL, true
	t.Request.PRUpdated = true
	return nil
}

// updateDraft brings a draft's body up to the work, for a later request.
func (rq requests) updateDraft(ctx context.Context, t Job) error {
	if err := rq.gh.UpdatePullRequest(ctx, t.Repo, t.PRNumber, "", RenderPullRequest(t)); err != nil {
		return retryf(err, "updating the draft pull request failed")
	}
	t.Request.PRUpdated = true
	return nil
}

func (rq requests) comment(ctx context.Context, t Job) error {
	r := t.Request
	p, err := rq.desk.gh.UpsertComment(ctx, t.Repo, t.Issue, marker(t.Task, "request-"+r.ID), 0, renderRequest(*r.Shown, t.Kind))
	if err != nil {
		return retryf(err, "posting the execution request failed")
	}
	r.CommentID, r.CommentURL = p.ID, p.URL
	r.shown(p.ShownAt())
	return nil
}

func (rq requests) pullComment(ctx context.Context, t Job) error {
	r := t.Request
	p, err := rq.desk.gh.UpsertComment(ctx, t.Repo, t.PRNumber, marker(t.Task, "request-"+r.ID+"-pr"), 0, renderRequest(*r.Shown, t.Kind))
	if err != nil {
		return retryf(err, "posting the execution request on the pull request failed")
	}
	r.PRCommentID = p.ID
	r.shown(p.ShownAt())
	return nil
}

func (rq requests) checkRun(ctx context.Context, t Job) error {
	r := t.Request
	id, err := rq.gh.UpsertCheckRun(ctx, t.Repo, pullwright.CheckRun{
		Name:       ApprovalCheck,
		HeadSHA:    r.SHA,
		Status:     "completed",
		Conclusion: "action_required",
		ExternalID: r.ID,
		FirstTry:   t.firstTry(),
		DetailsURL: r.CommentURL,
		Title:      clip(map[string]string{"run": "Approve running: ", "call": "Approve calling: "}[r.verb()]+oneLine(policy.Escaped(r.Command)), 200),
		Summary:    RenderRequestSummary(t),
		Actions:    approvalActions,
	})
	if err != nil {
		return retryf(err, "creating the approval check run failed")
	}
	r.CheckRunID = id
	return nil
}

// park waits for the answer: until the request's deadline, or at once
// when an answer or a cancel makes the task due.
func (rq requests) park(ctx context.Context, t Job) error {
	r := t.Request
	r.Asked = true
	r.ParkedAt = rq.now()
	r.Deadline = r.AskedAt.Add(rq.approvalTimeout())
	t.RunAfter = r.Deadline
	if err := t.Move(AwaitingApproval); err != nil {
		return err
	}
	return rq.updateStatus(ctx, t)
}

// draftable reports whether the task shows its work in a draft pull request
// of its own while it waits for answers: not when its commits go onto a
// pull request's branch, and not for a fork's code, whose pull request
// here would start this repository's pull_request workflows on it before
// the agent is done (its requests are shown on the fork's pull request).
func (t Job) draftable() bool { return t.Pull == nil || (t.Pull.Mode == PullInBase && !t.forkCode()) }

// prBase is the branch the task's pull request targets.
func (t Job) prBase() string {
	if t.Pull != nil {
		return t.Pull.Info.BaseRef
	}
	return t.Repo.DefaultBranch
}

func draftTitle(t *Task) string {
	if t.IssueTitle != "" {
		return defang(oneLine(t.IssueTitle))
	}
	return fmt.Sprintf("Work on #%d", t.Issue)
}

// show builds the request as it is shown, with the files changed so far
// and the changes to the dependency manifests that its setup would run.
// On an issue both come from one diff against the task's base, which is
// also the base setup compares with. On a pull request the files are the
// bot's own pushes (a request comes after a checkpoint), not whatever a
// person pushed to the branch meanwhile, and the manifests are compared
// with the pull request's base. A diff that fails is shown as such.
func (rq requests) show(ctx context.Context, t Job) approval.Request {
	if t.Settings == nil {
		// The rules the run will have (desk.settings), shown as such.
		s := rq.settings(t.Task)
		shown := *t.Task
		shown.Settings = &s
		t = Job{Task: &shown, Work: t.Work}
	}
	if t.Request.Tool != nil {
		// A call runs no files: the server is sent the arguments alone.
		return showing(t, nil, ManifestChanges{}, rq.unisolated).Request()
	}
	if t.Pull != nil {
		return ShowRequest(t, t.Pull.Stats, rq.manifestChanges(ctx, t), rq.unisolated)
	}
	stats, ws, err := rq.checkouts.diffStatAgainst(ctx, t, t.BaseSHA)
	if err != nil {
		rq.log.WarnContext(ctx, "diff stat for the request", "task_id", t.ID, "err", err)
		s := showing(t, nil, rq.manifestChanges(ctx, t), rq.unisolated)
		s.FilesUnknown = "the diff against the work's start failed"
		return s.Request()
	}
	return ShowRequest(t, stats, rq.checkManifests(ctx, t, stats, ws), rq.unisolated)
}

// maxManifestDiff bounds the manifests' diff in a request comment; a
// lockfile's can be far longer than a comment holds.
const maxManifestDiff = 12 << 10

// sharesCaches reports whether the commit setupBase names may fill a cache
// the repository's tasks share: only a commit of the default branch. A
// pull request may target any branch (the bot's own agent/* branches,
// whose files an agent wrote, among them); its setup gets a cache of its
// own, as changed manifests do.
func (t Job) sharesCaches() bool {
	return t.setupBase() != "" && (t.Pull == nil || t.Pull.Info.BaseRef == t.Repo.DefaultBranch)
}

// ManifestChanges are the dependency manifests the files a request would
// run change against the commit a shared cache is filled from (setupBase):
// the setup then runs with them, and the approval of the request covers
// that too.
type ManifestChanges struct {
	Files []pullwright.FileStat
	// Diff is their unified diff, cut to maxManifestDiff at a line's end.
	Diff string
	// Err is why they could not be read; the request is then treated as
	// changing them.
	Err error
	// Private is true when the setup runs on the files' own manifests
	// into a cache of the task's own whatever they change, because the
	// base is not the default branch (Task.sharesCaches).
	Private bool
}

// setupBase is the commit whose files may fill a cache the repository's
// tasks share: the task's base, or a pull request's base commit; "" when
// there is none.
func (t Job) setupBase() string {
	if t.Pull != nil {
		return t.Pull.Info.BaseSHA
	}
	return t.BaseSHA
}

// manifestChanges reads the task's ManifestChanges; none when no setup
// runs (no Dependencies, the local runner, nothing to compare with).
func (rq requests) manifestChanges(ctx context.Context, t Job) ManifestChanges {
	if !rq.comparesManifests(t) {
		return ManifestChanges{}
	}
	all, ws, err := rq.checkouts.diffStatAgainst(ctx, t, t.setupBase())
	if err != nil {
		rq.log.WarnContext(ctx, "reading the manifests' changes", "task_id", t.ID, "err", err)
		return ManifestChanges{Err: err, Private: !t.sharesCaches()}
	}
	return rq.checkManifests(ctx, t, all, ws)
}

// comparesManifests reports whether the task's setup compares manifests
// with a base: there is a setup, and a base to compare with.
func (rq requests) comparesManifests(t Job) bool {
	return rq.setups && !rq.unisolated && t.setupBase() != ""
}

// checkManifests is manifestChanges from all, the diff stat of ws against
// the task's setupBase, for a caller that has it already.
func (rq requests) checkManifests(ctx context.Context, t Job, all []pullwright.FileStat, ws Workspace) ManifestChanges {
	if !rq.comparesManifests(t) {
		return ManifestChanges{}
	}
	m, err := manifestsIn(t.setupBase(), all, ws)
	if err != nil {
		rq.log.WarnContext(ctx, "reading the manifests' changes", "task_id", t.ID, "err", err)
		m.Err = err
	}
	m.Private = !t.sharesCaches()
	return m
}

// manifestsIn picks the manifests of all, the diff stat of ws against
// base, and reads their diff. What counts is the workspace's own plan
// (deps.ManifestsOf), which knows the paths its files make manifests (a
// build backend's directory); when it cannot be read, the manifests any
// tree has are picked, and its error makes the request say they could
// not be compared, which no auto_approve rule answers.
func manifestsIn(base string, all []pullwright.FileStat, ws Workspace) (ManifestChanges, error) {
	var m ManifestChanges
	plan, planErr := workspacePlan(ws)
	var paths []string
	for _, c := range all {
		if plan.ManifestsChanged([]string{c.Path}) {
			m.Files = append(m.Files, c)
			paths = append(paths, c.Path)
		}
	}
	if len(paths) == 0 {
		return m, planErr
	}
	d, err := ws.DiffOf(base, paths...)
	if err != nil {
		return m, err
	}
	if len(d) > maxManifestDiff {
		cut := strings.LastIndexByte(d[:maxManifestDiff], '\n') + 1
		d = d[:cut] + fmt.Sprintf("[… %d more bytes: the whole diff is in the commit to approve]\n", len(d)-cut)
	}
	m.Diff = d
	return m, planErr
}

// workspacePlan is the dependency plan of the files in ws, as far as
// telling its manifests needs.
func workspacePlan(ws Workspace) (deps.Plan, error) {
	if ws.Dir() == "" {
		// os.DirFS("") would read from the file system's root.
		return deps.Plan{}, errors.New("the workspace has no directory")
	}
	p, err := deps.ManifestsOf(os.DirFS(ws.Dir()))
	if err != nil {
		return deps.Plan{}, fmt.Errorf("plan the workspace's setup: %w", err)
	}
	return p, nil
}

// await handles a parked task that became due: its request was answered,
// or its deadline passed.
func (rq requests) await(ctx context.Context, t Job) (err error) {
	r := t.Request
	if r.Answer == nil {
		if rq.now().Before(r.Deadline) {
			// Woken early (a restart, a clock step): park again.
			t.RunAfter = r.Deadline
			return nil
		}
		err := rq.answers.Answer(ctx, t.ID, r.ID, Answer{Verdict: TimedOut, At: rq.now()})
		if err != nil && !errors.Is(err, ErrAnswered) {
			return retryf(err, "recording the timeout failed")
		}
		// Either the timeout or an answer that beat it is in the store now.
		fresh, err := rq.answers.Get(ctx, t.ID)
		if err != nil {
			return retryf(err, "reading the task failed")
		}
		stored, ok := fresh.Job()
		if !ok || stored.Request == nil || stored.Request.Answer == nil {
			return retryf(nil, "the request's answer was not recorded")
		}
		r.Answer = stored.Request.Answer
	}
	a := r.Answer
	defer func() {
		if err == nil {
			// The wait as a span of its own, from the ask to the answer
			// on the answer's clock, recorded once the step that takes
			// the answer in is done: a step that fails records none (one
			// whose save is lost after it may record it again).
			_, span := tracing.StartAt(ctx, "approval wait", r.AskedAt,
				attribute.String("pullwright.request.id", r.ID), attribute.String("pullwright.request.verdict", string(a.Verdict)))
			span.End(trace.WithTimestamp(a.At))
		}
	}()
	if wait := a.At.Sub(r.ParkedAt); wait > 0 {
		t.Waited += wait
	}
	if a.Source != "" && !slices.Contains(t.Answers, a.Source) {
		t.Answers = append(t.Answers, a.Source)
	}
	switch a.Verdict {
	case Approved:
		if err := rq.closeApproval(ctx, t, "success", "Approved by @"+a.By); err != nil {
			return err
		}
		if err := t.Move(Running); err != nil {
			return err
		}
		return rq.updateStatus(ctx, t)
	case TimedOut:
		if _, err := rq.desk.gh.UpsertComment(ctx, t.Repo, t.Issue, marker(t.Task, "request-"+r.ID+"-timeout"), 0,
			fmt.Sprintf("Request `%s` got no answer within %s, so it counts as rejected: %s was not run, and the agent goes on without it.",
				r.ID, rq.approvalTimeout(), code(oneLine(r.Command)))); err != nil {
			return retryf(err, "reporting the timeout failed")
		}
		if err := rq.closeApproval(ctx, t, "timed_out", "No answer in time"); err != nil {
			return err
		}
	default:
		if err := rq.closeApproval(ctx, t, "neutral", "Rejected by @"+a.By); err != nil {
			return err
		}
	}
	return rq.resolve(ctx, t, Outcome{Verdict: a.Verdict, By: a.By, Reason: a.Reason})
}

// closeApproval completes the approval check run with the answer, so its
// buttons no longer invite one. Done once; repeating it is harmless.
func (rq requests) closeApproval(ctx context.Context, t Job, conclusion, title string) error {
	r := t.Request
	if r.Closed || r.CheckRunID == 0 {
		return nil
	}
	if _, err := rq.gh.UpsertCheckRun(ctx, t.Repo, pullwright.CheckRun{
		ID:         r.CheckRunID,
		Name:       ApprovalCheck,
		HeadSHA:    r.SHA,
		Status:     "completed",
		Conclusion: conclusion,
		ExternalID: r.ID,
		DetailsURL: r.CommentURL,
		Title:      title,
		Summary:    RenderRequestSummary(t),
	}); err != nil {
		return retryf(err, "updating the approval check run failed")
	}
	r.Closed = true
	return nil
}

// resolve hands the agent its request's outcome and lets it go on.
func (rq requests) resolve(ctx context.Context, t Job, o Outcome) error {
	t.record(o)
	if err := rq.classify(ctx, t); err != nil {
		return err
	}
	if t.Request.Required {
		return rq.resolveRequired(ctx, t, o)
	}
	var ws Workspace
	if res := o.Result; res != nil && t.Request.KeepChanges && !res.NotStarted {
		// The changes go into the workspace the agent works in, at the
		// request's commit, which is what the run's copy started from.
		var err error
		if ws, err = rq.checkouts.workspace(ctx, t); err != nil {
			return err
		}
		o.Workdir = ws.Dir()
	}
	got, err := rq.agent.Resolve(t.Conversation, o)
	if err != nil {
		return Fatal("handing the result to the agent failed", err)
	}
	t.Conversation = got.Conversation
	if ws != nil {
		// The kept files are the agent's change now: saved like the
		// files it edits, so that a workspace rebuilt elsewhere has them.
		files, err := snapshot(ws)
		if err != nil {
			return retryf(err, "saving the run's kept changes failed")
		}
		t.Files = files
		if n := len(t.Runs); n > 0 && t.Runs[n-1].RequestID == t.Request.ID {
			t.Runs[n-1].Kept, t.Runs[n-1].KeptNote = got.Kept, got.KeptNote
		}
		// Their contents are in the workspace and in Files; the request
		// need not carry them in the stored task any longer.
		t.Request.Result.Changes = nil
	}
	if err := t.Move(Working); err != nil {
		return err
	}
	return rq.updateStatus(ctx, t)
}

// botAnswer is Answer.By when the bot itself refused a request.
const botAnswer = "pullwright"

// classify notes, for a task in a mode, what the commit of the request
// just recorded changed from the task's base: tests (their configuration
// and fixtures included), other code, or both. A file that holds both
// the tests' configuration and other things is read at both commits, so
// that its change decides (changeKinds).
func (rq requests) classify(ctx context.Context, t Job) error {
	if len(t.Runs) == 0 {
		return nil
	}
	rec := &t.Runs[len(t.Runs)-1]
	if t.Mode == "" || rec.Verdict != Approved || rec.RequestID != t.Request.ID || rec.Tests || rec.Code || rec.SHA == t.BaseSHA {
		return nil
	}
	ws, err := rq.checkouts.workspace(ctx, t)
	if err != nil {
		return err
	}
	paths, err := ws.ChangedPaths(t.BaseSHA, rec.SHA)
	if err != nil {
		return retryf(err, "reading what request %s's commit changed failed", rec.RequestID)
	}
	read, err := readVersions(ws, t.BaseSHA, rec.SHA, paths)
	if err != nil {
		return retryf(err, "reading what request %s's commit changed failed", rec.RequestID)
	}
	tests, code := changes.Kinds(paths, read)
	rec.Tests, rec.Code = len(tests) > 0, code
	if t.Mode == ModeTDD && rec.Tests {
		files, more, err := ws.ReadTree(rec.SHA, func(p string) bool { return slices.Contains(tests, p) }, len(tests), maxAPIFileBytes)
		if err != nil {
			return retryf(err, "reading the tests of request %s's commit failed", rec.RequestID)
		}
		h := sha256.New()
		slices.SortFunc(files, func(a, b pullwright.TreeFile) int { return strings.Compare(a.Path, b.Path) })
		for _, f := range files {
			fmt.Fprintf(h, "%q %d %x\n", f.Path, f.Size, sha256.Sum256(f.Data))
		}
		fmt.Fprintf(h, "more %d\n", more)
		rec.TestsDigest = hex.EncodeToString(h.Sum(nil))
	}
	return nil
}

// readVersions reads both versions, at base and at sha, of those of paths
// whose kind depends on their change (needsContent). A file it could not
// read whole (too large, a symbolic link, beyond the bound on files) is
// left out, and so counts as a test.
func readVersions(ws Workspace, base, sha string, paths []string) (map[string]changes.Versions, error) {
	want := map[string]bool{}
	for _, p := range paths {
		if changes.NeedsContent(p) {
			want[p] = true
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	type tree struct {
		data       map[string][]byte
		unread     map[string]bool
		incomplete bool // files beyond the bound were not read
	}
	var trees [2]tree
	for i, c := range []string{base, sha} {
		files, more, err := ws.ReadTree(c, func(p string) bool { return want[p] }, maxAPIFiles, maxAPIFileBytes)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", words.Short(c), err)
		}
		tr := tree{data: map[string][]byte{}, unread: map[string]bool{}, incomplete: more > 0}
		for _, f := range files {
			if f.Link || f.Size > int64(len(f.Data)) {
				tr.unread[f.Path] = true
				continue
			}
			tr.data[f.Path] = append([]byte{}, f.Data...) // present, even empty: not nil
		}
		trees[i] = tr
	}
	out := map[string]changes.Versions{}
	for p := range want {
		var v [2][]byte
		known := true
		for i, tr := range trees {
			d, ok := tr.data[p]
			known = known && !tr.unread[p] && (ok || !tr.incomplete)
			v[i] = d
		}
		if known {
			out[p] = changes.Versions{Before: v[0], After: v[1]}
		}
	}
	return out, nil
}

// resolveRequired settles the repository's required command, which the bot
// asked for on the final commit (Flow.requirePassing). Passed, or not run
// because a person said no or nobody answered: publishing goes on, and the
// pull request is ready for review or stays a draft. Ran and did not pass:
// the agent, which had finished, is told and goes on working.
func (rq requests) resolveRequired(ctx context.Context, t Job, o Outcome) error {
	// A run that could not happen (the sandbox failed, the setup failed,
	// the bot stopped mid-run) says nothing of the agent's work: the
	// agent is not sent back over it; the pull request stays a draft and
	// says why.
	if o.Verdict == Approved && o.Result != nil && ranAndFailed(Ran{Result: *o.Result, Setup: t.Request.Setup}.Outcome()) {
		o.Required = t.Request.Command
		got, err := rq.agent.Resolve(t.Conversation, o)
		if err != nil {
			return Fatal("handing the required command's result to the agent failed", err)
		}
		t.Conversation = got.Conversation
		t.Final, t.PRFinal, t.ChangedFiles, t.APIChecked = false, false, nil, false
		if err := t.Move(Working); err != nil {
			return err
		}
		return rq.updateStatus(ctx, t)
	}
	if err := t.Move(Publishing); err != nil {
		return err
	}
	return rq.updateStatus(ctx, t)
}

// ranAndFailed reports whether an outcome is the command's own failure.
func ranAndFailed(outcome RunOutcome) bool {
	return outcome == OutcomeFailed || outcome == OutcomeTimedOut || outcome == OutcomeOOM
}

// run executes an approved request in the sandbox, with a check run on the
// request's commit showing it. An approval runs the command once: a run cut
// short (the bot died, the sandbox failed) is reported to the agent, which
// may ask again, never repeated on the same approval.
func (rq requests) run(ctx context.Context, t Job) error {
	r := t.Request
	switch {
	case r.RunCheckID == 0:
		id, err := rq.gh.UpsertCheckRun(ctx, t.Repo, pullwright.CheckRun{
			Name: RunCheck, HeadSHA: r.SHA, Status: "in_progress", ExternalID: r.ID, FirstTry: t.firstTry(), DetailsURL: r.CommentURL,
			Title: clip(map[string]string{"run": "Running: ", "call": "Calling: "}[r.verb()]+oneLine(policy.Escaped(r.Command)), 200), Summary: RenderRequestSummary(t),
		})
		if err != nil {
			return retryf(err, "creating the run check run failed")
		}
		r.RunCheckID = id
		return nil
	case r.Result == nil && r.StartedIn == 0:
		// Saved before the command starts, so a crash during the run is
		// seen as such by whoever picks the task up next.
		r.StartedIn = max(t.Claim, 1)
		return nil
	case r.Result == nil && r.Tool != nil:
		if r.StartedIn != t.Claim {
			// The server may have acted: an approval covers one call, and
			// nothing here may say it was not made.
			r.Result = &pullwright.RunResult{ExitCode: -1, Output: "the call was interrupted before its answer came (the bot stopped or the step failed), " +
				"so the server may or may not have acted on it; it was not repeated, because an approval covers one call: check before you ask again"}
			return nil
		}
		return rq.runs.callTool(ctx, t)
	case r.Result == nil:
		if r.StartedIn != t.Claim {
			// An earlier claim started the command and did not finish.
			r.Result = &pullwright.RunResult{ExitCode: -1, Output: "the run was interrupted before it finished (the bot stopped or the step failed); " +
				"it was not repeated, because an approval covers one run: ask again if you still need it"}
			return nil
		}
		ws, err := rq.checkouts.workspace(ctx, t)
		if err != nil {
			return err
		}
		if head, err := ws.Head(); err != nil || head != r.SHA {
			return Fatal(fmt.Sprintf("the workspace is not at the approved commit %s", words.Short(r.SHA)), err)
		}
		return rq.runs.execute(ctx, t, ws)
	}
	res := r.Result
	conclusion := "success"
	if res.ExitCode != 0 || res.TimedOut || res.OOMKilled {
		conclusion = "failure"
	}
	title := RunTitle(res)
	if r.Tool != nil {
		title = callTitle(res)
	}
	if err := rq.runs.closeRun(ctx, t, conclusion, title); err != nil {
		return err
	}
	return rq.resolve(ctx, t, Outcome{Verdict: Approved, By: r.Answer.By, Result: res})
}

// tail is the last n lines of s, at most max bytes.
func tail(s string, n, max int) string {
	lines, _ := words.LastLines(s, n)
	out := strings.Join(lines, "\n")
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return strings.ReplaceAll(out, "```", "`\u200d``")
}

// setupFailure is what the agent and the run's check learn of a failed
// setup: the command did not run, why, and what the fence refused.
func setupFailure(s *pullwright.SetupRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "not run: the repository's setup failed (exit code %d), so its dependencies are not there; the command was not run.\n", s.ExitCode)
	if len(s.Blocked) > 0 {
		fmt.Fprintf(&b, "The network fence blocked: %s. Setup reaches only the hosts allowed for it.\n", strings.Join(s.Blocked, ", "))
	}
	fmt.Fprintf(&b, "Setup ran:\n%s\nIts output:\n%s", strings.Join(s.Steps, "\n"), s.Output)
	return b.String()
}
