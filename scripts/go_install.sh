# Sourced by the emulator set-up scripts: build a pinned Go program into .deps/bin with the
# Go module proxy, keeping Go's module and build caches under .deps/go (removed afterwards
# unless KEEP_GO_CACHE=1). Expects ROOT and the caller's log/die functions.

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
  mkdir -p "$ROOT/.deps/bin" "$ROOT/.deps/go"
  build_log="$(mktemp)"
  if ! env GOBIN="$ROOT/.deps/bin" \
      GOPATH="$ROOT/.deps/go" \
      GOCACHE="$ROOT/.deps/go/cache" \
      GOMODCACHE="$ROOT/.deps/go/pkg/mod" \
      GOFLAGS="-mod=mod -modcacherw" \
      GOTOOLCHAIN=local \
      CGO_ENABLED=0 \
      GOMAXPROCS="$jobs" \
      nice -n 19 "$go" install -p "$jobs" -trimpath "$@" "$package" >"$build_log" 2>&1; then
    tail -n 40 "$build_log" >&2
    rm -f "$build_log"
    die "go install ${package} failed"
  fi
  rm -f "$build_log"
  if [[ "${KEEP_GO_CACHE:-0}" != 1 ]]; then rm -rf "$ROOT/.deps/go"; fi
}
