#!/usr/bin/env bash
# Install everything ampdelta needs on a Debian 12 machine; idempotent and quick when done.
#   1. Debian packages (tool-chain, test and CLI libraries)
#   2. the Arrow C++ SDK from the pinned pyarrow wheel (sha256-checked) into .deps/pyarrow
#   3. the Python venv with the independent readers (scripts/setup_python.sh)
#   4. the object-store emulators the cloud tests start: versitygw (S3) and fake-gcs-server
#      (GCS) built from the Go module proxy, Azurite (Azure) from npm
# `setup.sh --build` does steps 1 and 2 (what the C++ build needs), `setup.sh --tools` steps
# 3 and 4 (what only the tests need: `make test` runs it beside the build), `setup.sh --demo`
# only what `make demo` needs: the build's Debian packages, without the test and fuzzing
# tool-chain, and the Arrow SDK.
set -euo pipefail
MODE=all
case "${1:-}" in
  --demo) MODE=demo ;;
  --build) MODE=build ;;
  --tools) MODE=tools ;;
  "") ;;
  *) echo "usage: setup.sh [--demo|--build|--tools]" >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '[setup] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

install_tools() {
  bash scripts/setup_python.sh
  S3_EMULATOR_JOBS="${S3_EMULATOR_JOBS:-2}" bash scripts/setup_s3_emulator.sh
  GCS_EMULATOR_JOBS="${GCS_EMULATOR_JOBS:-2}" bash scripts/setup_gcs_emulator.sh
  bash scripts/setup_azurite.sh
}
if [[ $MODE == tools ]]; then
  install_tools
  log "done (tools)"
  exit 0
fi

# --- 1. Debian packages --------------------------------------------------------------
APT_PACKAGES=(
  g++ cmake ninja-build make unzip ca-certificates
  nlohmann-json3-dev libcli11-dev
  libcurl4-gnutls-dev libgnutls28-dev nettle-dev libpugixml-dev libroaring-dev zlib1g-dev
  libmicrohttpd-dev
)
if [[ $MODE != demo ]]; then
  APT_PACKAGES+=(libgtest-dev libgmock-dev clang-14 libclang-rt-14-dev clang-format-14)
  # ccache: the wheels for each Python ABI (scripts/build_wheel.sh) compile the engine once.
  APT_PACKAGES+=(ccache)
  if ! command -v java >/dev/null 2>&1; then APT_PACKAGES+=(openjdk-17-jre-headless); fi
fi
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
else
  log "Debian packages present"
fi

# --- 2. Arrow C++ SDK from the pinned pyarrow wheel ------------------------------------
ARROW_VERSION=26.0.1
WHEEL="pyarrow-${ARROW_VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl"
WHEEL_SHA256=39cb0f2418282c24bea6ceda77b03e5a8f0a5766b63a8bf194d4e2a2c423548c
SDK=.deps/pyarrow/pyarrow
STAMP=.deps/pyarrow/.sha256
if [[ -f $STAMP && "$(cat "$STAMP")" == "$WHEEL_SHA256" && -f $SDK/libarrow.so.2600 ]]; then
  log "Arrow C++ SDK ${ARROW_VERSION} present in ${SDK}"
else
  mkdir -p .deps/wheels
  if [[ ! -f .deps/wheels/$WHEEL ]] ||
     [[ "$(sha256sum ".deps/wheels/$WHEEL" | cut -d' ' -f1)" != "$WHEEL_SHA256" ]]; then
    log "downloading pyarrow==${ARROW_VERSION} wheel (~55 MB)"
    rm -f ".deps/wheels/$WHEEL"
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
      --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp --abi cp311 \
      -d .deps/wheels "pyarrow==${ARROW_VERSION}"
  fi
  actual="$(sha256sum ".deps/wheels/$WHEEL" | cut -d' ' -f1)"
  [[ "$actual" == "$WHEEL_SHA256" ]] || die "sha256 mismatch for $WHEEL: $actual"
  log "unpacking the Arrow C++ SDK into ${SDK}"
  rm -rf .deps/pyarrow
  python3 -m zipfile -e ".deps/wheels/$WHEEL" .deps/pyarrow
  echo "$WHEEL_SHA256" > "$STAMP"
fi

if [[ $MODE != all ]]; then
  log "done ($MODE: Debian packages and the Arrow SDK)"
  exit 0
fi

# --- 3 and 4. The test venv and the object-store emulators ------------------------------
install_tools
log "done"
