package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pullwright/pullwright"
	"github.com/pullwright/pullwright/action"
	"github.com/pullwright/pullwright/ghapp"
	"github.com/pullwright/pullwright/policy"
	"github.com/pullwright/pullwright/repo"
	"github.com/pullwright/pullwright/task/sqlite"
)

// ActionsIdentity is who a workflow's GITHUB_TOKEN acts as.
func ActionsIdentity() pullwright.Identity {
	return pullwright.Identity{
		Login: "github-actions[bot]",
		Name:  "github-actions[bot]",
		Email: "41898282+github-actions[bot]@users.noreply.github.com",
		ID:    41898282,
	}
}

// ActionResult is how one run of the GitHub Action ended.
type ActionResult = action.Result

// RunAction is `bot action`: one workflow run, which action.Step does with
// the bot this builds. cfg carries tuning and the logger; env fills in the
// rest.
func RunAction(ctx context.Context, env action.Env, cfg Config) (ActionResult, error) {
	dir, err := os.MkdirTemp(env.TempDir, "pullwright-run-")
	if err != nil && env.TempDir != os.TempDir() {
		// RUNNER_TEMP names a path of the runner's machine, which a
		// container action does not see.
		dir, err = os.MkdirTemp("", "pullwright-run-")
	}
	if err != nil {
		return ActionResult{}, fmt.Errorf("create the run's directory: %w", err)
	}
	// The store and workspaces live for this run only: what outlives it is
	// on GitHub and in the repository.
	defer os.RemoveAll(dir)
	cfg.Token = env.Token
	cfg.APIURL = env.APIURL
	cfg.OpenAIKey, cfg.OpenAIBaseURL = env.OpenAIKey, env.OpenAIBaseURL
	cfg.OpenAIAPIType, cfg.OpenAIAPIVersion = env.OpenAIAPIType, env.OpenAIAPIVersion
	if env.Model != "" {
		cfg.Model = env.Model
	}
	if env.Command != "" {
		cfg.Command = env.Command
	}
	if len(env.Prices) > 0 && cfg.Operator == nil {
		// The Action has no operator file; its prices input is the one
		// part of one it takes.
		op := policy.DefaultOperator()
		if cfg.Model != "" {
			op.Models.Default = cfg.Model
		}
		op.Prices = env.Prices
		cfg.Operator = op
	}
	cfg.Runner, cfg.SandboxImage = env.Runner, env.SandboxImage
	cfg.LocalPath = env.Path
	cfg.ApprovalTimeout = env.ApprovalTimeout
	cfg.WorkDir = filepath.Join(dir, "work")
	cfg.Workers = 1
	// The run's store is opened here, as its concrete type, because the
	// run restores saved tasks into it, which task.Store does not do.
	store, err := sqlite.Open(ctx, filepath.Join(dir, "run.db"))
	if err != nil {
		return ActionResult{}, err
	}
	cfg.store = store
	a, err := New(ctx, cfg)
	if err != nil {
		return ActionResult{}, err
	}
	defer a.Close()
	// The step's logic reaches GitHub and the refs through the ports
	// above, which hold the credentials; it gets none of them itself.
	stepEnv := env
	stepEnv.Token, stepEnv.OpenAIKey = "", ""
	step := &action.Step{
		Env:     stepEnv,
		Store:   store,
		Events:  a.webhook,
		Pool:    a.pool,
		GitHub:  a.github,
		Refs:    stateRefs{a.github},
		Command: a.cfg.Command,
		Log:     a.log,
	}
	return step.Run(ctx)
}

// stateRefs reaches the repository's state refs with the run's token, so
// that the token stays out of action's logic.
type stateRefs struct{ github *ghapp.App }

func (r stateRefs) ListRefs(ctx context.Context, url, prefix string) (map[string]string, error) {
	token, err := r.github.Token(ctx, 0)
	if err != nil {
		return nil, err
	}
	return repo.ListRefs(ctx, url, token, prefix)
}

func (r stateRefs) ReadRefFile(ctx context.Context, url, ref, path string) ([]byte, string, error) {
	token, err := r.github.Token(ctx, 0)
	if err != nil {
		return nil, "", err
	}
	return repo.ReadRefFile(ctx, url, token, ref, path)
}

func (r stateRefs) WriteRefFile(ctx context.Context, url, ref, path string, data []byte, author pullwright.Identity, msg string, when time.Time, expect string) (string, error) {
	token, err := r.github.Token(ctx, 0)
	if err != nil {
		return "", err
	}
	return repo.WriteRefFile(ctx, url, token, ref, path, data, author, msg, when, expect)
}

func (r stateRefs) DeleteRef(ctx context.Context, url, ref, expect string) error {
	token, err := r.github.Token(ctx, 0)
	if err != nil {
		return err
	}
	return repo.DeleteRef(ctx, url, token, ref, expect)
}
