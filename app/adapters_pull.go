package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/pullwright/pullwright/agent"
	"github.com/pullwright/pullwright/ghapp"
	"github.com/pullwright/pullwright/task"
)

// The gitHub adapter's part for tasks that work on pull requests.

// notPermitted makes ghapp's "GitHub refused for lack of access" the task's,
// keeping ghapp's error (and its message) in the chain. OpenPullRequest's
// error needs it too: the fork flow tells a refusal from a failure by it.
func notPermitted(err error) error {
	if errors.Is(err, ghapp.ErrNotPermitted) && !errors.Is(err, task.ErrNotPermitted) {
		return fmt.Errorf("%w: %w", task.ErrNotPermitted, err)
	}
	return err
}

func (g gitHub) PullRequest(ctx context.Context, r task.Repo, number int) (task.PullInfo, error) {
	p, err := g.app.PullRequest(ctx, r.InstallationID, r.Owner, r.Name, number)
	if err != nil {
		return task.PullInfo{}, notPermitted(err)
	}
	return task.PullInfo{
		Number: p.Number, URL: p.HTMLURL, Title: p.Title, Body: p.Body, Author: p.Author,
		State: p.State, Merged: p.Merged, Locked: p.Locked,
		HeadRef: p.HeadRef, HeadSHA: p.HeadSHA, HeadRepo: p.HeadRepo,
		BaseRef: p.BaseRef, BaseSHA: p.BaseSHA,
		Fork: p.Fork, MaintainerCanModify: p.MaintainerCanModify,
	}, nil
}

func (g gitHub) PullRequestDiff(ctx context.Context, r task.Repo, number, max int) (string, bool, error) {
	d, cut, err := g.app.PullRequestDiff(ctx, r.InstallationID, r.Owner, r.Name, number, max)
	return d, cut, notPermitted(err)
}

func (g gitHub) ReviewThreads(ctx context.Context, r task.Repo, number int) ([]task.ReviewThread, error) {
	ths, err := g.app.ReviewThreads(ctx, r.InstallationID, r.Owner, r.Name, number)
	if err != nil {
		return nil, notPermitted(err)
	}
	out := make([]task.ReviewThread, 0, len(ths))
	for _, th := range ths {
		t := task.ReviewThread{Resolved: th.Resolved, Outdated: th.Outdated}
		for _, c := range th.Comments {
			t.Comments = append(t.Comments, task.ReviewComment{
				ID: c.ID, InReplyTo: c.InReplyTo, Author: c.Author, AuthorType: c.AuthorType,
				Body: c.Body, Path: c.Path, Line: c.Line, StartLine: c.StartLine, Side: c.Side,
				DiffHunk: c.DiffHunk, CommitID: c.CommitID, URL: c.HTMLURL,
			})
		}
		out = append(out, t)
	}
	return out, nil
}

func (g gitHub) ReplyInThread(ctx context.Context, r task.Repo, pr int, rootID int64, marker, body string) (int64, error) {
	id, err := g.app.ReplyInThread(ctx, r.InstallationID, r.Owner, r.Name, pr, rootID, marker, body)
	if errors.Is(err, ghapp.ErrNotFound) {
		return 0, fmt.Errorf("%w: %w", task.ErrGone, err)
	}
	return id, notPermitted(err)
}

func (g gitHub) AddReviewReaction(ctx context.Context, r task.Repo, commentID int64, content string) error {
	return notPermitted(g.app.AddReviewReaction(ctx, r.InstallationID, r.Owner, r.Name, commentID, content))
}

func agentComments(cs []task.Comment) []agent.Comment {
	var out []agent.Comment
	for _, c := range cs {
		out = append(out, agent.Comment{Author: c.Author, Body: c.Body})
	}
	return out
}

// agentPull is the pull request part of the agent's brief; nil for an issue.
func agentPull(p *task.PullBrief) *agent.PullBrief {
	if p == nil {
		return nil
	}
	out := &agent.PullBrief{
		Number: p.Number, Author: p.Author, HeadRef: p.HeadRef, BaseRef: p.BaseRef, Fork: p.Fork,
		Diff: p.Diff, DiffTruncated: p.DiffTruncated,
	}
	if r := p.Review; r != nil {
		out.Review = &agent.ReviewBrief{
			Path: r.Path, StartLine: r.StartLine, Line: r.Line, Side: r.Side, DiffHunk: r.DiffHunk,
			Author: r.Author, Comment: r.Comment, Thread: agentComments(r.Thread),
		}
	}
	for _, th := range p.Checklist {
		out.Checklist = append(out.Checklist, agent.ThreadBrief{
			Path: th.Path, Line: th.Line, DiffHunk: th.DiffHunk, Comments: agentComments(th.Comments),
		})
	}
	return out
}
