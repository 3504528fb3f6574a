package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pullwright/pullwright/action"
	"github.com/pullwright/pullwright/app"
	"github.com/pullwright/pullwright/inert"
)

// runAction is "bot action": one step of a GitHub Actions workflow. The
// runner sets GITHUB_* and the action's inputs arrive as INPUT_*; see
// action.yml and docs/action.md.
func runAction(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	env, err := action.FromEnv(getenv)
	if err != nil {
		return fmt.Errorf("bot action:\n%w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("repo", env.Repository)
	if env.Runner == "local" {
		log.Warn("runner local: approved commands run on this job's machine as the job's user, without a sandbox of their own; " +
			"the job's machine is thrown away after the run, and every command still needs an approval (docs/action.md)")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := app.RunAction(ctx, env, app.Config{Logger: log, Getenv: getenv, ProxyEnv: proxyEnv(getenv), SandboxCABundle: getenv("BOT_SANDBOX_CA_BUNDLE")})
	report(getenv, log, res)
	if err != nil {
		return err
	}
	return nil
}

// report writes the step's outputs and summary. The files belong to the
// runner; one that cannot be written costs only the summary.
func report(getenv func(string) string, log *slog.Logger, res app.ActionResult) {
	line := fmt.Sprintf("Pullwright: %s", res.Outcome)
	switch {
	case res.Outcome == "ignored":
		line += " (" + res.Why + ")"
	case res.Outcome == "waiting":
		line += fmt.Sprintf(": task %d on #%d waits for an answer; its state is in %s", res.TaskID, res.Issue, res.StateRef)
	case res.TaskID != 0:
		line += fmt.Sprintf(": task %d on #%d", res.TaskID, res.Issue)
	}
	if len(res.Spend.Models) > 0 {
		line += " (" + res.Spend.String() + ")"
	}
	if res.PRURL != "" {
		line += ", pull request " + res.PRURL
	}
	if res.OutOfBudget != "" && res.Error == "" {
		line += ", a draft: " + res.OutOfBudget + " before the work was done"
	}
	summary := line
	if res.Error != "" {
		line += ": " + res.Error
		// The job summary is Markdown the run's page renders, and an
		// error may quote what the agent wrote: it shows as text there
		// (inert.Line), on the workflow's GitHub.
		summary += ": " + inert.Line(res.Error, inert.GitHub(getenv("GITHUB_SERVER_URL")))
	}
	log.Info(line)
	appendFile := func(name, text string) {
		path := getenv(name)
		if path == "" {
			return
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = io.WriteString(f, text)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			log.Warn("could not write to the runner's file", "file", name, "err", err)
		}
	}
	appendFile("GITHUB_STEP_SUMMARY", summary+"\n")
	var out strings.Builder
	fmt.Fprintf(&out, "outcome=%s\n", res.Outcome)
	if res.TaskID != 0 {
		fmt.Fprintf(&out, "task-id=%d\n", res.TaskID)
	}
	if res.PRURL != "" {
		fmt.Fprintf(&out, "pull-request-url=%s\n", res.PRURL)
	}
	appendFile("GITHUB_OUTPUT", out.String())
}
