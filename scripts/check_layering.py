#!/usr/bin/env python3
"""Fail when a source file includes a module its layer may not use.

The layers (docs/architecture.md): util <- storage <- delta; util <- amp; util <- evm <- devserver;
{delta, amp} <- loader <- tools; inside delta, log <- {read, txn} <- write <- ops; inside
loader, common <- batch <- backfill, {common, state} <- stream <- backfill, state <- verify,
batch <- client. A module
may include its own headers, the modules below it and the generated `ampdelta/version.h`. The dev server never includes the amp client, so the
two sides of the wire protocol stay independent. No two units of src/ include each other,
directly or around a loop (a unit: a header with its .cc and _internal.h; a loop means one
of them holds what both need, which belongs in a header of its own).

    scripts/check_layering.py [ROOT]    check ROOT (default: the repository)
    scripts/check_layering.py --self-test
"""

from __future__ import annotations

import pathlib
import re
import sys
import tempfile

# What each module may include besides itself (the modules it links, CMake's *_DEPS).
ALLOWED = {
    "util": set(),
    "storage": {"util"},
    "delta": {"storage", "util"},
    "amp": {"util"},
    "evm": {"util"},
    "devserver": {"util", "evm"},
    "loader": {"amp", "delta", "storage", "util"},
}
# Rooms inside a module, with the rooms each may include besides itself (delta/'s include
# graph: the log below everything, reads and commits on it, writes on both, operations on top).
ROOMS = {
    "delta": {
        "log": set(),
        "read": {"log"},
        "txn": {"log"},
        "write": {"log", "read", "txn"},
        "ops": {"log", "read", "txn", "write"},
    },
    # loader/'s rooms: what the load modes share, what the table says was loaded, the
    # three modes (a backfill ends in the stream it hands over to), verify and the Client.
    "loader": {
        "common": set(),
        "state": set(),
        "batch": {"common"},
        "stream": {"common", "state"},
        "backfill": {"common", "state", "batch", "stream"},
        "verify": {"state"},
        "client": {"common", "batch"},
    },
}
# Everything outside src/ampdelta/<module>/ (the CLI, tests, benchmarks) may include any module.
SHARED = {"version.h"}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"ampdelta/([^"/]+)(/[^"]*)?"', re.MULTILINE)
SOURCES = ("*.h", "*.cc")


def violations(root: pathlib.Path) -> list[str]:
    found = []
    src = root / "src" / "ampdelta"
    for module_dir in sorted(p for p in src.iterdir() if p.is_dir()):
        module = module_dir.name
        if module not in ALLOWED:
            found.append(f"{module_dir}: module '{module}' has no layer in check_layering.py")
            continue
        for pattern in SOURCES:
            for path in sorted(module_dir.rglob(pattern)):
                if module in ROOMS and path.parent == module_dir:
                    found.append(f"{path.relative_to(root)}: {path.name} is in no room of "
                                 f"'{module}' ({', '.join(sorted(ROOMS[module]))})")
                    continue
                text = path.read_text(encoding="utf-8", errors="replace")
                for match in INCLUDE.finditer(text):
                    target, rest = match.group(1), match.group(2)
                    if rest is None and target in SHARED:
                        continue
                    line = text.count("\n", 0, match.start()) + 1
                    if target == module and module in ROOMS:
                        found += room_violation(root, module_dir, path, rest or "", line)
                        continue
                    if target == module or target in ALLOWED[module]:
                        continue
                    allowed = ", ".join(sorted(ALLOWED[module])) or "nothing"
                    found.append(f"{path.relative_to(root)}:{line}: '{module}' includes "
                                 f"'ampdelta/{target}{rest or ''}' (it may use {allowed})")
    return found


def unit_of(path: str) -> str:
    """`ampdelta/delta/log/schema` for schema.h, schema.cc and schema_internal.h."""
    return str(pathlib.PurePosixPath(path).with_suffix("")).removesuffix("_internal")


def include_cycles(root: pathlib.Path) -> list[str]:
    """Each set of units of src/ that include each other around a loop, with the includes
    that close it."""
    edges: dict[str, dict[str, str]] = {}
    src = root / "src"
    for pattern in SOURCES:
        for path in sorted(src.rglob(pattern)):
            unit = unit_of(path.relative_to(src).as_posix())
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in INCLUDE.finditer(text):
                target = unit_of(match.group(0).split('"')[1])
                if target != unit:
                    line = text.count("\n", 0, match.start()) + 1
                    edges.setdefault(unit, {}).setdefault(
                        target, f"{path.relative_to(root)}:{line}")
    # Tarjan's strongly connected components, iteratively.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            unit, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                elif child in on_stack:
                    low[unit] = min(low[unit], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[unit])
            if low[unit] == index[unit]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == unit:
                        break
                if len(component) > 1:
                    loops.append(sorted(component))
    found = []
    for loop in loops:
        closing = [f"{edges[a][b]} includes {b}" for a in loop for b in loop
                   if b in edges.get(a, {})]
        found.append(f"include cycle between {', '.join(loop)}: " + "; ".join(closing))
    return found


def room_violation(root: pathlib.Path, module_dir: pathlib.Path, path: pathlib.Path,
                   included: str, line: int) -> list[str]:
    """An include from one room of a module into a room it may not use."""
    rooms = ROOMS[module_dir.name]
    parts = path.relative_to(module_dir).parts
    room = parts[0] if len(parts) > 1 else None
    target = included.strip("/").split("/")
    target_room = target[0] if len(target) > 1 else None
    where = f"{path.relative_to(root)}:{line}"
    if room not in rooms:
        return [f"{where}: {path.name} is in no room of '{module_dir.name}' "
                f"({', '.join(sorted(rooms))})"]
    if target_room not in rooms:
        return [f"{where}: includes 'ampdelta/{module_dir.name}/{included.strip('/')}', "
                f"which is in no room of '{module_dir.name}'"]
    if target_room != room and target_room not in rooms[room]:
        allowed = ", ".join(sorted(rooms[room])) or "no other room"
        return [f"{where}: '{module_dir.name}/{room}' includes "
                f"'ampdelta/{module_dir.name}/{included.strip('/')}' (it may use {allowed})"]
    return []


def self_test() -> int:
    """The check passes on a clean tree and fails on one forbidden include."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for module in ALLOWED:
            (root / "src" / "ampdelta" / module).mkdir(parents=True)
        for module, rooms in ROOMS.items():
            for room in rooms:
                (root / "src" / "ampdelta" / module / room).mkdir()
        (root / "src/ampdelta/delta/txn/a.h").write_text('#include "ampdelta/storage/s.h"\n'
                                                         '#include "ampdelta/version.h"\n'
                                                         '#include "ampdelta/delta/log/x.h"\n')
        (root / "src/ampdelta/loader/backfill/b.cc").write_text(
            '#include "ampdelta/amp/c.h"\n#include "ampdelta/delta/ops/m.h"\n'
            '#include "ampdelta/loader/stream/s.h"\n#include "ampdelta/loader/common/o.h"\n')
        (root / "src/ampdelta/delta/log/k.h").write_text('#include "ampdelta/delta/log/l.h"\n')
        (root / "src/ampdelta/delta/log/l_internal.h").write_text('#include "ampdelta/util/u.h"\n')
        if violations(root) or include_cycles(root):
            print(f"self-test: a clean tree was refused: {violations(root)}"
                  f"{include_cycles(root)}", file=sys.stderr)
            return 1
        # l.cc closes a loop k -> l -> k; m -> n -> o -> m is a longer one.
        (root / "src/ampdelta/delta/log/l.cc").write_text('#include "ampdelta/delta/log/k.h"\n')
        (root / "src/ampdelta/util/m.h").write_text('#include "ampdelta/util/n.h"\n')
        (root / "src/ampdelta/util/n.cc").write_text('#include "ampdelta/util/o.h"\n')
        (root / "src/ampdelta/util/o_internal.h").write_text('#include "ampdelta/util/m.h"\n')
        cycles = include_cycles(root)
        if (len(cycles) != 2 or not any("delta/log/k, ampdelta/delta/log/l:" in c for c in cycles)
                or not any("util/m, ampdelta/util/n, ampdelta/util/o:" in c for c in cycles)):
            print(f"self-test: include cycles not reported as expected: {cycles}",
                  file=sys.stderr)
            return 1
        (root / "src/ampdelta/devserver/d.cc").write_text('\n#include "ampdelta/amp/client.h"\n')
        (root / "src/ampdelta/storage/e.h").write_text('# include "ampdelta/delta/log/s.h"\n')
        (root / "src/ampdelta/delta/log/f.cc").write_text('#include "ampdelta/delta/write/t.h"\n')
        (root / "src/ampdelta/delta/read/g.cc").write_text('#include "ampdelta/delta/txn/t.h"\n')
        (root / "src/ampdelta/loader/stream/h.cc").write_text(
            '#include "ampdelta/loader/state/s.h"\n#include "ampdelta/loader/batch/b.h"\n')
        (root / "src/ampdelta/loader/common/i.h").write_text('#include "ampdelta/loader/state/t.h"\n')
        (root / "src/ampdelta/loader/j.h").write_text('#include "ampdelta/amp/c.h"\n')
        found = violations(root)
        expected = ["log/f.cc:1", "read/g.cc:1", "d.cc:2", "common/i.h:1", "loader/j.h:",
                    "stream/h.cc:2", "e.h:1"]
        if len(found) != len(expected) or any(sum(e in f for f in found) != 1 for e in expected):
            print(f"self-test: forbidden includes not reported as expected: {found}",
                  file=sys.stderr)
            return 1
    print("layering self-test: ok")
    return 0


def main(argv: list[str]) -> int:
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parents[1]
    found = violations(root) + include_cycles(root)
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"layering: {len(found)} include(s) against the layers or in a cycle",
              file=sys.stderr)
        return 1
    print("layering: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
