package task

import (
	"context"
	"time"

	"github.com/pullwright/pullwright"
)

// The interfaces below are what a fix needs from the packages around it,
// written in the vocabulary of package pullwright: *ghapp.App is a GitHub
// and *repo.Workspace a Workspace as they are; app wires the rest
// (docs/architecture.md, "One vocabulary"). Tests use task/tasktest's
// stateful fakes. The rooms that need less declare less beside them
// (commands.go, answer.go, desk.go).

// GitHub is the part of the GitHub API a task uses.
type GitHub interface {
	Identity(ctx context.Context) (pullwright.Identity, error)
	Token(ctx context.Context, installationID int64) (string, error)
	AddReaction(ctx context.Context, r pullwright.Repo, commentID int64, content string) error
	// UpsertComment edits the comment carrying marker (commentID when known)
	// or creates it, and returns it as GitHub answered.
	UpsertComment(ctx context.Context, r pullwright.Repo, issue int, marker string, commentID int64, body string) (pullwright.Posted, error)
	Issue(ctx context.Context, r pullwright.Repo, number int) (pullwright.Issue, error)
	// ReadComment reads an issue or pull request comment by its id, with
	// GitHub's created_at; pullwright.ErrGone when it was deleted.
	ReadComment(ctx context.Context, r pullwright.Repo, id int64) (pullwright.Comment, error)
	// OpenPullRequest returns the open pull request for pr.Head if there is
	// one, so that a retried step does not open a second.
	OpenPullRequest(ctx context.Context, r pullwright.Repo, pr pullwright.NewPullRequest) (pullwright.PullRequest, error)
	// UpdatePullRequest sets a pull request's title and body.
	UpdatePullRequest(ctx context.Context, r pullwright.Repo, number int, title, body string) error
	// MarkReadyForReview turns a draft pull request into a ready one.
	MarkReadyForReview(ctx context.Context, r pullwright.Repo, number int) error
	// UpsertCheckRun creates (ID 0) or updates a check run; it returns the id.
	UpsertCheckRun(ctx context.Context, r pullwright.Repo, cr pullwright.CheckRun) (int64, error)
	// Permission is the user's role on the repository: admin, maintain,
	// write, triage, read or none.
	Permission(ctx context.Context, r pullwright.Repo, user string) (string, error)
	// TeamMember reports whether user is an active member of org's team.
	TeamMember(ctx context.Context, r pullwright.Repo, org, team, user string) (bool, error)
	// File is a file's content at ref; ErrNoFile when it does not exist.
	File(ctx context.Context, r pullwright.Repo, ref, path string) ([]byte, error)

	// PullRequest reads a pull request of r.
	PullRequest(ctx context.Context, r pullwright.Repo, number int) (pullwright.Pull, error)
	// PullRequestDiff is the pull request's diff against its base, cut to
	// at most max bytes (truncated says so). A diff GitHub will not render
	// (too large) is an empty diff, truncated, not an error.
	PullRequestDiff(ctx context.Context, r pullwright.Repo, number, max int) (diff string, truncated bool, err error)
	// ReviewThreads lists the pull request's review threads (line
	// comments and their replies), oldest first, with whether each was
	// resolved on GitHub.
	ReviewThreads(ctx context.Context, r pullwright.Repo, number int) ([]pullwright.ReviewThread, error)
	// ReplyInThread posts body as a reply in the review thread whose first
	// comment is rootID, or edits the reply carrying marker if there is
	// one, and returns the reply's id; ErrGone when the thread was deleted.
	ReplyInThread(ctx context.Context, r pullwright.Repo, pr int, rootID int64, marker, body string) (int64, error)
	// AddReviewReaction reacts to a review (line) comment.
	AddReviewReaction(ctx context.Context, r pullwright.Repo, commentID int64, content string) error
	// BotReviews lists the reviews of a pull request the bot posted,
	// oldest first, each with the key of the marker ending its body.
	BotReviews(ctx context.Context, r pullwright.Repo, pr int) ([]pullwright.PostedReview, error)
	// PostReview posts one review of a pull request (event COMMENT on
	// rv.CommitID), its body tagged with marker. GitHub takes it whole or
	// refuses it whole.
	PostReview(ctx context.Context, r pullwright.Repo, pr int, marker string, rv pullwright.NewReview) (pullwright.PostedReview, error)

	// FailingChecks lists the check runs that failed on commit sha (the
	// latest run of each check), without annotations or logs.
	FailingChecks(ctx context.Context, r pullwright.Repo, sha string) ([]pullwright.CheckFailure, error)
	// CheckAnnotations lists up to max of a check run's annotations.
	CheckAnnotations(ctx context.Context, r pullwright.Repo, checkRunID int64, max int) ([]pullwright.CheckAnnotation, error)
	// JobLogTail is the end of a GitHub Actions job's log, at most max
	// bytes (cut when longer); ErrNotPermitted when GitHub refuses it (the
	// app lacks actions: read), ErrGone when the job or its logs are gone.
	JobLogTail(ctx context.Context, r pullwright.Repo, jobID int64, max int) (tail string, cut bool, err error)
}

// Progress is the agent's state after a turn.
type Progress struct {
	Conversation []byte
	Turns        int
	Tokens       int
	// TokensEstimated: the endpoint reported no usage for some turns, so
	// Tokens counts them by the size of what was sent and answered.
	TokensEstimated bool
	// Spend is the tokens and cost by model, at the task's prices.
	Spend    pullwright.Spend
	Plan     []pullwright.PlanItem
	Steps    []string
	Finished bool
	Title    string
	Summary  string
	// Pending is the command the agent asked to run, if it asked.
	Pending *Pending
	// Replies are the agent's notes for the checklist's threads, by the
	// thread's number (from 1), given when it finished.
	Replies map[int]string
	// Review is a finished review's draft (a review task's agent).
	Review *pullwright.ReviewDraft
	// OutOfBudget is set when the agent finished on its last turn, when
	// it could do nothing else: which budget ran out.
	OutOfBudget string
}

// Pending is an execution request as the agent made it: a command, or a
// call of an MCP tool that is not read-only (Tool; Command is its Line).
type Pending struct {
	Command, Reason string
	Tool            *pullwright.ToolCall
	// KeepChanges asks to keep what the command changes (ExecRequest.KeepChanges).
	KeepChanges bool
	// Network asks for the setup's network, through the fence
	// (ExecRequest.Fetch); it comes with KeepChanges.
	Network bool
}

// Outcome is what the agent is told about its execution request.
type Outcome struct {
	Verdict Verdict // Approved (then Result is set), Rejected, TimedOut, Withdrawn
	By      string
	Reason  string
	Result  *pullwright.RunResult
	// Required names the repository's required command (require_passing)
	// when the bot, not the agent, asked for it: it failed on the final
	// commit, and the agent, which had finished, is to go on.
	Required string
	// Workdir is the task's workspace, where the files a run that kept
	// its changes changed (Result.Changes) are made the agent's own, under
	// the rules of its file tools, before it is told the result.
	Workdir string
}

// Resolved is what the agent did with an Outcome: the conversation to
// keep, and what it kept of the run's changes (Kept, in the diff stat's
// terms, or KeptNote: why nothing was kept).
type Resolved struct {
	Conversation []byte
	Kept         []pullwright.FileStat
	KeptNote     string
}

// Agent runs the model one turn at a time over a conversation the task
// keeps in the store.
type Agent interface {
	Start(b pullwright.Brief) ([]byte, error)
	// Turn runs one turn of the conversation of a task on repo
	// (owner/name), whose checkout is workdir.
	Turn(ctx context.Context, repo string, conversation []byte, workdir string) (Progress, error)
	// Resolve hands the agent the outcome of its pending request, or, with
	// o.Required, of the required command that failed after it finished.
	Resolve(conversation []byte, o Outcome) (Resolved, error)
}

// ToolCaller calls the MCP tool of an approved request on the operator's
// server s, with the request's arguments as they were shown. A tool that
// fails, or a server that is down or slow, is a result (failed, with
// text saying why); an error is only the end of ctx.
type ToolCaller interface {
	CallTool(ctx context.Context, s pullwright.ToolServer, c pullwright.ToolCall) (text string, failed bool, err error)
}

// Dependencies makes a repository's dependencies ready for an approved
// run: it runs the repository's setup behind the fence into the
// repository's cache unless that cache is ready for the run's manifests.
type Dependencies interface {
	Prepare(ctx context.Context, r pullwright.SetupRequest) (pullwright.SetupResult, error)
	// Fetch runs spec's command (an approved dependency command, such as
	// go get or npm install --package-lock-only) as the repository's
	// setup runs: on spec.Dir's files, behind the fence with r's
	// allow-list, with the setup's environment, into a cache of the run's
	// own that is removed before Fetch returns (never a shared cache: the
	// command runs code of files the agent wrote). spec.KeepChanges is
	// set: the result carries the files the command changed. The record
	// says what ran and what the fence let through and refused. An error
	// is only the engine's or ctx's failure.
	Fetch(ctx context.Context, r pullwright.SetupRequest, spec pullwright.RunSpec) (pullwright.RunResult, *pullwright.SetupRecord, error)
}

// Runner runs approved commands in a sandbox. A command that fails, times
// out or runs out of memory is a normal result; an error means the runner
// itself failed.
type Runner interface {
	Run(ctx context.Context, s pullwright.RunSpec) (pullwright.RunResult, error)
}

// Workspace is one checkout on disk.
type Workspace interface {
	Dir() string
	Head() (string, error)
	CreateBranch(name string) error
	Changes() ([]pullwright.Change, error)
	// Revert puts paths back as HEAD has them (or removes them).
	Revert(paths ...string) error
	// CommitAllAt commits every change, dated when; ErrNoChanges when there
	// is none. The same inputs give the same commit.
	CommitAllAt(when time.Time, msg string, author pullwright.Identity, coAuthors ...pullwright.Identity) (string, error)
	// Push publishes branch; a remote that already has it is success, one
	// with other commits is ErrPushRejected.
	Push(ctx context.Context, token, branch string) error
	// RemoteBranch is the commit origin's branch points at, "" if none.
	RemoteBranch(ctx context.Context, token, branch string) (string, error)
	// ResetTo moves the checkout to commit sha, fetching history as needed;
	// ErrBaseGone if the branch no longer has it.
	ResetTo(ctx context.Context, token, sha string) error
	// Track makes the remote's branch the one whose history Fetch, ResetTo
	// and Contains fetch, instead of the ref the workspace was cloned from.
	Track(branch string) error
	// Fetch makes sure the workspace has commit sha (ErrBaseGone if not).
	Fetch(ctx context.Context, token, sha string) error
	DiffStat(baseSHA string) ([]pullwright.FileStat, error)
	// DiffOf is the unified diff from baseSHA to the current state of the
	// files at paths only.
	DiffOf(baseSHA string, paths ...string) (string, error)
	// Touched returns those of paths that differ between commits from and
	// to (both present in the workspace).
	Touched(from, to string, paths []string) ([]string, error)
	// Contains reports whether commit sha is tip or in its history,
	// fetching deeper history when the workspace's ends too soon.
	Contains(ctx context.Context, token, tip, sha string) (bool, error)
	// FetchBranch brings the tip of the remote's branch into the workspace,
	// without checking it out, and returns its SHA.
	FetchBranch(ctx context.Context, token, branch string) (string, error)
	// ChangedPaths lists the paths whose files differ between the trees of
	// two commits in the workspace.
	ChangedPaths(from, to string) ([]string, error)
	// ReadTree reads the files of commit sha's tree (in the workspace, not
	// necessarily checked out) whose paths match accepts: at most maxFiles,
	// shallowest first, each up to maxBytes, and how many more matched.
	// Symbolic links are listed with Link set, never followed.
	ReadTree(sha string, match func(path string) bool, maxFiles, maxBytes int) ([]pullwright.TreeFile, int, error)
	// Export writes the files of commit sha, and nothing else, into dir,
	// which must not exist, and checks what it wrote against the commit.
	Export(ctx context.Context, sha, dir string) error
	// LeftOut lists what the worktree holds that commit sha does not
	// (files git ignores): at most max paths, and how many more there are.
	LeftOut(sha string, max int) ([]string, int, error)
	Remove() error
}

// Workspaces makes and reopens checkouts.
type Workspaces interface {
	// Clone checks out branch, or a full ref name such as
	// "refs/pull/7/head" (the head of a pull request, also from a fork,
	// as the base repository serves it).
	Clone(ctx context.Context, url, branch, token, dir string) (Workspace, error)
	Open(dir string) (Workspace, error)
	// RemoteHead is the commit a branch of the repository at url points
	// at, "" if there is no such branch.
	RemoteHead(ctx context.Context, url, token, branch string) (string, error)
}

// Pictures fetches the pictures an issue or a comment shows (*ghapp.App
// is one).
type Pictures interface {
	// Image fetches the picture at link, for a task on r, reading at most
	// limit bytes: pullwright.ErrNotGitHubs for a link to a host that is
	// not the configured GitHub's own, refused before it is asked;
	// ErrTooLarge past limit; ErrNotAnImage for bytes that are not a
	// PNG, JPEG, GIF or WebP picture; ErrGone when GitHub has no such
	// file for the installation. kind is what the bytes are (image/png…).
	Image(ctx context.Context, r pullwright.Repo, link string, limit int64) (data []byte, kind string, err error)
}
