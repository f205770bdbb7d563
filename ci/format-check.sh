#!/usr/bin/env bash
# Fail when a C++ file of the tree differs from what clang-format (.clang-format) makes of it.
#   ci/format-check.sh            every tracked .h/.cc under src, tools, tests, bench
#   ci/format-check.sh FILE...    only these
set -euo pipefail
cd "$(dirname "$0")/.."
FORMAT=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$FORMAT" >/dev/null 2>&1; then
  echo "format-check: $FORMAT not found (make setup installs it)" >&2
  exit 1
fi
if (($#)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'src/*.h' 'src/*.cc' 'tools/*.h' 'tools/*.cc' \
                                    'tests/*.h' 'tests/*.cc' 'bench/*.h' 'bench/*.cc' 'examples/*.cc' \
                                    'python/*.h' 'python/*.cc')
fi
if ! "$FORMAT" --dry-run --Werror "${files[@]}" 2>/tmp/format-check.$$; then
  grep -E '^[^ ].*: (error|warning):' /tmp/format-check.$$ | cut -d: -f1 | sort -u |
    sed 's/^/format-check: not formatted: /' >&2
  echo "format-check: run: $FORMAT -i <file>  (or ci/format-check.sh after fixing)" >&2
  rm -f /tmp/format-check.$$
  exit 1
fi
rm -f /tmp/format-check.$$
echo "format-check: ${#files[@]} files formatted"
