"""Skipping IPython's token pass for cells that provably do not need it (the student process).

IPython tokenizes every cell (Python's pure-Python tokenize, about half a millisecond for a
20-line cell) only to look for its own syntax: `%magic`, `!cmd`, `x = %magic`, `x = !cmd`,
`obj?`, and lines escaped with `!`, `?`, `%`, `,`, `;` or `/`. Most notebook cells contain none
of it, and for them that pass returns its input unchanged. `skip_needless_tokenizing` replaces
the shell's TransformerManager.transform_cell with one that runs IPython's own cleanup and
line transforms (blank leading lines, common indentation, `>>>` and `In [1]:` prompts, `%%`
cell magics) as IPython does, and skips only the token pass, when the text proves that pass
a no-op. Anything doubtful goes through IPython's transform_cell unchanged.

Why the checks below suffice (Python <= 3.11, whose tokenize module is the pure-Python one):
- The four token transformers only fire on: a `?` token (HelpEnd, or escape `?`); a `!` token
  that is not part of `!=` (SystemAssign, escape `!`/`!!`); a `%` token right after a `=`
  token (MagicAssign); and an escape character as the first token of a logical line
  (EscapedCommand), which always starts a physical line after spaces, tabs or form feeds.
  _IPYTHON_SYNTAX matches any text where such a token could be (in code, strings or comments).
- Other line breaks that str.splitlines honours (\r, \v, \f, \x1c-\x1e, \x85, \u2028, \u2029)
  make the tokenizer's lines differ from "\n" lines (and can make IPython warn): doubtful.
- The token pass can raise: tokenize raises IndentationError for a dedent to a column that no
  enclosing block has, which IPython reports with tokenize's own message. _indentation_ok
  finds the lines tokenize treats as new statements (outside strings and brackets, not after a
  backslash) exactly as tokenize does, and replays tokenize's indentation stack on them; any
  string, bracket or backslash it cannot place with certainty counts as doubtful.
tests/test_worker_speed.py compares the result with IPython's on every cell of every notebook
in the repository and on cells written to hit each rule.
"""

from __future__ import annotations

import re
import sys
from typing import Any

_IPYTHON_SYNTAX = re.compile(r"\?|!(?!=)|=[\s\\]*%|^\s*[!?%,;/]", re.M)
_OTHER_LINE_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_LEX = re.compile(r"""('''|\"\"\"|'|")|\#[^\n]*|([(\[{])|([)\]}])|(\\\n?)|(\n)""")
_STRING_END = {quote: re.compile(pattern, re.S) for quote, pattern in (
    ("'", r"[^'\\\n]*(?:\\.[^'\\\n]*)*'"),
    ('"', r'[^"\\\n]*(?:\\.[^"\\\n]*)*"'),
    ("'''", r"[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"),
    ('"""', r'[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'),
)}
_TABSIZE = 8  # tokenize's


def skip_needless_tokenizing(manager: Any) -> bool:
    """Give ``manager`` (the shell's TransformerManager) a transform_cell that skips the token
    pass whenever ``needs_token_pass`` proves it changes nothing. False (and nothing changed)
    where the reasoning above does not hold."""
    from IPython.core import inputtransformer2 as it2

    if (sys.version_info >= (3, 12)
            or set(it2.ESCAPE_SINGLES) != set("!?%,;/")
            or manager.token_transformers != [it2.MagicAssign, it2.SystemAssign, it2.EscapedCommand, it2.HelpEnd]):
        return False
    full = manager.transform_cell

    def transform_cell(cell: str) -> str:
        source = cell if cell.endswith("\n") else cell + "\n"  # as IPython's transform_cell
        lines = source.splitlines(keepends=True)
        for transform in manager.cleanup_transforms + manager.line_transforms:
            lines = transform(lines)
        text = "".join(lines)
        return full(cell) if needs_token_pass(text) else text

    manager.transform_cell = transform_cell
    return True


def needs_token_pass(text: str) -> bool:
    """Whether IPython's token transformers could change ``text`` (a cell after IPython's cleanup
    and line transforms) or raise on it. False only when they provably return it unchanged."""
    return bool(_IPYTHON_SYNTAX.search(text) or _OTHER_LINE_BREAKS.search(text)) or not _indentation_ok(text)


def _indentation_ok(text: str) -> bool:
    """True when tokenize reads ``text`` (lines ending in "\\n") to the end without raising:
    every string closed, brackets balanced, no stray backslash, no inconsistent dedent."""
    starts = [0]  # offsets of the lines tokenize starts a new statement on
    depth, pos = 0, 0
    while (m := _LEX.search(text, pos)) is not None:
        quote, opening, closing, backslash, newline = m.groups()
        pos = m.end()
        if quote is not None:
            end = _STRING_END[quote].match(text, pos)
            if end is None:
                return False  # unterminated: tokenize's error recovery is not worth modelling
            pos = end.end()
        elif opening is not None:
            depth += 1
        elif closing is not None:
            depth -= 1
            if depth < 0:
                return False
        elif backslash is not None:
            if backslash != "\\\n":
                return False  # a backslash outside a string that does not end its line
        elif newline is not None and depth == 0:
            starts.append(pos)
    if depth or text[-2:] == "\\\n":
        return False  # tokenize would hit the end inside a statement
    indents = [0]
    size = len(text)
    for i in starts:
        column = 0
        while i < size and text[i] in " \t":
            column = column + 1 if text[i] == " " else (column // _TABSIZE + 1) * _TABSIZE
            i += 1
        if i == size or text[i] in "#\n":
            continue  # blank or comment-only lines do not count
        if column > indents[-1]:
            indents.append(column)
        while column < indents[-1]:
            if column not in indents:
                return False  # tokenize raises IndentationError here
            indents.pop()
    return True
