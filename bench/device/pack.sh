#!/usr/bin/env bash
# Pack the benchmark set for a many-core machine that has nothing of ours installed
# (docs/benchmarks.md, "On a many-core machine"): the release ampdelta and parquet_limit with
# every shared library they load (the dynamic loader included, so the other machine's own
# libraries never matter), the Python peers' wheels unpacked for that machine's Python, and
# bench/*.py, into DEST/payload.tar.xz beside run.sh.
#
# Usage: bench/device/pack.sh DEST [PYTHON_VERSION]   (run `make build-release` first;
#        PYTHON_VERSION of the other machine, default 3.12; the wheels come from PyPI)
set -euo pipefail
dest=${1:?usage: bench/device/pack.sh DEST [PYTHON_VERSION]}
py=${2:-3.12}
root=$(cd "$(dirname "$0")/../.." && pwd)
venv_pip=$root/.deps/venv/bin/pip
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lib" "$work/bin" "$work/site" "$work/proj/bench" \
         "$work/proj/build/release/tools/ampdelta" "$work/proj/build/release/bench"
binaries=(tools/ampdelta/ampdelta bench/parquet_limit)
for b in "${binaries[@]}"; do
  [ -x "$root/build/release/$b" ] || { echo "missing build/release/$b: make build-release" >&2; exit 2; }
  for lib in $(ldd "$root/build/release/$b" | awk '/=>/ {print $3}'); do
    cp -Ln "$lib" "$work/lib/" 2>/dev/null || true
  done
  cp "$root/build/release/$b" "$work/bin/$(basename "$b").bin"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$work/lib/"
strip --strip-unneeded "$work"/lib/*.so* 2>/dev/null || true
strip "$work"/bin/*.bin
cp "$root"/bench/*.py "$work/proj/bench/"
# Wrappers where load_bench expects the binaries: the carried loader runs them, the dev
# server on SERVER_CPUS and everything else on LOADER_CPUS when those are set.
for b in "${binaries[@]}"; do
  name=$(basename "$b")
  cat > "$work/proj/build/release/$b" <<WRAP
#!/usr/bin/env bash
P=\${PAYLOAD:-/tmp/p}
if [ "\${1:-}" = dev-server ]; then cpus=\${SERVER_CPUS:-}; else cpus=\${LOADER_CPUS:-}; fi
run=(\$P/lib/ld-linux-x86-64.so.2 --library-path \$P/lib \$P/bin/$name.bin "\$@")
if [ -n "\$cpus" ] && command -v taskset >/dev/null; then exec taskset -c "\$cpus" "\${run[@]}"; fi
exec "\${run[@]}"
WRAP
  chmod +x "$work/proj/build/release/$b"
done
# The Python peers' packages for the other machine's Python (it has pyarrow and numpy).
versions=$("$venv_pip" list --format=freeze 2>/dev/null | grep -iE '^(deltalake|arro3-core|deprecated|wrapt)==' )
"$venv_pip" download -q --no-deps --only-binary=:all: --python-version "$py" \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --dest "$work/wheels" $versions
for whl in "$work"/wheels/*.whl; do (cd "$work/site" && unzip -qo "$whl"); done
rm -rf "$work/wheels"
mkdir -p "$dest"
tar cf - -C "$work" . | xz -T2 -9 > "$dest/payload.tar.xz"
cp "$root/bench/device/run.sh" "$dest/"
ls -la "$dest"
