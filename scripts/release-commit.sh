#!/usr/bin/env bash
# Makes a release's commit and tag in the repository of the working
# directory, as the release workflow does (.github/workflows/release.yml):
# writes DIST/SHA256SUMS over the files of DIST (what the release will
# upload), commits a copy of it and the version as action/SHA256SUMS and
# action/VERSION on top of HEAD, and tags that commit VERSION (annotated).
# It prints the commit.
#
# The workflow then pushes the tag and uploads DIST's files, unchanged: the
# tag's commit names the checksums of exactly the bytes uploaded, and
# action/install.sh checks a download against the checksums of its own
# checkout, so a commit of the action pins its binary. Nothing here is
# pushed.
#
# Usage: scripts/release-commit.sh vX.Y.Z DIST
set -euo pipefail

die() { echo "release-commit: $*" >&2; exit 1; }

[ $# -eq 2 ] || die "usage: $0 vX.Y.Z DIST"
version=$1
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
	die "$version is not a release tag (vX.Y.Z or vX.Y.Z-pre)"
dist=$(cd -- "$2" && pwd) || die "no directory $2"
cd -- "$(git rev-parse --show-toplevel)"

if git rev-parse -q --verify "refs/tags/$version" >/dev/null; then
	die "the tag $version exists already: a release's tag is made here, on the commit that holds its checksums"
fi
# A release's commit is reachable from its tag only. One merged into a
# branch would make every later commit of the branch name that release.
if [ -e action/VERSION ] || [ -e action/SHA256SUMS ]; then
	die "HEAD already has action/VERSION or action/SHA256SUMS: release from a branch that never had a release's commit merged into it"
fi
[ -z "$(git status --porcelain --untracked-files=no)" ] ||
	die "the work tree has changes that are not committed: the release is of a commit"

# The files to release, in a stable order, each a plain name: a line of
# SHA256SUMS is "sum  name", and install.sh matches the name as one field.
names=()
export LC_ALL=C
shopt -s nullglob
for f in "$dist"/*; do
	name=${f##*/}
	[ "$name" != SHA256SUMS ] || continue
	{ [ -f "$f" ] && [ ! -L "$f" ]; } || die "$name in $dist is not a regular file"
	[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "$name in $dist is not a plain file name"
	names+=("$name")
done
[ ${#names[@]} -gt 0 ] || die "nothing to release in $dist"

(cd -- "$dist" && sha256sum -- "${names[@]}" >SHA256SUMS) || die "compute the checksums of $dist"
cp -- "$dist/SHA256SUMS" action/SHA256SUMS
printf '%s\n' "$version" >action/VERSION
git add -- action/VERSION action/SHA256SUMS
git commit -q -m "release $version: the checksums of its assets, which this commit of the action runs

action/install.sh checks the binary it downloads against action/SHA256SUMS
of its own checkout, so naming the action by this commit runs these bytes." -- action/VERSION action/SHA256SUMS
git tag -a -m "$version" "$version"
git rev-parse HEAD
