#!/usr/bin/env bash
# Builds the Node and Python sandbox image the dependency tests use,
# WITHOUT any container registry: a Debian root file system made with
# debootstrap from the Debian mirror this machine's apt already uses, the
# toolchains installed in it from Debian's packages, loaded with
# `docker import`:
#
#   Debian (this machine's release), minbase
#   nodejs, npm                     Node and the real npm client
#   python3, python3-venv, python3-pip  Python, venv, and pip (the toolchain
#                                   probe asks it for its index)
#   /workspace                      the runner mounts the workspace copy here
#
# The image runs as nobody (65534), like the runner's other images.
#
# Usage: scripts/sandbox-image-debian.sh [TAG]  (default pullwright/sandbox-node-python:test,
#                                                or $PULLWRIGHT_SANDBOX_NODE_IMAGE)
# Prints the tag on stdout (progress goes to stderr). Idempotent, and cached
# twice: the image carries a fingerprint of this script and of the release
# and mirror it was built from, and is only rebuilt when one of them
# changed; the root file system is also kept as a tarball under
# $PULLWRIGHT_IMAGE_CACHE (default ~/.cache/pullwright), so that an engine
# that lost the image imports it again in seconds instead of building it.
# Needs root (debootstrap, chroot).
set -euo pipefail

tag=${1:-${PULLWRIGHT_SANDBOX_NODE_IMAGE:-pullwright/sandbox-node-python:test}}
cache_dir=${PULLWRIGHT_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pullwright}
packages="nodejs npm python3 python3-venv python3-pip"
log() { echo "sandbox-image-debian: $*" >&2; }

command -v docker >/dev/null || { log "docker is not installed"; exit 1; }
docker info >/dev/null 2>&1 || { log "the Docker engine is not reachable (docker info failed)"; exit 1; }

# The release and the mirror are this machine's own: no host is named here.
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$suite" ] || { log "no VERSION_CODENAME in /etc/os-release: not a Debian release"; exit 1; }
mirror=$(
	{
		# deb822 sources: the first URIs of an entry whose Suites has the release.
		awk -v suite="$suite" '
			/^URIs:/ { uris = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite && uris != "") { print uris; exit } }
			/^$/ { uris = "" }
		' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
		# one-line sources
		awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true
	} | head -1
)
[ -n "$mirror" ] || { log "no Debian mirror for $suite in apt's sources"; exit 1; }

fingerprint=$(printf '%s\n' "$(sha256sum <"$0")" "$suite" "$mirror" "$packages" | sha256sum | cut -c1-32)
if [ "$(docker image inspect -f '{{ index .Config.Labels "pullwright.sandbox.fingerprint" }}' "$tag" 2>/dev/null || true)" = "$fingerprint" ]; then
	log "$tag is up to date"
	echo "$tag"
	exit 0
fi

rootfs_tar="$cache_dir/sandbox-node-python-$fingerprint.tar"
if [ ! -s "$rootfs_tar" ]; then
	[ "$(id -u)" = 0 ] || { log "building the root file system needs root (debootstrap, chroot)"; exit 1; }
	if ! command -v debootstrap >/dev/null; then
		log "installing debootstrap from Debian's packages"
		apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >&2
	fi
	root=$(mktemp -d)
	trap 'rm -rf "$root"' EXIT
	start=$SECONDS
	log "debootstrap $suite (minbase) from the machine's mirror"
	debootstrap --variant=minbase "$suite" "$root" "$mirror" >&2
	# The toolchains go in with apt, which resolves npm's many
	# dependencies in the right order (debootstrap's --include does not).
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	log "installing $packages"
	chroot "$root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages" >&2
	chroot "$root" apt-get clean
	rm -rf "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/* \
		"$root"/var/cache/debconf/*-old "$root"/var/log/*.log "$root"/debootstrap
	: >"$root/etc/resolv.conf"
	mkdir -p "$root/workspace"
	mkdir -p "$cache_dir"
	tar -C "$root" --numeric-owner -cf "$rootfs_tar.tmp" .
	mv "$rootfs_tar.tmp" "$rootfs_tar"
	rm -rf "$root"
	trap - EXIT
	log "root file system built in $((SECONDS - start))s ($(du -h "$rootfs_tar" | cut -f1))"
	# Tarballs of older fingerprints are of no use any more.
	find "$cache_dir" -maxdepth 1 -name 'sandbox-node-python-*.tar' ! -name "$(basename "$rootfs_tar")" -delete
fi

docker import \
	-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	-c 'ENV LANG=C.UTF-8' \
	-c 'WORKDIR /workspace' \
	-c 'USER 65534:65534' \
	-c 'CMD ["/bin/sh"]' \
	-c "LABEL pullwright.sandbox.fingerprint=$fingerprint" \
	-m "pullwright sandbox test image: Debian $suite with $packages" \
	"$rootfs_tar" "$tag" >/dev/null
log "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'))"
echo "$tag"
