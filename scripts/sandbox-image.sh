#!/usr/bin/env bash
# Builds the sandbox image the runner's Docker tests (and .ci/run) use,
# WITHOUT any registry: the image is assembled from files already on this
# machine and loaded with `docker import`:
#
#   /bin/busybox + one symlink per applet   Debian's busybox-static (installed if missing)
#   /usr/local/go                           the Go toolchain of this machine, without
#                                           docs, tests, api/ and testdata/ directories,
#                                           with the go command's tools that Go 1.25 and
#                                           later no longer ship (nm, objdump, covdata, …)
#                                           built into its pkg/tool, as older releases and
#                                           Debian's golang packages have them: every Go
#                                           setup of the tests would build them otherwise
#                                           (buildcache.Tools, which a test of its own and
#                                           BenchmarkWarmRealRepos, on an image without
#                                           them, cover)
#   /etc/passwd, /etc/group                 root and nobody/nogroup (65534)
#   /tmp, /workspace                        mount points (the runner mounts a tmpfs
#                                           and the workspace copy there)
#
# Usage: scripts/sandbox-image.sh [TAG]      (default pullwright/sandbox-go:test,
#                                             or $PULLWRIGHT_SANDBOX_IMAGE)
# Prints the tag on stdout (progress goes to stderr). Idempotent: the image
# carries a fingerprint of this script, busybox and the Go toolchain, and is
# only rebuilt when one of them changed. GOROOT_FOR_SANDBOX=/path takes the
# toolchain from there instead of /usr/local/go (a name of its own, as
# scripts/base-images.sh's GOROOT_FOR_IMAGES: a GOROOT set in the shell for
# the go command does not change the image).
set -euo pipefail

tag=${1:-${PULLWRIGHT_SANDBOX_IMAGE:-pullwright/sandbox-go:test}}
goroot=${GOROOT_FOR_SANDBOX:-/usr/local/go}
log() { echo "sandbox-image: $*" >&2; }

command -v docker >/dev/null || { log "docker is not installed"; exit 1; }
docker info >/dev/null 2>&1 || { log "the Docker engine is not reachable (docker info failed)"; exit 1; }
[ -x "$goroot/bin/go" ] || { log "no Go toolchain at $goroot"; exit 1; }

busybox=/bin/busybox
if [ "$(dpkg-query -W -f='${Status}' busybox-static 2>/dev/null || true)" != "install ok installed" ]; then
	log "installing busybox-static from Debian's packages"
	if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
	$sudo apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq busybox-static >&2
fi

fingerprint=$(
	{
		sha256sum "$0" "$busybox"
		cat "$goroot/VERSION"
		echo "$goroot"
	} | sha256sum | cut -c1-32
)
if [ "$(docker image inspect -f '{{ index .Config.Labels "pullwright.sandbox.fingerprint" }}' "$tag" 2>/dev/null || true)" = "$fingerprint" ]; then
	log "$tag is up to date"
	echo "$tag"
	exit 0
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/etc" "$stage/tmp" "$stage/workspace" "$stage/usr/local" "$stage/root"
chmod 1777 "$stage/tmp"
chmod 0700 "$stage/root"
cp "$busybox" "$stage/bin/busybox"
for applet in $("$busybox" --list); do
	[ "$applet" = busybox ] || ln -s busybox "$stage/bin/$applet"
done
ln -s bin "$stage/sbin"
mkdir -p "$stage/usr"
ln -s ../bin "$stage/usr/bin"
cat >"$stage/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/tmp:/bin/sh
PASSWD
cat >"$stage/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP

log "building $tag from $busybox and $goroot ($(cat "$goroot/VERSION" | head -1))"
# The Go tree is added straight from $goroot, renamed to usr/local/go,
# without what neither building nor testing needs. The top-level directories
# are excluded anchored: unanchored (tar's default), go/doc also dropped the
# standard library's go/doc packages (go/src/go/doc), which go/printer and
# go/format import, as scripts/base-images.sh found.
goparent=$(dirname "$goroot")
gobase=$(basename "$goroot")
tools="$stage.tools"
trap 'rm -rf "$stage" "$stage.tar" "$tools"' EXIT
tar -C "$stage" --numeric-owner --owner=0 --group=0 -cf "$stage.tar" .
tar -C "$goparent" --numeric-owner --owner=0 --group=0 \
	--anchored --exclude="$gobase/doc" --exclude="$gobase/test" --exclude="$gobase/api" \
	--exclude="$gobase/misc" --no-anchored --exclude='testdata' --exclude='*.md' \
	--transform="s,^$gobase,usr/local/go," \
	-rf "$stage.tar" "$gobase"
# The same list as buildcache.Tools, added as files alone (the engine
# refuses a directory twice in one tar). One the toolchain already has is
# left as it is.
tooldir="pkg/tool/$("$goroot/bin/go" env GOOS)_$("$goroot/bin/go" env GOARCH)"
mkdir -p "$tools"
for t in addr2line buildid covdata nm objdump pack; do
	[ -e "$goroot/$tooldir/$t" ] || GOROOT="$goroot" GOFLAGS= GOTOOLCHAIN=local CGO_ENABLED=0 \
		"$goroot/bin/go" build -trimpath -o "$tools/$t" "cmd/$t"
done
if [ -n "$(ls -A "$tools")" ]; then
	tar -C "$tools" --numeric-owner --owner=0 --group=0 --transform="s,^,usr/local/go/$tooldir/," \
		-rf "$stage.tar" $(ls "$tools")
fi

docker import \
	-c 'ENV PATH=/usr/local/go/bin:/bin' \
	-c 'ENV GOTOOLCHAIN=local' \
	-c 'WORKDIR /workspace' \
	-c 'USER 65534:65534' \
	-c 'CMD ["/bin/sh"]' \
	-c "LABEL pullwright.sandbox.fingerprint=$fingerprint" \
	-m "pullwright sandbox test image: busybox-static + $(head -1 "$goroot/VERSION")" \
	"$stage.tar" "$tag" >/dev/null
log "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
echo "$tag"
