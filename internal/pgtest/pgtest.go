// Package pgtest gives a test a Postgres database of its own, made on the
// server that PULLWRIGHT_TEST_POSTGRES names and dropped when the test
// ends, so that tests of several packages can share one server at once.
// Without the variable the test is skipped, except with CI=true, where a
// missing Postgres is a failure: .ci/run starts one.
package pgtest

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pullwright/pullwright/internal/prereq"
)

// Env names the variable that holds a DSN of a superuser (one who may
// create databases) on the test server.
const Env = "PULLWRIGHT_TEST_POSTGRES"

// URL creates an empty database and returns its URL. The database is
// dropped, with any connection still open to it, when t ends.
func URL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(Env)
	if admin == "" {
		prereq.Missing(t, "Postgres", Env+" is not set (a postgres:// URL of a superuser on a test server; scripts/test-postgres.sh start DIR starts one and prints it)")
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	name := "pullwright_test_" + strings.ToLower(rand.Text()[:16])
	exec(t, admin, "CREATE DATABASE "+name)
	t.Cleanup(func() {
		// FORCE: a test that failed half-way may leave a connection open.
		exec(t, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u.Path = "/" + name
	return u.String()
}

// Drop drops the database of url, a URL that URL returned, at once: for
// tests of what a bot does when its database goes away.
func Drop(t testing.TB, dbURL string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if !strings.HasPrefix(name, "pullwright_test_") {
		t.Fatalf("pgtest.Drop: %q is not a test database", name)
	}
	exec(t, os.Getenv(Env), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
}

// exec runs one statement as the admin. CREATE and DROP DATABASE cannot
// run in a transaction, so this is a plain connection, not a pool.
func exec(t testing.TB, admin, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to the test Postgres (%s): %v", Env, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
