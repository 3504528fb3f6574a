// Package sqlstore holds what task's two SQL stores, task/postgres and
// task/sqlite, say alike above their drivers: how a task.ListQuery reads
// as SQL, reading rows to the end, and when a schema is too new to open.
// It imports no driver (Postgres' goes through pgx, SQLite's through
// database/sql), so what it takes of rows is an interface both satisfy;
// each store keeps its own SQL dialect, connections and transactions.
package sqlstore

import (
	"fmt"
	"strings"

	"github.com/pullwright/pullwright/task"
)

// ListTail is the part of a List query after FROM: the WHERE, ORDER BY
// and LIMIT that q asks for, and their arguments in order. repo is the
// SQL expression of a task's "owner/name", which each dialect digs out of
// the task's JSON its own way; param(n) is the placeholder of the nth
// argument ("$n" for Postgres, "?" for SQLite). The kinds and the order
// are the same for every store: the tasks that do a person's work (fixes
// and reviews, whose runs are asked for and whose model calls cost), not
// the commands and answers around them; newest (highest id) first.
func ListTail(q task.ListQuery, repo string, param func(n int) string) (tail string, args []any) {
	where := []string{"kind IN ('fix', 'review')"}
	arg := func(v any) string {
		args = append(args, v)
		return param(len(args))
	}
	if q.Repo != "" {
		where = append(where, "lower("+repo+") = lower("+arg(q.Repo)+")")
	}
	if q.State != "" {
		where = append(where, "state = "+arg(string(q.State)))
	}
	if q.Before > 0 {
		where = append(where, "id < "+arg(q.Before))
	}
	limit := arg(q.PageSize())
	return "WHERE " + strings.Join(where, " AND ") + " ORDER BY id DESC LIMIT " + limit, args
}

// Rows is what Collect needs of a result set; pgx.Rows and *sql.Rows both
// have it. Closing the rows stays with the caller, whose driver decides
// how.
type Rows interface {
	Next() bool
	Err() error
}

// Collect reads rows to the end, each through scan, which reads the
// current row. It stops at the first error, scan's or the rows'.
func Collect[T any](rows Rows, scan func() (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ScanRows is Rows that can also scan the current row.
type ScanRows interface {
	Rows
	Scan(dest ...any) error
}

// CountByState reads rows of (state, count), as a GROUP BY state gives
// them, into a map.
func CountByState(rows ScanRows) (map[task.State]int, error) {
	out := map[task.State]int{}
	for rows.Next() {
		var (
			st task.State
			n  int
		)
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[st] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckVersion compares the schema version a database is at with the
// number of migrations this bot knows. current says there is nothing to
// run; a database newer than the bot is an error, since an older bot
// cannot know what the newer one's schema means.
func CheckVersion(version, known int) (current bool, err error) {
	if version > known {
		return false, fmt.Errorf("migrate: the database is at schema version %d, newer than this bot knows (%d): run a newer bot", version, known)
	}
	return version == known, nil
}
