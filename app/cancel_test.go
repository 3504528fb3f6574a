package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/internal/fakegithub"
	"github.com/pullwright/pullwright/internal/fakellm"
	"github.com/pullwright/pullwright/task"
	"github.com/pullwright/pullwright/task/sqlite"
	"github.com/pullwright/pullwright/task/tasktest"
)

// "/agent cancel" once a task's final commit is on a pull request's own
// branch: there is no pull request of the bot's to close, so the reply says
// what is left and what undoing it takes.
func TestCancelAfterTheFinalPush(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const owner, name = "acme", "widgets"
	gh := fakegithub.New(t)
	gh.AddInstallation(1, owner+"/"+name)
	gh.SetPermission(owner, name, "alice", "write")
	// SQLite: the active task is put in place with its Restore, which the
	// Postgres store has no need of (bot action, its one user, is SQLite's).
	flow := replayFlow(ctx, t, openStore(ctx, t, "sqlite"), gh, fakellm.New(t), t.TempDir())
	r := pullwright.Repo{InstallationID: 1, Owner: owner, Name: name, DefaultBranch: "main"}
	for _, tc := range []struct {
		number       int
		mode, branch string
		want         string
	}{
		{2, task.PushToHead, "docs", "Task 2 has already pushed its final commit to `docs`, this pull request's branch, and is only posting its replies; revert its commits"},
		{3, task.PullInBase, "agent/3-docs", "Task 3 has already pushed its final commit to `agent/3-docs` and is finishing the pull request; close the pull request instead."},
	} {
		gh.AddIssue(owner, name, fakegithub.Issue{Number: tc.number, Title: "Docs", IsPR: true})
		active := tasktest.WithWork(&task.Task{ID: int64(tc.number), Kind: task.KindFix, State: task.Publishing, Issue: tc.number, IsPR: true, Repo: r},
			task.Work{Final: true, Branch: tc.branch, Pull: &task.PullWork{Mode: tc.mode}})
		if err := flow.Store.(*sqlite.Store).Restore(ctx, active); err != nil {
			t.Fatal(err)
		}
		c := &task.Task{ID: int64(100 + tc.number), Kind: task.KindCancel, State: task.Queued, Issue: tc.number, IsPR: true, Repo: r, Requester: task.Person{Login: "alice"}}
		if err := flow.Step(ctx, c); err != nil {
			t.Fatal(err)
		}
		var replies []string
		for _, cm := range gh.Comments(owner, name, tc.number) {
			replies = append(replies, cm.Body)
		}
		if len(replies) != 1 || !strings.Contains(replies[0], tc.want) {
			t.Errorf("%s: replies %q, want one saying %q", tc.mode, replies, tc.want)
		}
	}
}
