# Sourced by the scripts that need other CPython versions (build_wheel.sh,
# test_wheel_matrix.sh): `interpreter 3.12` prints the path of CPython 3.12, on PATH or in
# pyenv's versions, or fails saying it is missing.
interpreter() {
  local version=$1 found
  for found in "python$version" "$(pyenv root 2>/dev/null)/versions/$version"*/bin/"python$version"; do
    if command -v "$found" >/dev/null 2>&1 && "$found" -c 'import sys' 2>/dev/null; then
      command -v "$found"
      return
    fi
  done
  printf 'no CPython %s on this machine (PATH or pyenv)\n' "$version" >&2
  return 1
}
