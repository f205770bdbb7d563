# Sourced by the emulator set-up scripts: build a pinned Go program into .deps/bin with the
# Go module proxy. Go's module and build caches are the user's (`go env GOMODCACHE GOCACHE`),
# as for any Go build: a second clone, or a version bump, rebuilds only what changed.
# Expects ROOT and the caller's log/die functions.

# Print the go binary to use (GO, PATH, or /usr/local/go/bin/go).
find_go() {
  if [[ -n ${GO:-} ]]; then printf '%s\n' "$GO"
  elif command -v go >/dev/null 2>&1; then command -v go
  elif [[ -x /usr/local/go/bin/go ]]; then printf '%s\n' /usr/local/go/bin/go
  else die "go not found (set GO=/path/to/go)"; fi
}

# go_install_into_deps JOBS PACKAGE@VERSION [go install flags...]
go_install_into_deps() {
  local jobs=$1 package=$2
  shift 2
  local go build_log
  go="$(find_go)"
  log "installing ${package} ($("$go" env GOVERSION), ${jobs} job(s))"
  mkdir -p "$ROOT/.deps/bin"
  build_log="$(mktemp)"
  # The emulators serve tests on 127.0.0.1: no debug information (-s -w) links faster.
  if ! env GOBIN="$ROOT/.deps/bin" \
      GOFLAGS="-mod=mod -modcacherw" \
      GOTOOLCHAIN=local \
      CGO_ENABLED=0 \
      GOMAXPROCS="$jobs" \
      "$go" install -p "$jobs" -trimpath "$@" "$package" >"$build_log" 2>&1; then
    tail -n 40 "$build_log" >&2
    rm -f "$build_log"
    die "go install ${package} failed"
  fi
  rm -f "$build_log"
}
