"""What of a cell is Python, and markdown as runs of words.

Code is read from its syntax tree (``canon``); here are the two text-level steps around it:
IPython magics and shell lines left out of a cell before it is parsed, and the word shingles a
markdown answer is compared by.
"""

from __future__ import annotations

import re
import zlib

_MAGIC_RE = re.compile(r"^(\s*)([%!].*)$", re.M)


def without_magics(source: str) -> str:
    """The cell with IPython magics and shell lines blanked (kept as ``pass`` lines, so line
    numbers stay the student's); a ``%%`` cell magic makes the whole cell something other than Python."""
    if source.lstrip().startswith("%%"):
        return ""
    return _MAGIC_RE.sub(lambda m: m.group(1) + "pass", source)


_WORD_RE = re.compile(r"[^\W_]+", re.U)
SHINGLE = 4  # words in a markdown shingle


def word_shingles(text: str, n: int = SHINGLE) -> set[int]:
    """Hashes of the runs of ``n`` words of a text (lower case, punctuation and markup dropped)."""
    words = _WORD_RE.findall(text.lower())
    return {zlib.crc32(" ".join(words[i : i + n]).encode("utf-8")) for i in range(len(words) - n + 1)}
