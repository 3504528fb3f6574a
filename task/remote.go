package task

import (
	"context"
	"time"
)

// remote is how a room reaches the repository's git remote: a fresh
// installation token for each operation (tokens live for an hour and are
// never stored), and a deadline on each network call.
type remote struct {
	tokens  tokenSource
	timeout time.Duration
}

// tokenSource mints installation tokens.
type tokenSource interface {
	Token(ctx context.Context, installationID int64) (string, error)
}

func (rm remote) token(ctx context.Context, t *Task) (string, error) {
	token, err := rm.tokens.Token(ctx, t.Repo.InstallationID)
	if err != nil {
		return "", retryf(err, "getting an installation token failed")
	}
	return token, nil
}

// gitCtx bounds one clone, fetch or push (default 5m), so a git server
// that accepts connections and never answers fails the step instead of
// holding it for the whole step timeout.
func (rm remote) gitCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := rm.timeout
	if d <= 0 {
		d = 5 * time.Minute
	}
	return context.WithTimeout(ctx, d)
}

// fetch makes sure ws has commit sha.
func (rm remote) fetch(ctx context.Context, t *Task, ws Workspace, sha string) error {
	token, err := rm.token(ctx, t)
	if err != nil {
		return err
	}
	gctx, cancel := rm.gitCtx(ctx)
	defer cancel()
	return ws.Fetch(gctx, token, sha)
}
