#!/usr/bin/env bash
# Makes the two base images the Dockerfile names available to `docker build`
# on a machine that cannot pull from a registry (this project's CI), by
# building stand-ins from files already on the machine, the way
# scripts/sandbox-image.sh builds the sandbox image, and tagging them with
# exactly the names the Dockerfile uses:
#
#   golang:1.26-bookworm                  (the build stage)
#     /bin/busybox + one symlink per applet   Debian's busybox-static: the sh,
#                                              mkdir and chmod of the RUN steps
#     /usr/local/go                            this machine's Go toolchain (no
#                                              docs, tests, api/ or testdata/)
#     /etc/ssl/certs/ca-certificates.crt       this machine's CA bundle
#     /etc/passwd, /etc/group, /tmp (1777), /root, /go
#     ENV PATH, GOPATH=/go, GOTOOLCHAIN=local, GOLANG_VERSION, as the real image
#
#   gcr.io/distroless/static-debian12:nonroot   (the final stage)
#     /etc/passwd, /etc/group                  root, nobody and nonroot (65532)
#     /etc/ssl/certs/ca-certificates.crt       this machine's CA bundle
#     /usr/share/zoneinfo                      this machine's time zone data
#     /etc/nsswitch.conf, /etc/os-release, /tmp (1777), /home/nonroot (65532)
#     USER 65532, WORKDIR /home/nonroot, ENV PATH and SSL_CERT_FILE, as the
#     real image
#
# The Dockerfile stays the one real users build (they pull the real images);
# only where its base images come from differs here. The build stage
# downloads modules from the module proxy like anywhere else: containers of
# this machine reach it through the same egress as the host, whose CA bundle
# (including any CA of that egress) is the one copied into the stand-ins. A
# build behind a proxy of its own sets --build-arg GOPROXY=... instead.
#
# Usage: scripts/base-images.sh             Prints the two names on stdout,
#                                           progress on stderr.
# Idempotent: each stand-in carries a fingerprint label (this script,
# busybox, the Go toolchain, the CA bundle, tzdata) and is rebuilt only when
# one of them changed. An image of the same name WITHOUT that label (a real
# one, pulled) is left alone and used as it is.
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."

go_image=golang:1.26-bookworm
static_image=gcr.io/distroless/static-debian12:nonroot
goroot=${GOROOT_FOR_IMAGES:-/usr/local/go}
label=pullwright.base.fingerprint
log() { echo "base-images: $*" >&2; }

# The Dockerfile and this script must name the same images.
want=$(printf '%s\n' "$go_image" "$static_image" | sort)
have=$(sed -nE 's/^FROM[[:space:]]+([^[:space:]]+).*/\1/p' Dockerfile | sort -u)
if [ "$want" != "$have" ]; then
	log "the Dockerfile's base images are not the ones this script builds:"
	log "  Dockerfile: $(echo $have)"
	log "  script:     $(echo $want)"
	exit 1
fi

command -v docker >/dev/null || { log "docker is not installed"; exit 1; }
docker info >/dev/null 2>&1 || { log "the Docker engine is not reachable (docker info failed)"; exit 1; }
[ -x "$goroot/bin/go" ] || { log "no Go toolchain at $goroot"; exit 1; }
cabundle=/etc/ssl/certs/ca-certificates.crt
[ -s "$cabundle" ] || { log "no CA bundle at $cabundle (install ca-certificates)"; exit 1; }

busybox=/bin/busybox
if [ "$(dpkg-query -W -f='${Status}' busybox-static 2>/dev/null || true)" != "install ok installed" ]; then
	log "installing busybox-static from Debian's packages"
	if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
	$sudo apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq busybox-static >&2
fi
zoneinfo=/usr/share/zoneinfo

gover=$(head -1 "$goroot/VERSION")
fingerprint=$(
	{
		sha256sum "$self" "$busybox" "$cabundle"
		echo "$gover $goroot"
		dpkg-query -W tzdata 2>/dev/null || true
	} | sha256sum | cut -c1-32
)

# current IMAGE: "ours" if built by this script with this fingerprint,
# "stale" if built by this script with another, "foreign" if the image
# exists without the label, "missing" otherwise.
current() {
	local fp
	if ! fp=$(docker image inspect -f "{{ index .Config.Labels \"$label\" }}" "$1" 2>/dev/null); then
		echo missing
	elif [ "$fp" = "$fingerprint" ]; then
		echo ours
	elif [ -z "$fp" ] || [ "$fp" = "<no value>" ]; then
		echo foreign
	else
		echo stale
	fi
}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# skeleton DIR: the files both stand-ins share.
skeleton() {
	local root=$1
	mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/root"
	chmod 1777 "$root/tmp"
	chmod 0700 "$root/root"
	cp "$cabundle" "$root/etc/ssl/certs/ca-certificates.crt"
	chmod 0644 "$root/etc/ssl/certs/ca-certificates.crt"
	printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
}

build_go() {
	local root=$stage/go
	skeleton "$root"
	mkdir -p "$root/bin" "$root/usr/local" "$root/go/bin" "$root/go/src"
	chmod -R 1777 "$root/go"
	cp "$busybox" "$root/bin/busybox"
	for applet in $("$busybox" --list); do
		[ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
	done
	ln -s bin "$root/sbin"
	ln -s ../bin "$root/usr/bin"
	cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PASSWD
	cat >"$root/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP
	local goparent gobase
	goparent=$(dirname "$goroot")
	gobase=$(basename "$goroot")
	tar -C "$root" --numeric-owner --owner=0 --group=0 -cf "$stage/go.tar" .
	# The toolchain is added straight from $goroot, renamed to usr/local/go,
	# without what building does not need. The top-level directories are
	# excluded anchored: unanchored, go/doc would also drop the standard
	# library's go/doc packages (go/src/go/doc), which go/printer imports.
	tar -C "$goparent" --numeric-owner --owner=0 --group=0 \
		--anchored --exclude="$gobase/doc" --exclude="$gobase/test" --exclude="$gobase/api" \
		--exclude="$gobase/misc" --no-anchored --exclude='testdata' --exclude='*.md' \
		--transform="s,^$gobase,usr/local/go," \
		-rf "$stage/go.tar" "$gobase"
	docker import \
		-c 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		-c "ENV GOLANG_VERSION=${gover#go}" \
		-c 'ENV GOTOOLCHAIN=local' \
		-c 'ENV GOPATH=/go' \
		-c 'WORKDIR /go' \
		-c 'CMD ["/bin/sh"]' \
		-c "LABEL $label=$fingerprint" \
		-m "stand-in for $go_image built by scripts/base-images.sh: busybox-static + $gover" \
		"$stage/go.tar" "$go_image" >/dev/null
	rm -f "$stage/go.tar"
}

build_static() {
	local root=$stage/static
	skeleton "$root"
	mkdir -p "$root/home/nonroot" "$root/usr/share"
	chmod 0700 "$root/home/nonroot"
	if [ -d "$zoneinfo" ]; then
		cp -a "$zoneinfo" "$root/usr/share/zoneinfo"
	fi
	cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
	cat >"$root/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
GROUP
	cat >"$root/etc/os-release" <<'OS'
PRETTY_NAME="Distroless stand-in (scripts/base-images.sh)"
NAME="Debian GNU/Linux"
ID="debian"
VERSION_ID="12"
HOME_URL="https://github.com/GoogleContainerTools/distroless"
OS
	tar -C "$root" --numeric-owner --owner=0 --group=0 --exclude=./home/nonroot -cf "$stage/static.tar" .
	tar -C "$root" --numeric-owner --owner=65532 --group=65532 -rf "$stage/static.tar" ./home/nonroot
	docker import \
		-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		-c 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
		-c 'USER 65532' \
		-c 'WORKDIR /home/nonroot' \
		-c "LABEL $label=$fingerprint" \
		-m "stand-in for $static_image built by scripts/base-images.sh" \
		"$stage/static.tar" "$static_image" >/dev/null
	rm -f "$stage/static.tar"
}

for image in "$go_image" "$static_image"; do
	case $(current "$image") in
	ours) log "$image is up to date" ;;
	foreign) log "$image exists and was not built here (pulled?): using it as it is" ;;
	missing | stale)
		log "building a stand-in for $image"
		if [ "$image" = "$go_image" ]; then build_go; else build_static; fi
		log "built $image ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
		;;
	esac
	echo "$image"
done
