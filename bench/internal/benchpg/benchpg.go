// Package benchpg gives each measurement on Postgres a database of its
// own, on the server a benchmark's -postgres URL names, and says what that
// server's commits wait for. bench/ingest and bench/queue share it so that
// their Postgres figures are made on the same settings and read the same.
package benchpg

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Settings says what the server's commit waits for, since that decides
// what its figures mean: the server's version, host and port, then per
// (how the program uses the server, in its own words), then fsync. The
// stores' own connections ask for synchronous_commit=on (see
// CreateDatabase), whatever the server's default.
func Settings(ctx context.Context, admin, per string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect to Postgres (-postgres): %w", err)
	}
	defer conn.Close(ctx)
	var version, fsync string
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync')`).Scan(&version, &fsync); err != nil {
		return "", fmt.Errorf("read Postgres settings: %w", err)
	}
	cfg := conn.Config()
	return fmt.Sprintf("%s at %s:%d, %s, fsync=%s", version, cfg.Host, cfg.Port, per, fsync), nil
}

// CreateDatabase makes an empty database on the server admin names and
// returns its URL, with synchronous_commit=on for the store's connections:
// a commit then waits until its WAL is written, so a 202 survives the
// server's crash. (scripts/test-postgres.sh turns it off server-wide, which
// would measure a commit that is not yet safe.) drop removes the database.
//
// Both statements run on a context that ctx's end does not cancel, with a
// timeout of their own: a drop must still run after the measurement's
// context has ended, and a create cut off after the server made the
// database would leave behind one nobody knows the name of.
func CreateDatabase(ctx context.Context, admin string) (dbURL string, drop func() error, err error) {
	u, err := url.Parse(admin)
	if err != nil {
		// Not url.Parse's error: it quotes the URL, password and all.
		return "", nil, errors.New("-postgres does not parse as a URL")
	}
	name := "pullwright_bench_" + strings.ToLower(rand.Text()[:16])
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return fmt.Errorf("connect to Postgres: %w", err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
		return nil
	}
	if err := exec("CREATE DATABASE " + name); err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	q := u.Query()
	q.Set("synchronous_commit", "on")
	u.RawQuery = q.Encode()
	return u.String(), func() error { return exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") }, nil
}
