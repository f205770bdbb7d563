"""The commands and snippets a reader is shown in README.md and docs/*.md, read with a
CommonMark parser (markdown-it-py), each with its file, line and doc-test directive.

A directive is an HTML comment (invisible when rendered) just before a code block:

    <!-- doctest: skip; needs an S3 account; covered by tests/interop/test_cloud_stores.py -->
    <!-- doctest: text -->                      a diagram, a sample of output, a file layout
    <!-- doctest: run; server=--block-interval-ms 200 -->
    <!-- doctest: run; continues -->            a Python block that goes on from the one above
    <!-- doctest: run; until-interrupted -->    runs until Ctrl-C, as its text says

Without one, a block runs (tests/docs/test_docs.py says how each kind of command runs).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

from markdown_it import MarkdownIt

REPO_ROOT = Path(__file__).resolve().parents[2]
DIRECTIVE_RE = re.compile(r"^<!--\s*doctest:\s*(.*?)\s*-->\s*$", re.S)
VERBS = ("run", "skip", "text")


class DirectiveError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Directive:
    verb: str = "run"
    options: tuple[tuple[str, str], ...] = ()

    def get(self, key: str, default: str | None = None) -> str | None:
        for name, value in self.options:
            if name == key:
                return value
        return default

    def has(self, key: str) -> bool:
        return any(name == key for name, _ in self.options)

    @staticmethod
    def parse(text: str) -> "Directive":
        parts = [part.strip() for part in text.split(";") if part.strip()]
        if not parts or parts[0] not in VERBS:
            raise DirectiveError(f"a doctest directive starts with one of {VERBS}: {text!r}")
        options = []
        for part in parts[1:]:
            if part.startswith("needs "):
                options.append(("needs", part[len("needs "):]))
            elif part.startswith("covered by "):
                options.append(("covered-by", part[len("covered by "):]))
            elif "=" in part:
                key, value = part.split("=", 1)
                options.append((key.strip(), value.strip()))
            else:
                options.append((part, ""))
        directive = Directive(parts[0], tuple(options))
        if directive.verb == "skip" and not (directive.get("needs") and directive.get("covered-by")):
            raise DirectiveError(
                "a skipped block says what it needs that CI cannot have and which test covers "
                f"its behaviour instead ('skip; needs …; covered by …'): {text!r}")
        return directive


@dataclasses.dataclass(frozen=True)
class Block:
    path: str          # relative to the repository
    line: int          # 1-based line of the block's first line of code
    lang: str          # the fence's language; "" for an indented block
    text: str
    directive: Directive

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclasses.dataclass(frozen=True)
class InlineCommand:
    """An `ampdelta …` code span in running text."""
    path: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def documents() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark")


def blocks(path: Path) -> list[Block]:
    """The code blocks of one document, in order, each with its directive."""
    tokens = _parser().parse(path.read_text())
    out: list[Block] = []
    pending: tuple[int, Directive] | None = None
    rel = str(path.relative_to(REPO_ROOT))
    for token in tokens:
        if token.type == "html_block":
            match = DIRECTIVE_RE.match(token.content.strip())
            if match:
                if pending is not None:
                    raise DirectiveError(f"{rel}:{pending[0]}: a doctest directive with no code block after it")
                try:
                    pending = (token.map[0] + 1, Directive.parse(match.group(1)))
                except DirectiveError as error:
                    raise DirectiveError(f"{rel}:{token.map[0] + 1}: {error}") from None
            continue
        if token.type in ("fence", "code_block"):
            line = token.map[0] + 1 + (1 if token.type == "fence" else 0)
            lang = token.info.split()[0] if token.info.strip() else ""
            out.append(Block(rel, line, lang, token.content,
                             pending[1] if pending else Directive()))
            pending = None
        elif pending is not None and token.block:
            # A directive belongs to the code block right after it, nothing else.
            raise DirectiveError(f"{rel}:{pending[0]}: a doctest directive with no code block after it")
    return out


def inline_commands(path: Path) -> list[InlineCommand]:
    """Code spans in running text that show an `ampdelta` command line."""
    rel = str(path.relative_to(REPO_ROOT))
    out = []
    for token in _parser().parse(path.read_text()):
        if token.type != "inline" or not token.children:
            continue
        breaks = 0  # the line breaks before a span: its line within the paragraph
        for child in token.children:
            if child.type in ("softbreak", "hardbreak"):
                breaks += 1
            elif child.type == "code_inline" and child.content.startswith("ampdelta "):
                out.append(InlineCommand(rel, token.map[0] + 1 + breaks, child.content))
    return out


def command_lines(text: str) -> list[tuple[int, str]]:
    """The commands of a shell block: (line offset within the block, command). A command
    goes on past its line after a backslash, or while a quote it opened is unclosed (shlex,
    the shell's own quoting rules, says which); blank lines are left out."""
    out = []
    pending = ""
    start = 0
    for offset, raw in enumerate(text.splitlines()):
        if not pending:
            start = offset
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        if _unclosed_quote(pending):
            pending += "\n"
            continue
        if pending.strip():
            out.append((start, pending.strip()))
        pending = ""
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def _unclosed_quote(command: str) -> bool:
    try:
        split_command(command)
    except ValueError as error:
        return "closing quotation" in str(error)
    return False


def split_command(command: str) -> list[str]:
    """A command's words, a trailing `# comment` left out."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return list(lexer)
