"""The course's ``?`` blanks: found in a cell's text (they are not valid Python), and filled with a
name that raises a recognisable NameError, so the rest of the notebook still runs. Also the lines a
course makes inert (``inert_lines``), run as ``pass``."""

from __future__ import annotations

import functools
import io
import re
import tokenize
from dataclasses import dataclass

from grader.notebook.textcache import cached_by_text

BLANK_NAME = "__grader_blank__"


@dataclass(frozen=True)
class Blank:
    cell: int
    line: int
    text: str  # the line as the student sees it

    def where(self) -> str:
        return f"{self.place()}: `{self.text.strip()}`"

    def place(self) -> str:
        return f"cell {self.cell}, line {self.line}"

    @property
    def mark(self) -> str:
        """The placeholder as the student sees it: ``?``, ``raise NotImplementedError()`` or ``...``."""
        m = _placeholder(self.text.strip())
        return "?" if m is None else m.group("mark")


_HELP_RE = re.compile(r"^\s*\?{1,2}[A-Za-z_]")  # IPython help: ?name, ??name
# The placeholders of released notebooks besides ``?``: ``raise NotImplementedError()``, and ``x = ...``
# or a bare ``...`` line. A student who leaves one has not answered.
_PLACEHOLDER_RE = re.compile(
    r"^(?P<lead>\s*(?:[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*)?)"
    r"(?P<mark>raise\s+NotImplementedError(?:\(\s*\))?|\.\.\.)\s*(?P<rest>#.*)?$"
)


def find_blanks(source: str, cell: int = 0) -> list[Blank]:
    """Every ``?`` that stands for missing code: ``x = ?``, a bare ``?``, ``f(?, 1)``.

    IPython's help syntax (``obj?``, ``?obj``) is not a blank.
    """
    if "?" not in source and "NotImplementedError" not in source and "..." not in source:
        return []
    return [Blank(cell=cell, line=line, text=text) for line, text in _blank_lines(source)]


@functools.lru_cache(maxsize=64)
def inert_line(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One expression for a course's ``inert_lines``: a whole line, after its indentation, that matches one."""
    return re.compile(r"^(?P<indent>\s*)(?:" + "|".join(f"(?:{p})" for p in patterns) + r")$")


def without_inert_lines(source: str, patterns: tuple[str, ...]) -> str:
    """The source with each line that matches one of ``patterns`` (``Assignment.inert_lines``: the
    calls of a tool the course is graded without) made ``pass``, so a submission made on that tool's
    notebook runs the same without it."""
    if not patterns:
        return source
    inert = inert_line(patterns)
    lines = source.splitlines(keepends=True)
    for i, line in enumerate(lines):
        m = inert.match(line.rstrip("\r\n"))
        if m:
            lines[i] = m.group("indent") + "pass" + line[len(line.rstrip("\r\n")) :]
    return "".join(lines)


def _placeholder(line: str) -> re.Match[str] | None:
    m = _PLACEHOLDER_RE.match(line)
    if m is None or (m.group("mark").startswith("raise") and m.group("lead").strip()):
        return None  # ``x = raise ...`` is not Python: not a placeholder either
    return m


@cached_by_text
def _blank_lines(source: str) -> tuple[tuple[int, str], ...]:
    """(line number, line) of every blank in the source."""
    blanks: list[tuple[int, str]] = []
    lines = source.splitlines()
    prev: tokenize.TokenInfo | None = None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = _fallback_tokens(source)
    strings = {n for tok in tokens if tok.type == tokenize.STRING for n in range(tok.start[0] + 1, tok.end[0] + 1)}
    for n, line in enumerate(lines, 1):
        if n not in strings and _placeholder(line):
            blanks.append((n, line))
    for tok in tokens:
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            if tok.type in (tokenize.NEWLINE, tokenize.NL):
                prev = None
            continue
        if tok.string == "?" or (tok.type == tokenize.ERRORTOKEN and tok.string.strip() == "?"):
            line = lines[tok.start[0] - 1] if tok.start[0] - 1 < len(lines) else ""
            after_name = prev is not None and (prev.type == tokenize.NAME or prev.string in (")", "]", "?"))
            if not after_name and not _HELP_RE.match(line):
                blanks.append((tok.start[0], line))
        prev = tok
    return tuple(sorted(blanks))


def _fallback_tokens(source: str) -> list[tokenize.TokenInfo]:
    """Tokens up to the first tokenizer error, line by line, so a broken cell still shows blanks."""
    out: list[tokenize.TokenInfo] = []
    for n, line in enumerate(source.splitlines(), 1):
        try:
            for tok in tokenize.generate_tokens(io.StringIO(line + "\n").readline):
                out.append(tok._replace(start=(n, tok.start[1]), end=(n, tok.end[1])))
        except (tokenize.TokenError, IndentationError, SyntaxError):
            continue
    return out


@cached_by_text
def fill_blanks(source: str) -> str:
    """The source with every blank replaced by a name that raises when evaluated."""
    blanks = find_blanks(source)
    if not blanks:
        return source
    lines = source.splitlines(keepends=True)
    for b in blanks:
        line = lines[b.line - 1]
        m = _placeholder(line.rstrip("\r\n"))
        if m is not None:
            end = line[len(line.rstrip("\r\n")) :]
            lines[b.line - 1] = m.group("lead") + BLANK_NAME + (" " + m.group("rest") if m.group("rest") else "") + end
            continue
        lines[b.line - 1] = _replace_blank_marks(line)
    return "".join(lines)


def _replace_blank_marks(line: str) -> str:
    out = []
    in_str: str | None = None
    i = 0
    while i < len(line):
        ch = line[i]
        if in_str:
            out.append(ch)
            if ch == "\\":
                out.append(line[i + 1 : i + 2])
                i += 2
                continue
            if line.startswith(in_str, i):
                out.append(line[i + 1 : i + len(in_str)])
                i += len(in_str)
                in_str = None
                continue
        elif ch == "#":
            out.append(line[i:])
            break
        elif ch in "\"'":
            in_str = line[i : i + 3] if line[i : i + 3] in ('"""', "'''") else ch
            out.append(in_str)
            i += len(in_str)
            continue
        elif ch == "?":
            out.append(BLANK_NAME)
        else:
            out.append(ch)
        i += 1
    return "".join(out)
