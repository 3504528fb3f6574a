# Pullwright's container image: `bot serve` (the self-hosted webhook service,
# see docs/deploy.md) and `bot action` (the GitHub Action, action.yml) from
# the same image.
#
#   docker build -t pullwright/bot --build-arg VERSION=$(git describe --tags --always) .
#
# It builds with the classic builder as well as BuildKit: no RUN --mount, no
# COPY --chmod. Module downloads are cached in their own layer (go.mod and
# go.sum are copied first), so a change to the code only recompiles.

# ---- build: a static binary ------------------------------------------------
FROM golang:1.26-bookworm AS build

# The module proxy: the Go toolchain's own setting, unless the build names
# your organisation's proxy (Athens, Artifactory, ...) with
# --build-arg GOPROXY=https://proxy.example.com. Left empty, the go command
# treats it as unset.
ARG GOPROXY=

WORKDIR /src
# The SQLite driver (modernc.org/sqlite) is pure Go and the git client is
# go-git, so the bot needs no cgo, no libc and no git executable: the binary
# is static and runs on an image with nothing else in it.
ENV CGO_ENABLED=0
COPY go.mod go.sum ./
# Download the modules, and compile the packages of the bot's direct
# requirements (most of the compile time: modernc.org/sqlite alone is about
# half of it) into the build cache of this layer, which depends on go.mod and
# go.sum only: a change to the bot's own code then recompiles little more than
# that code. A module whose root holds tests only (no package) is left out.
# It takes minutes: -v names each package as it is compiled, so the build's
# output shows it working (docs/deploy.md, "The container image").
RUN go mod download \
 && pkgs=$(go list -e -f '{{if and (not .Error) .GoFiles}}{{.ImportPath}}{{end}}' \
      $(go list -m -f '{{if not (or .Main .Indirect)}}{{.Path}}{{end}}' all)) \
 && if [ -n "$pkgs" ]; then go build -v -trimpath $pkgs; fi

COPY . .
ARG VERSION=
# The data directory (SQLite database and task workspaces) is made here
# because the final image has no shell to run mkdir; its owner is set by the
# COPY below, and 0700 because workspaces hold the code of private
# repositories.
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /bot ./cmd/bot \
 && mkdir -p /out/var/lib/pullwright/work \
 && chmod -R 0700 /out/var/lib/pullwright

# ---- final: distroless, non-root ---------------------------------------------
# distroless/static rather than scratch: it is what a scratch image would need
# anyway, kept up to date by its maintainers (CA certificates for
# api.github.com and the model's endpoint, /etc/passwd with the "nonroot"
# user 65532, a /tmp with mode 1777, time zone data), and has no shell, no
# package manager and no libc for an attacker to use. The :nonroot variant
# runs as 65532; USER below says so explicitly. Pin it by digest
# (…:nonroot@sha256:…) if you want reproducible builds.
FROM gcr.io/distroless/static-debian12:nonroot

COPY --from=build /bot /bot
COPY --from=build --chown=65532:65532 /out/var/lib/pullwright /var/lib/pullwright

# Defaults for a container: the database and the workspaces live under
# /var/lib/pullwright (mount a volume there to keep them across restarts).
# Every other setting comes from the environment at run time (README.md,
# "Configuration"); secrets never belong in an image.
ENV BOT_ADDR=:8080 \
    BOT_DATABASE_URL=sqlite:///var/lib/pullwright/pullwright.db \
    BOT_WORKDIR=/var/lib/pullwright/work

# Nothing in the image needs root: the bot writes only to /var/lib/pullwright
# (owned by 65532) and /tmp, and listens on an unprivileged port.
USER 65532:65532
EXPOSE 8080

# There is no curl or shell in the image: the bot checks itself. "bot
# healthcheck" GETs http://127.0.0.1:<port of BOT_ADDR>/healthz with a 3 s
# deadline and exits non-zero unless it gets a 200.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["/bot", "healthcheck"]

ENTRYPOINT ["/bot"]
CMD ["serve"]
