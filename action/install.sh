#!/usr/bin/env bash
# Installs the released `bot` binary that the Action runs (action.yml), so
# that no workflow run compiles the bot, and so that a commit of the action
# runs the bytes that commit names and no others.
#
# A release's commit carries, beside this script, action/VERSION (the
# release's tag) and action/SHA256SUMS (the checksums of the release's
# assets), committed by the release workflow before it pushed the tag and
# uploaded those same files (.github/workflows/release.yml,
# scripts/release-commit.sh). This script downloads the binary for this
# machine from that release and checks it against the SHA256SUMS of its own
# checkout (action.yml runs it as $GITHUB_ACTION_PATH/action/install.sh),
# never against a file of the release: whoever can push a tag or upload an
# asset cannot change what a commit already pinned runs. A binary whose
# checksum differs is deleted before it is made executable. The binary's
# path goes to stdout, progress to stderr.
#
# Environment (action.yml sets it; a test sets it too):
#   ACTION_REPOSITORY  owner/name of the action (github.action_repository)
#   ACTION_REF         the ref it was named by: v1.2.3, v1, a commit, a branch
#   VERSION            the action's version input: a release tag, or empty
#   SERVER_URL         where the repository and its releases are
#                      (github.server_url)
#   RUNNER_OS, RUNNER_ARCH, RUNNER_TEMP  set by the runner
#
# The ref's commit may carry no release tag (vX.Y.Z) but the one its
# checkout names: the release workflow makes one commit per release, so a
# second release tag on it is someone's mistake or someone's attack, and the
# step fails naming the tags rather than choosing. Moving tags (v1) are no
# release tags.
#
# A checkout without action/VERSION (a commit between releases, a branch)
# names no binary. With the version input set, it runs that release, checked
# against the files committed at the release tag's commit, fetched with git:
# it is then as safe as that tag. Without it, it fails: nothing is built
# here.
set -euo pipefail

fail() { echo "::error title=Pullwright::$*" >&2; exit 1; }
log() { echo "pullwright install: $*" >&2; }

# A repository that needs credentials fails instead of waiting for a
# password nobody will type.
export GIT_TERMINAL_PROMPT=0

repo=${ACTION_REPOSITORY:-}
[ -n "$repo" ] || fail "the action's repository is unknown (github.action_repository is empty); name the action by a release, such as owner/name@v0.1.0"
server=${SERVER_URL:-https://github.com}
server=${server%/}
ref=${ACTION_REF:-}
input=${VERSION:-}
semver='^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$'
[ -z "$input" ] || [[ $input =~ $semver ]] || fail "version $input is not a release tag (vX.Y.Z)"

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

# The checkout this script is part of: $GITHUB_ACTION_PATH/action.
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

# A directory of this run's own, made new: in a shared /tmp another user
# could have put a link or a binary of theirs at a name known in advance.
dir=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/pullwright.XXXXXX") ||
	fail "make a directory for the download"

# list_refs lists the action repository's refs once, as "commit name"
# lines. An annotated tag's commit is on its peeled line (name^{}), which
# follows the tag's own line, so the last line of a name wins. awk rather
# than an associative array: macOS's own bash is version 3.
refs=
list_refs() {
	[ -z "$refs" ] || return 0
	refs=$(git ls-remote "$server/$repo.git" | awk '{ sub(/\^\{\}$/, "", $2); c[$2] = $1 } END { for (n in c) print c[n], n }') ||
		fail "list the refs of $server/$repo"
}

# check_tags COMMIT VERSION WHAT refuses COMMIT (which WHAT named) when it
# carries a release tag other than VERSION, the release whose checksums it
# holds.
check_tags() {
	local commit=$1 version=$2 what=$3 tags
	list_refs
	tags=$(awk -v c="$commit" '$1 == c && sub(/^refs\/tags\//, "", $2) { print $2 }' <<<"$refs" |
		{ grep -E "$semver" || true; } | sort -V | tr '\n' ' ')
	read -r -a tags <<<"$tags"
	case ${#tags[@]} in
	0) log "$what ($commit) carries no release tag" ;;
	1)
		[ "${tags[0]}" = "$version" ] ||
			fail "$what ($commit) is tagged ${tags[0]}, but the checksums committed on it are those of $version: refusing to run either"
		;;
	*)
		fail "$what ($commit) carries more than one release tag: ${tags[*]}. A release's commit carries its own tag only, so the others were put there by mistake or by someone else: refusing to choose. Remove the tags that are no release of $repo, or name the action by a commit with one release tag"
		;;
	esac
}

if [ -e "$here/VERSION" ] || [ -e "$here/SHA256SUMS" ]; then
	# A release's commit: it names its release and that release's bytes.
	{ [ -f "$here/VERSION" ] && [ -f "$here/SHA256SUMS" ]; } ||
		fail "this checkout of $repo has only one of action/VERSION and action/SHA256SUMS, where a release's commit has both: name the action by a release"
	version=$(head -n 1 "$here/VERSION")
	[[ $version =~ $semver ]] || fail "action/VERSION of this checkout says $version, which is not a release tag (vX.Y.Z)"
	sums=$here/SHA256SUMS
	from="the checksums committed with $version (action/SHA256SUMS)"
	[ -z "$input" ] || [ "$input" = "$version" ] ||
		fail "this commit of $repo is release $version and runs only that release's binary, but the version input asks for $input: name the action by $input (@$input, or its commit), or remove the input"
	if [ -z "$ref" ]; then
		log "the action's ref is unknown (github.action_ref is empty); its checkout is $version"
	else
		if [[ $ref =~ ^[0-9a-f]{40}$ ]]; then
			commit=$ref
		else
			list_refs
			commit=$(awk -v t="refs/tags/$ref" -v h="refs/heads/$ref" '$2 == t { tag = $1 } $2 == h { head = $1 } END { print (tag != "" ? tag : head) }' <<<"$refs")
			[ -n "$commit" ] || fail "$repo has no tag or branch named $ref"
		fi
		check_tags "$commit" "$version" "$ref"
		log "$ref is $version"
	fi
else
	# A commit between releases names no binary; the version input names a
	# release by its tag, and the tag's commit holds the release's checksums.
	[ -n "$input" ] ||
		fail "${ref:-this commit} of $repo is no release: its checkout has no action/VERSION and action/SHA256SUMS, which a release's commit carries, so it names no binary to run. Name the action by a release (@vX.Y.Z, or the commit of one), set the action's version input to one, or run an unreleased commit with go run (docs/action.md)"
	version=$input
	git init -q --bare "$dir/git" || fail "make a repository to fetch $version into"
	log "fetching $version of $repo"
	git --git-dir="$dir/git" fetch -q --depth=1 --no-tags "$server/$repo.git" "refs/tags/$version:refs/tags/$version" ||
		fail "fetch the tag $version of $server/$repo"
	commit=$(git --git-dir="$dir/git" rev-parse "refs/tags/$version^{commit}") ||
		fail "read the commit of $version"
	{
		git --git-dir="$dir/git" show "$commit:action/VERSION" >"$dir/VERSION" 2>/dev/null &&
			git --git-dir="$dir/git" show "$commit:action/SHA256SUMS" >"$dir/SHA256SUMS" 2>/dev/null
	} || fail "$version of $repo has no checksums committed with it (action/VERSION and action/SHA256SUMS at its commit): the release workflow commits them, so $version is a tag pushed some other way, and no release to run"
	[ "$(head -n 1 "$dir/VERSION")" = "$version" ] ||
		fail "the commit of $version ($commit) says it is release $(head -n 1 "$dir/VERSION"): refusing to run either"
	sums=$dir/SHA256SUMS
	from="the checksums committed with $version (action/SHA256SUMS at $commit)"
	check_tags "$commit" "$version" "$version"
fi

want=$(awk -v f="$asset" '$2 == f || $2 == "*" f { print tolower($1) }' "$sums")
[[ $want =~ ^[0-9a-f]{64}$ ]] || fail "$from name no single $asset: no binary of $version for this runner"

log "downloading $asset of $repo $version"
# Retries cover a dropped connection; --fail turns a missing asset (404)
# into a failure instead of an HTML page saved as the binary. curl writes
# the file without an execute bit.
if ! curl --fail --silent --show-error --location --retry 3 -o "$dir/$asset" "$server/$repo/releases/download/$version/$asset"; then
	rm -f "$dir/$asset"
	fail "download $asset of $repo $version"
fi
if command -v sha256sum >/dev/null; then
	got=$(sha256sum "$dir/$asset" | awk '{ print $1 }')
else
	got=$(shasum -a 256 "$dir/$asset" | awk '{ print $1 }')
fi
if [ "$got" != "$want" ]; then
	rm -f "$dir/$asset"
	fail "$asset of $repo $version has SHA-256 $got, but $from say $want: the release's asset is not what was released, refusing to run it"
fi
chmod 0755 "$dir/$asset"
mv "$dir/$asset" "$dir/bot"
log "$asset verified against $from ($got)"
echo "$dir/bot"
