#!/usr/bin/env bash
# Installs the released `bot` binary that the Action runs (action.yml), so
# that no workflow run compiles the bot. It picks the release that matches
# the ref the workflow named the action by, downloads the binary for this
# machine and SHA256SUMS from that release, refuses a binary whose checksum
# differs, and prints the binary's path on stdout (progress goes to stderr).
#
# Environment (action.yml sets it; a test sets it too):
#   ACTION_REPOSITORY  owner/name of the action (github.action_repository)
#   ACTION_REF         the ref it was named by: v1.2.3, v1, v1.2, a commit
#   VERSION            the action's version input: a release tag that wins
#                      over ACTION_REF
#   SERVER_URL         where the repository and its releases are
#                      (github.server_url)
#   RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP  set by the runner
#
# A ref that is not a release tag (v1, v1.2, a commit) is resolved to the
# highest vX.Y.Z tag on the same commit: the moving tags of docs/action.md
# point at a release's commit, so they resolve to that release. A ref on no
# release's commit (a branch's head, an unreleased commit) fails: nothing
# is built here.
set -euo pipefail

fail() { echo "::error title=Pullwright::$*" >&2; exit 1; }
log() { echo "pullwright install: $*" >&2; }

repo=${ACTION_REPOSITORY:-}
[ -n "$repo" ] || fail "the action's repository is unknown (github.action_repository is empty); set the action's version input to a release tag such as v0.1.0"
server=${SERVER_URL:-https://github.com}
server=${server%/}

semver='^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$'
version=${VERSION:-}
ref=${ACTION_REF:-}
if [ -z "$version" ]; then
	[ -n "$ref" ] || fail "the action's ref is unknown (github.action_ref is empty); set the action's version input to a release tag such as v0.1.0"
	if [[ $ref =~ $semver ]]; then
		version=$ref
	else
		# One listing of the repository's refs answers both questions: which
		# commit the ref names, and which release tags sit on that commit.
		# An annotated tag's commit is on its peeled line (name^{}), which
		# follows the tag's own line, so the last line of a name wins. awk
		# rather than an associative array: macOS's own bash is version 3.
		refs=$(git ls-remote "$server/$repo.git" | awk '{ sub(/\^\{\}$/, "", $2); c[$2] = $1 } END { for (n in c) print c[n], n }') ||
			fail "list the refs of $server/$repo"
		if [[ $ref =~ ^[0-9a-f]{40}$ ]]; then
			commit=$ref
		else
			commit=$(awk -v t="refs/tags/$ref" -v h="refs/heads/$ref" '$2 == t { tag = $1 } $2 == h { head = $1 } END { print (tag != "" ? tag : head) }' <<<"$refs")
			[ -n "$commit" ] || fail "$repo has no tag or branch named $ref"
		fi
		version=$(awk -v c="$commit" '$1 == c && sub(/^refs\/tags\//, "", $2) { print $2 }' <<<"$refs" |
			grep -E "$semver" | sort -V | tail -n 1 || true)
		[ -n "$version" ] || fail "$ref ($commit) is no release of $repo: name the action by a release tag (vX.Y.Z, or a moving tag such as v1), or run an unreleased commit with go run (docs/action.md)"
		log "$ref is $version"
	fi
fi
[[ $version =~ $semver ]] || fail "version $version is not a release tag (vX.Y.Z)"

case "${RUNNER_OS:-Linux}" in
Linux) os=linux ;;
macOS) os=darwin ;;
*) fail "no released binary for $RUNNER_OS runners: use a Linux or macOS runner" ;;
esac
case "${RUNNER_ARCH:-X64}" in
X64) arch=amd64 ;;
ARM64) arch=arm64 ;;
*) fail "no released binary for $RUNNER_ARCH runners: use an X64 or ARM64 runner" ;;
esac
asset=bot-$os-$arch

# A directory of this run's own, made new: in a shared /tmp another user
# could have put a link or a binary of theirs at a name known in advance.
dir=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/pullwright-$version.XXXXXX") ||
	fail "make a directory for the download"
base=$server/$repo/releases/download/$version
log "downloading $asset of $repo $version"
# Retries cover a dropped connection; --fail turns a missing asset (404)
# into a failure instead of an HTML page saved as the binary.
curl --fail --silent --show-error --location --retry 3 -o "$dir/SHA256SUMS" "$base/SHA256SUMS" ||
	fail "download SHA256SUMS of $repo $version"
curl --fail --silent --show-error --location --retry 3 -o "$dir/$asset" "$base/$asset" ||
	fail "download $asset of $repo $version"

want=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print $1 }' "$dir/SHA256SUMS")
[ -n "$want" ] || fail "SHA256SUMS of $repo $version lists no $asset"
if command -v sha256sum >/dev/null; then
	got=$(sha256sum "$dir/$asset" | awk '{ print $1 }')
else
	got=$(shasum -a 256 "$dir/$asset" | awk '{ print $1 }')
fi
if [ "$got" != "$want" ]; then
	rm -f "$dir/$asset"
	fail "$asset of $repo $version has SHA-256 $got, but SHA256SUMS says $want: refusing to run it"
fi
chmod 0755 "$dir/$asset"
mv "$dir/$asset" "$dir/bot"
log "$asset verified ($got)"
echo "$dir/bot"
