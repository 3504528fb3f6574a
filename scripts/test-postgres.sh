#!/usr/bin/env bash
# A throwaway Postgres for the tests, in a directory of its own:
#
#   dsn=$(scripts/test-postgres.sh start DIR)   # prints a superuser's DSN
#   PULLWRIGHT_TEST_POSTGRES=$dsn go test ./task/postgres/
#   scripts/test-postgres.sh stop DIR
#
# DIR holds the cluster, its log and its socket, so two runs (two worktrees,
# or CI twice in a row) never share anything but the loopback interface, on
# which each takes a port of its own. Postgres refuses to run as root, so as
# root the server runs as an unprivileged user (postgres, which Debian's
# package creates, or pullwright-pg, created here). It listens on 127.0.0.1
# only, and asks for a random password: the machine may be shared.
set -euo pipefail

cmd=${1:?usage: $0 start|stop DIR}
dir=${2:?usage: $0 start|stop DIR}

# Debian keeps the server's programs off PATH, under one directory per major version.
bin=$(dirname "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n1)")
if [ ! -x "$bin/initdb" ]; then
	echo "no initdb: install Debian's postgresql package" >&2
	exit 1
fi

as_user=()
if [ "$(id -u)" = 0 ]; then
	user=postgres
	if ! id "$user" >/dev/null 2>&1; then
		user=pullwright-pg
		id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
	fi
	as_user=(runuser -u "$user" --)
fi

case $cmd in
stop)
	[ -d "$dir/data" ] && "${as_user[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	exit 0
	;;
start) ;;
*)
	echo "usage: $0 start|stop DIR" >&2
	exit 2
	;;
esac

mkdir -p "$dir"
password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$password" >"$dir/pwfile"
if [ ${#as_user[@]} -gt 0 ]; then
	chown -R "$user" "$dir"
fi
chmod 700 "$dir"
"${as_user[@]}" "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" \
	--auth=scram-sha-256 -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 || {
	cat "$dir/initdb.log" >&2
	exit 1
}
rm -f "$dir/pwfile"

# A free port is only known free once the server binds it: try a few
# random ones rather than race a separate probe. fsync is off because the
# cluster dies with the test run.
for _ in 1 2 3 4 5 6 7 8; do
	port=$((20000 + RANDOM % 40000))
	if "${as_user[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
		start >/dev/null 2>&1; then
		echo "postgres://postgres:$password@127.0.0.1:$port/postgres?sslmode=disable"
		exit 0
	fi
	if ! grep -q 'Address already in use\|could not create any TCP/IP sockets' "$dir/server.log" 2>/dev/null; then
		break
	fi
done
echo "postgres did not start:" >&2
cat "$dir/server.log" >&2 2>/dev/null || true
exit 1
