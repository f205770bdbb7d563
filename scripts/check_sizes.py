#!/usr/bin/env python3
"""Fail when a function in src/ampdelta or python/ampdelta runs past 80 lines, or a file past
800 lines, unless it is named below (issue 52: the house stays easy to change).

Functions are measured by lizard (PyPI), which parses C++ and Python: a function's length is
its lines from signature to closing brace. The names below are a ratchet, not a licence:
each is today's debt with today's length, to be split as its room is rebuilt; a named one
may not grow, and one that has come within the limit fails the check until its name is
taken out, so the list only shrinks.

    scripts/check_sizes.py [ROOT]    check ROOT (default: the repository)
    scripts/check_sizes.py --self-test
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import lizard

MAX_FUNCTION_LINES = 80
MAX_FILE_LINES = 800
SOURCES = (("src/ampdelta", ("*.h", "*.cc")), ("python/ampdelta", ("*.py",)))

# path: {function name (as lizard names it): its length today}, for the functions longer
# than MAX_FUNCTION_LINES. A named function may not grow past its number either.
LONG_FUNCTIONS = {
    "src/ampdelta/amp/query_text.cc": {"ampdelta::amp::AddBlockFilter": 127},
    "src/ampdelta/devserver/query.cc": {"ampdelta::devserver::TypeLiteral": 89},
    "src/ampdelta/devserver/sql.cc": {"ampdelta::devserver::sql::Tokenize": 98,
                                      "ampdelta::devserver::sql::Parser::ParseSelect": 93},
    "src/ampdelta/devserver/synthetic_chain.cc": {
        "ampdelta::devserver::SyntheticChain::View::Transactions": 196},
}
# Files longer than MAX_FILE_LINES today, with their lines.
LONG_FILES = {
    "src/ampdelta/loader/stream/stream_loader.cc": 1257,
}


def source_files(root: pathlib.Path) -> list[pathlib.Path]:
    files = []
    for folder, patterns in SOURCES:
        for pattern in patterns:
            files += (root / folder).rglob(pattern)
    return sorted(files)


def violations(root: pathlib.Path, long_functions: dict[str, dict[str, int]],
               long_files: dict[str, int]) -> list[str]:
    found = []
    seen_functions: dict[str, set[str]] = {}
    seen_files: set[str] = set()
    for path in source_files(root):
        name = path.relative_to(root).as_posix()
        lines = path.read_text(encoding="utf-8", errors="replace").count("\n")
        if lines > MAX_FILE_LINES:
            seen_files.add(name)
            allowed = long_files.get(name, MAX_FILE_LINES)
            if lines > allowed:
                found.append(f"{name}: {lines} lines (at most {allowed}): split it by job")
        named = long_functions.get(name, {})
        for function in lizard.analyze_file(str(path)).function_list:
            if function.length <= MAX_FUNCTION_LINES:
                continue
            seen_functions.setdefault(name, set()).add(function.name)
            allowed = named.get(function.name, MAX_FUNCTION_LINES)
            if function.length > allowed:
                found.append(f"{name}:{function.start_line}: {function.name} has "
                             f"{function.length} lines (at most {allowed}): write it as "
                             "named steps")
    for name, functions in sorted(long_functions.items()):
        for function in sorted(set(functions) - seen_functions.get(name, set())):
            found.append(f"{name}: {function} is named in check_sizes.py but is no longer "
                         f"over {MAX_FUNCTION_LINES} lines (or no longer exists): take it out")
    for name in sorted(set(long_files) - seen_files):
        found.append(f"{name} is named in check_sizes.py but is no longer over "
                     f"{MAX_FILE_LINES} lines: take it out")
    return found


def self_test() -> int:
    """A long function, a long file and a stale name are each reported; a named one is not."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "src/ampdelta/util").mkdir(parents=True)
        (root / "python/ampdelta").mkdir(parents=True)
        body = "".join(f"  x += {i};\n" for i in range(MAX_FUNCTION_LINES))
        (root / "src/ampdelta/util/a.cc").write_text(
            "namespace ampdelta {\nint Short(int x) { return x; }\n"
            f"int Long(int x) {{\n{body}  return x;\n}}\n}}\n")
        (root / "python/ampdelta/b.py").write_text(
            "def long_one(x):\n" + "".join(f"    x += {i}\n" for i in range(90)) +
            "    return x\n" + "# filler\n" * MAX_FILE_LINES)
        named = {"src/ampdelta/util/a.cc": {"ampdelta::Long": 83},
                 "python/ampdelta/b.py": {"long_one": 92}}
        if violations(root, named, {"python/ampdelta/b.py": 892}):
            print(f"self-test: named debt was refused: "
                  f"{violations(root, named, {'python/ampdelta/b.py': 892})}", file=sys.stderr)
            return 1
        found = violations(root, {"src/ampdelta/util/a.cc": {"ampdelta::Short": 90},
                                  "python/ampdelta/b.py": {"long_one": 91}},
                           {"src/ampdelta/util/a.cc": 900, "python/ampdelta/b.py": 891})
        expected = ["a.cc:3: ampdelta::Long has 83 lines (at most 80)",
                    "b.py:1: long_one has 92 lines (at most 91)",
                    "b.py: 892 lines (at most 891)", "ampdelta::Short is named",
                    "util/a.cc is named in check_sizes.py but is no longer"]
        if len(found) != len(expected) or any(sum(e in f for f in found) != 1
                                              for e in expected):
            print(f"self-test: sizes not reported as expected: {found}", file=sys.stderr)
            return 1
    print("sizes self-test: ok")
    return 0


def main(argv: list[str]) -> int:
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[1]
    found = violations(root, LONG_FUNCTIONS, LONG_FILES)
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"sizes: {len(found)} finding(s)", file=sys.stderr)
        return 1
    debt = sum(len(functions) for functions in LONG_FUNCTIONS.values())
    print(f"sizes: ok (functions at most {MAX_FUNCTION_LINES} lines, files at most "
          f"{MAX_FILE_LINES}, but {debt} named functions and {len(LONG_FILES)} named files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
