package task

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/untrusted"
)

// conversation is what of GitHub every room of task uses: answering on
// the issue or pull request a task was asked on, reacting to the comment
// that asked, and asking GitHub who may do what there.
type conversation interface {
	UpsertComment(ctx context.Context, r pullwright.Repo, issue int, marker string, commentID int64, body string) (pullwright.Posted, error)
	AddReaction(ctx context.Context, r pullwright.Repo, commentID int64, content string) error
	AddReviewReaction(ctx context.Context, r pullwright.Repo, commentID int64, content string) error
	Permission(ctx context.Context, r pullwright.Repo, user string) (string, error)
	TeamMember(ctx context.Context, r pullwright.Repo, org, team, user string) (bool, error)
}

// desk is what the rooms of task share: the clock, the log, the
// operator's rules, the comment command word, and the conversation. Each
// room (Flow's fix work, commands, answers, pulls, requests, runs) has one
// and adds the ports of its own work.
type desk struct {
	gh      conversation
	command string
	op      *policy.Operator
	clock   func() time.Time
	log     *slog.Logger
	// console is the console's address, or "" when it is off.
	console string
}

func (d desk) now() time.Time {
	if d.clock != nil {
		return d.clock()
	}
	return time.Now()
}

// sessionURL is t's page in the console, or "" without a console.
func (d desk) sessionURL(t *Task) string {
	if d.console == "" {
		return ""
	}
	return fmt.Sprintf("%s/console/tasks/%d", d.console, t.ID)
}

func marker(t *Task, what string) string { return fmt.Sprintf("task-%d-%s", t.ID, what) }

func (d desk) reply(ctx context.Context, t *Task, body string) error {
	return d.replyOn(ctx, t, t.Issue, body)
}

// replyOn posts t's one reply on issue, and ends t.
func (d desk) replyOn(ctx context.Context, t *Task, issue int, body string) error {
	if _, err := d.gh.UpsertComment(ctx, t.Repo, issue, marker(t, "reply"), 0, body); err != nil {
		return retryf(err, "posting a reply on #%d failed", issue)
	}
	return t.Move(Done)
}

// updateStatus edits the fix's status comment (posted by the first call)
// to show where the task stands.
func (d desk) updateStatus(ctx context.Context, t Job) error {
	p, err := d.gh.UpsertComment(ctx, t.Repo, t.Issue, marker(t.Task, "status"), t.StatusCommentID, RenderStatusWith(t, d.command, d.sessionURL(t.Task)))
	if err != nil {
		return retryf(err, "updating the status comment failed")
	}
	t.StatusCommentID, t.StatusCommentURL = p.ID, p.URL
	return nil
}

func (d desk) refuse(ctx context.Context, t *Task, why string) error {
	return d.reply(ctx, t, fmt.Sprintf("@%s sorry: %s.", t.Requester.Login, why))
}

// react puts a reaction on the comment that asked for t: an issue
// comment, or a review comment, which GitHub reacts to elsewhere. It is a
// courtesy: a deleted comment must not stop the work.
func (d desk) react(ctx context.Context, t *Task, content string) {
	var err error
	switch {
	case t.Review != nil:
		err = d.gh.AddReviewReaction(ctx, t.Repo, t.Review.CommentID, content)
	case t.CommentID != 0:
		err = d.gh.AddReaction(ctx, t.Repo, t.CommentID, content)
	default:
		return
	}
	if err != nil {
		d.log.WarnContext(ctx, "react to comment", "task_id", t.ID, "content", content, "err", err)
	}
}

// operator is the operator's configuration, or the built-in one.
func (d desk) operator() *policy.Operator {
	if d.op != nil {
		return d.op
	}
	return policy.DefaultOperator()
}

// settings are the rules t runs under: those it recorded when it started,
// or the defaults for a task from before repository configuration existed.
func (d desk) settings(t *Task) policy.Settings {
	if t.Settings != nil {
		return *t.Settings
	}
	s, err := d.operator().Resolve(nil)
	if err != nil {
		// The operator file was checked at start-up, so this cannot happen;
		// if it does, the strictest rules stand in.
		return policy.Settings{Protected: policy.AlwaysProtected}
	}
	return s
}

// admits asks GitHub whether user passes rule: trust comes from the
// permission and team APIs, never from the payload. When user does not,
// why is a sentence saying what doing would need.
func (d desk) admits(ctx context.Context, r pullwright.Repo, rule policy.Who, user, doing string) (ok bool, why string, err error) {
	role, err := d.gh.Permission(ctx, r, user)
	if err != nil {
		return false, "", retryf(err, "checking @%s's permission failed", user)
	}
	ok, err = rule.Admits(role, user, r.Owner, d.member(ctx, r, user))
	if err != nil {
		return false, "", retryf(err, "checking @%s's team membership failed", user)
	}
	if !ok {
		why = rule.Refusal(role, doing)
	}
	return ok, why, nil
}

func (d desk) member(ctx context.Context, r pullwright.Repo, user string) func(org, team string) (bool, error) {
	return func(org, team string) (bool, error) { return d.gh.TeamMember(ctx, r, org, team, user) }
}

// heard keeps the comments the model may read: those of people with write
// access, with hidden markup removed. The bot's own comments are left out
// too: the model needs the people's words, not the bot's reports. It
// returns how many comments by others were left out. seen keeps who was
// found a writer, across the calls of one task's step.
func (d desk) heard(ctx context.Context, t *Task, cs []pullwright.Comment, seen map[string]bool) ([]pullwright.Comment, int) {
	out := cs[:0:0]
	left := 0
	for _, c := range cs {
		if strings.Contains(c.Body, "<!-- pullwright:") {
			continue
		}
		if !d.writerCached(ctx, t, seen, c) {
			left++
			continue
		}
		out = append(out, pullwright.Comment{Author: c.Author, AuthorType: c.AuthorType, Body: untrusted.Visible(c.Body)})
	}
	return out, left
}

// writerCached is writer with the answers kept in seen, by login.
func (d desk) writerCached(ctx context.Context, t *Task, seen map[string]bool, c pullwright.Comment) bool {
	login := strings.ToLower(c.Author)
	ok, known := seen[login]
	if !known {
		ok = d.writer(ctx, t, c)
		seen[login] = ok
	}
	return ok
}

// writer reports whether a comment's author has write access. Other apps'
// comments are left out without asking, and so is the comment of anyone
// whose permission cannot be read: when in doubt, the model does not hear
// it, and the task goes on.
func (d desk) writer(ctx context.Context, t *Task, c pullwright.Comment) bool {
	if c.AuthorType == "Bot" || strings.HasSuffix(strings.ToLower(c.Author), "[bot]") {
		return false
	}
	role, err := d.gh.Permission(ctx, t.Repo, c.Author)
	if err != nil {
		d.log.WarnContext(ctx, "permission of a commenter unknown; the comment is left out", "task_id", t.ID, "user", c.Author, "err", err)
		return false
	}
	return policy.Rank(role) >= policy.Rank("write")
}
