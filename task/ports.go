package task

import (
	"context"
	"errors"
	"time"

	"github.com/pullwright/pullwright/policy"
)

// The interfaces below are what a task needs from the packages around it.
// cmd/bot adapts ghapp, agent and repo to them; tests use small fakes.

// Identity is a git author: the bot's, or the requester's for co-authorship.
type Identity struct{ Login, Name, Email string }

// Issue is the conversation a task was asked on, as the agent will see it.
type Issue struct {
	Title, Body string
	Locked      bool
	Comments    []Comment
}

// Comment is one comment of an issue.
type Comment struct{ Author, AuthorType, Body string }

// Posted is a comment the bot wrote, as GitHub answered the write.
type Posted struct {
	ID  int64
	URL string // web address
	// CreatedAt is GitHub's time of the comment's first write, also when
	// the write edited it; UpdatedAt is that of this write (updated_at).
	// The order of a request and its answer is judged on GitHub's clock
	// alone.
	CreatedAt, UpdatedAt time.Time
}

// shownAt is when GitHub began showing what this write wrote: an edit of
// an older comment (a retried step, or an Action re-run reusing its
// markers) shows its text only from the edit on.
func (p Posted) shownAt() time.Time {
	if p.UpdatedAt.After(p.CreatedAt) {
		return p.UpdatedAt
	}
	return p.CreatedAt
}

// NewPullRequest is what the bot opens: a draft at the first execution
// request, or a ready one at the end of a fix.
type NewPullRequest struct {
	Title, Body, Head, Base string
	Draft                   bool
}

// PullRequest is an opened (or found) pull request.
type PullRequest struct {
	Number int
	URL    string
}

// GitHub is the part of the GitHub API a task uses.
type GitHub interface {
	Identity(ctx context.Context) (Identity, error)
	Token(ctx context.Context, installationID int64) (string, error)
	AddReaction(ctx context.Context, r Repo, commentID int64, content string) error
	// UpsertComment edits the comment carrying marker (commentID when known)
	// or creates it, and returns it as GitHub answered.
	UpsertComment(ctx context.Context, r Repo, issue int, marker string, commentID int64, body string) (Posted, error)
	Issue(ctx context.Context, r Repo, number int) (Issue, error)
	// OpenPullRequest returns the open pull request for pr.Head if there is
	// one, so that a retried step does not open a second.
	OpenPullRequest(ctx context.Context, r Repo, pr NewPullRequest) (PullRequest, error)
	// UpdatePullRequest sets a pull request's title and body.
	UpdatePullRequest(ctx context.Context, r Repo, number int, title, body string) error
	// MarkReadyForReview turns a draft pull request into a ready one.
	MarkReadyForReview(ctx context.Context, r Repo, number int) error
	// UpsertCheckRun creates (ID 0) or updates a check run; it returns the id.
	UpsertCheckRun(ctx context.Context, r Repo, cr CheckRun) (int64, error)
	// Permission is the user's role on the repository: admin, maintain,
	// write, triage, read or none.
	Permission(ctx context.Context, r Repo, user string) (string, error)
	// TeamMember reports whether user is an active member of org's team.
	TeamMember(ctx context.Context, r Repo, org, team, user string) (bool, error)
	// File is a file's content at ref; ErrNoFile when it does not exist.
	File(ctx context.Context, r Repo, ref, path string) ([]byte, error)

	// PullRequest reads a pull request of r.
	PullRequest(ctx context.Context, r Repo, number int) (PullInfo, error)
	// PullRequestDiff is the pull request's diff against its base, cut to
	// at most max bytes (truncated says so). A diff GitHub will not render
	// (too large) is an empty diff, truncated, not an error.
	PullRequestDiff(ctx context.Context, r Repo, number, max int) (diff string, truncated bool, err error)
	// ReviewThreads lists the pull request's review threads (line
	// comments and their replies), oldest first, with whether each was
	// resolved on GitHub.
	ReviewThreads(ctx context.Context, r Repo, number int) ([]ReviewThread, error)
	// ReplyInThread posts body as a reply in the review thread whose first
	// comment is rootID, or edits the reply carrying marker if there is
	// one, and returns the reply's id; ErrGone when the thread was deleted.
	ReplyInThread(ctx context.Context, r Repo, pr int, rootID int64, marker, body string) (int64, error)
	// AddReviewReaction reacts to a review (line) comment.
	AddReviewReaction(ctx context.Context, r Repo, commentID int64, content string) error
}

// PullInfo is a pull request as a task on it needs it.
type PullInfo struct {
	Number int    `json:"number"`
	URL    string `json:"url,omitempty"` // web address
	Title  string `json:"title,omitempty"`
	Body   string `json:"body,omitempty"`
	Author string `json:"author,omitempty"`
	State  string `json:"state,omitempty"` // open or closed
	Merged bool   `json:"merged,omitempty"`
	Locked bool   `json:"locked,omitempty"`
	// HeadRef is the branch name in the head repository; HeadRepo is that
	// repository ("owner/name", empty when a fork was deleted).
	HeadRef  string `json:"head_ref"`
	HeadSHA  string `json:"head_sha"`
	HeadRepo string `json:"head_repo,omitempty"`
	BaseRef  string `json:"base_ref"`
	BaseSHA  string `json:"base_sha,omitempty"`
	// Fork is true when the head is in another repository than the base.
	Fork bool `json:"fork,omitempty"`
	// MaintainerCanModify is the author's "Allow edits by maintainers".
	MaintainerCanModify bool `json:"maintainer_can_modify,omitempty"`
}

// ReviewComment is one comment of a review thread.
type ReviewComment struct {
	ID         int64  `json:"id"`
	InReplyTo  int64  `json:"in_reply_to,omitempty"`
	Author     string `json:"author"`
	AuthorType string `json:"author_type,omitempty"`
	Body       string `json:"body"`
	Path       string `json:"path,omitempty"`
	// Line and StartLine are the commented lines of the file (StartLine
	// only for a range); 0 when the comment no longer applies to the diff.
	Line      int    `json:"line,omitempty"`
	StartLine int    `json:"start_line,omitempty"`
	Side      string `json:"side,omitempty"`
	DiffHunk  string `json:"diff_hunk,omitempty"`
	CommitID  string `json:"commit_id,omitempty"`
	URL       string `json:"url,omitempty"`
}

// ReviewThread is a line comment and its replies, oldest first.
type ReviewThread struct {
	Comments []ReviewComment
	// Resolved is true once someone marked the conversation resolved.
	Resolved bool
	// Outdated is true when the commented line is no longer in the diff.
	Outdated bool
}

// CheckRun is a check run the bot shows on a commit.
type CheckRun struct {
	ID                     int64
	Name, HeadSHA          string
	Status, Conclusion     string
	ExternalID, DetailsURL string
	Title, Summary, Text   string
	Actions                []CheckAction
}

// CheckAction is a button on a completed check run.
type CheckAction struct{ Label, Description, Identifier string }

// Brief is what the agent is told when it starts.
type Brief struct {
	Repo         string
	Issue        int
	Title, Body  string
	Comments     []Comment
	Instructions string
	Requester    string
	// Settings are the repository's rules: budgets, model, protected
	// paths, the test command hint.
	Settings policy.Settings
	// Pull is set when the task works on a pull request.
	Pull *PullBrief
}

// PullBrief is what the agent is told about the pull request it works on.
// Everything but the numbers and refs was written by users and is data.
type PullBrief struct {
	Number  int
	Author  string
	HeadRef string
	BaseRef string
	// Fork is true when the pull request comes from another repository.
	Fork bool
	// Diff is the pull request's diff against its base, maybe cut short.
	Diff          string
	DiffTruncated bool
	// Review is the line comment the task was asked in, if it was.
	Review *ReviewBrief
	// Checklist are the review threads the task is to address, numbered
	// from 1 in order; the agent may reply to each (Progress.Replies).
	Checklist []ThreadBrief
}

// ReviewBrief is a review comment on a line of the diff.
type ReviewBrief struct {
	Path            string
	StartLine, Line int
	Side            string
	DiffHunk        string
	Author, Comment string
	// Thread are the earlier comments of the thread, by writers.
	Thread []Comment
}

// ThreadBrief is one review thread of the checklist.
type ThreadBrief struct {
	Path     string
	Line     int
	DiffHunk string
	// Comments are the thread's comments by writers, oldest first.
	Comments []Comment
}

// Progress is the agent's state after a turn.
type Progress struct {
	Conversation []byte
	Turns        int
	Tokens       int
	Plan         []PlanItem
	Steps        []string
	Finished     bool
	Title        string
	Summary      string
	// Pending is the command the agent asked to run, if it asked.
	Pending *Pending
	// Replies are the agent's notes for the checklist's threads, by the
	// thread's number (from 1), given when it finished.
	Replies map[int]string
}

// Pending is an execution request as the agent made it.
type Pending struct{ Command, Reason string }

// Outcome is what the agent is told about its execution request.
type Outcome struct {
	Verdict string // Approved (then Result is set), Rejected, TimedOut, Withdrawn
	By      string
	Reason  string
	Result  *RunResult
}

// Agent runs the model one turn at a time over a conversation the task
// keeps in the store.
type Agent interface {
	Start(b Brief) ([]byte, error)
	Turn(ctx context.Context, conversation []byte, workdir string) (Progress, error)
	// Resolve hands the agent the outcome of its pending request.
	Resolve(conversation []byte, o Outcome) ([]byte, error)
}

// RunSpec is one approved command to run, with the sandbox the
// repository's settings ask for (already within the operator's caps).
type RunSpec struct {
	Dir     string
	Command string
	Labels  map[string]string
	Image   string
	Network string // none or bridge
	Memory  int64  // bytes
	// Disk bounds what the command may write in its workspace, the files
	// included (bytes; 0: the runner's default).
	Disk int64
	CPUs float64
	// Caches and Env are the repository's dependencies (Dependencies):
	// read-only volumes, and the variables that point the tools at them.
	Caches  []CacheMount
	Env     []string
	Links   []Link
	Timeout time.Duration
}

// Link is a symbolic link the run's workspace gets at Name (one entry of
// its top directory, where the files have none) pointing at Target: a
// node_modules that setup left in the cache.
type Link struct{ Name, Target string }

// CacheMount is a volume a run mounts at Target.
type CacheMount struct {
	Volume, Target string
	ReadOnly       bool
}

// Dependencies makes a repository's dependencies ready for an approved
// run: it runs the repository's setup behind the fence into the
// repository's cache unless that cache is ready for the run's manifests.
type Dependencies interface {
	Prepare(ctx context.Context, r DepsRequest) (DepsReady, error)
}

// DepsRequest is one approved run's need for its dependencies.
type DepsRequest struct {
	Repo Repo
	// Dir holds the approved commit's files, as the run gets them; Base
	// the default branch's the task started from, which alone may fill a
	// cache the repository's tasks share (see setup.Request).
	Dir, Base string
	Image     string
	// Setup is the repository's setup (nil: the defaults).
	Setup []string
	// Hosts and Nets are where setup may connect beyond the image's
	// toolchain defaults (ToolchainHosts): host patterns, and non-public
	// ranges in CIDR form.
	Hosts          []string
	Nets           []string
	ToolchainHosts bool
	Memory, Disk   int64
	CPUs           float64
	Timeout        time.Duration
	Labels         map[string]string
}

// DepsReady is what the run gets, and what setup did if it ran.
type DepsReady struct {
	Caches []CacheMount
	Env    []string
	Links  []Link
	// Setup is set when a setup ran for this run.
	Setup *SetupRecord
	// Release frees what the run alone used (a private cache); nil when
	// nothing. Called once the run ended.
	Release func(context.Context)
}

// Runner runs approved commands in a sandbox. A command that fails, times
// out or runs out of memory is a normal result; an error means the runner
// itself failed.
type Runner interface {
	Run(ctx context.Context, s RunSpec) (RunResult, error)
}

// Change is one file that differs from the base commit.
type Change struct {
	Path    string
	Deleted bool
}

// FileStat is the size of the change to one file.
type FileStat struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
}

var (
	// ErrNoChanges means there was nothing to commit.
	ErrNoChanges = errors.New("no changes")
	// ErrPushRejected means the remote branch has commits the push would
	// overwrite; the bot never forces.
	ErrPushRejected = errors.New("push rejected: the remote branch has other commits")
	// ErrBaseGone means the commit a task started from is no longer in the
	// default branch's history.
	ErrBaseGone = errors.New("base commit no longer on the default branch")
	// ErrNotPermitted means GitHub refused the call for lack of access
	// (an installation that does not cover a fork, say).
	ErrNotPermitted = errors.New("not permitted")
	// ErrGone means what the call was about was deleted on GitHub (a
	// review thread's first comment, say).
	ErrGone = errors.New("deleted on GitHub")
)

// Workspace is one checkout on disk.
type Workspace interface {
	Dir() string
	Head() (string, error)
	CreateBranch(name string) error
	Changes() ([]Change, error)
	// Revert puts paths back as HEAD has them (or removes them).
	Revert(paths ...string) error
	// CommitAll commits every change, dated when; ErrNoChanges when there
	// is none. The same inputs give the same commit.
	CommitAll(when time.Time, msg string, author Identity, coAuthors ...Identity) (string, error)
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
	DiffStat(baseSHA string) ([]FileStat, error)
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
