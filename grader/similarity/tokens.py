"""Code as a stream of normalised tokens, and the fingerprints of that stream.

Python's own tokenizer reads each cell. Comments, blank lines and whitespace leave nothing; a name
the student chose becomes ``V`` (so renaming changes nothing), a number ``N``, a string ``S``.
What is not the student's choice stays as written: keywords, operators, builtins, attributes
(``.sum``, ``.T``) and keyword arguments (``axis=``), so ``np.exp`` and ``np.sum`` stay different.

Fingerprints are MOSS's: hashes of every run of ``K`` tokens, and for the index only those that
winnowing selects (in every window of ``W`` consecutive hashes, the rightmost smallest), which
guarantees that any shared run of ``K + W - 1`` tokens shares a fingerprint (Schleimer, Wilkerson
and Aiken, *Winnowing*, SIGMOD 2003). The hashes are computed with NumPy from stable token hashes,
so a report comes out the same in every run.
"""

from __future__ import annotations

import builtins
import io
import keyword
import re
import tokenize
import zlib
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view

from grader.notebook.textcache import cached_by_text

K = 11  # tokens in a k-gram: a statement and a half (``V = V . exp ( V - V . max ( ) ) ;`` is 14)
W = 4  # winnowing window: a shared run of K + W - 1 = 14 tokens is always found by the index
Hashes = npt.NDArray[np.uint64]

_BUILTINS = frozenset(dir(builtins))
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT}
_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)  # Python 3.12 splits f-strings into parts
_FSTRING_END = getattr(tokenize, "FSTRING_END", -1)
_MAGIC_RE = re.compile(r"^(\s*)([%!].*)$", re.M)


@dataclass(frozen=True)
class Token:
    norm: str  # what the fingerprints see
    exact: str  # the token as written (names and literals kept), for telling given code apart
    line: int  # 1-based line in the cell


def without_magics(source: str) -> str:
    """The cell with IPython magics and shell lines blanked (kept as empty lines, so line numbers
    stay the student's); a ``%%`` cell magic makes the whole cell something other than Python."""
    if source.lstrip().startswith("%%"):
        return ""
    return _MAGIC_RE.sub(lambda m: m.group(1) + "pass", source)


@cached_by_text
def cell_tokens(source: str) -> tuple[Token, ...]:
    """The cell's tokens, normalised. A cell Python cannot tokenize to the end keeps the tokens
    read before the error (students' unfinished cells still say something)."""
    raw: list[tokenize.TokenInfo] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            raw.append(tok)
    except (tokenize.TokenError, SyntaxError):  # IndentationError is a SyntaxError
        pass
    raw = [t for t in raw if t.type not in _SKIP or t.type == _FSTRING_START or t.type == _FSTRING_END]
    out: list[Token] = []
    depth = 0
    in_fstring = 0
    for i, tok in enumerate(raw):
        kind, text = tok.type, tok.string
        if kind == _FSTRING_START:
            if in_fstring == 0:
                out.append(Token("S", text, tok.start[0]))
            in_fstring += 1
            continue
        if kind == _FSTRING_END:
            in_fstring -= 1
            continue
        if in_fstring:
            continue
        if kind == tokenize.NEWLINE or (kind == tokenize.OP and text == ";"):
            if out and out[-1].norm != ";":
                out.append(Token(";", ";", tok.start[0]))
            continue
        if kind == tokenize.OP:
            depth += text in "([{"
            depth -= text in ")]}"
            out.append(Token(text, text, tok.start[0]))
        elif kind == tokenize.NAME:
            if text == "pass":  # also what a magic became
                continue
            out.append(Token(_name(text, raw, i, depth), text, tok.start[0]))
        elif kind == tokenize.NUMBER:
            out.append(Token("N", text, tok.start[0]))
        elif kind == tokenize.STRING:
            out.append(Token("S", text, tok.start[0]))
        else:  # an error token (a stray character): as written
            out.append(Token(text, text, tok.start[0]))
    return tuple(out)


def _name(text: str, raw: list[tokenize.TokenInfo], i: int, depth: int) -> str:
    """``raw`` holds the significant tokens only, so the neighbours are at i - 1 and i + 1."""
    if keyword.iskeyword(text) or text in _BUILTINS:
        return text
    if i > 0 and raw[i - 1].string == ".":
        return text  # an attribute: the library's name, not the student's
    if depth > 0 and i + 1 < len(raw) and raw[i + 1].string == "=":
        return text  # a keyword argument (axis=, dim=, keepdims=)
    return "V"


_TOKEN_HASHES: dict[str, int] = {}


def token_hash(norm: str) -> int:
    """A stable 32-bit hash of a normalised token (the same in every process)."""
    h = _TOKEN_HASHES.get(norm)
    if h is None:
        h = _TOKEN_HASHES[norm] = zlib.crc32(norm.encode("utf-8")) | 1
    return h


_P = np.uint64(0x100000001B3)  # FNV's prime: the base of the rolling sum
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)  # splitmix64's finaliser


def kgram_hashes(tokens: Hashes, k: int = K) -> Hashes:
    """The hash of every run of ``k`` consecutive tokens (position i: tokens i .. i+k-1). NumPy's
    unsigned arithmetic wraps, which is the modulus wanted."""
    n = len(tokens) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.uint64)
    h = np.zeros(n, dtype=np.uint64)
    for j in range(k):
        h = h * _P + tokens[j : j + n]
    h ^= h >> np.uint64(30)
    h *= _M1
    h ^= h >> np.uint64(27)
    h *= _M2
    h ^= h >> np.uint64(31)
    return h


def winnow(hashes: Hashes, w: int = W) -> npt.NDArray[np.int64]:
    """The positions winnowing selects: in each window of ``w`` consecutive hashes the smallest,
    the rightmost of equal ones. The windows that overhang the start count too (as in copydetect),
    so the first tokens of a short sequence have a fingerprint."""
    n = len(hashes)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    top = np.iinfo(np.uint64).max
    padded = np.concatenate([np.full(w - 1, top, dtype=np.uint64), hashes])
    windows = sliding_window_view(padded, w)
    rightmost = (w - 1) - np.argmin(windows[:, ::-1], axis=1)
    return np.unique(rightmost + np.arange(len(windows)) - (w - 1))


_WORD_RE = re.compile(r"[^\W_]+", re.U)
SHINGLE = 4  # words in a markdown shingle


def word_shingles(text: str, n: int = SHINGLE) -> set[int]:
    """Hashes of the runs of ``n`` words of a text (lower case, punctuation and markup dropped)."""
    words = _WORD_RE.findall(text.lower())
    return {zlib.crc32(" ".join(words[i : i + n]).encode("utf-8")) for i in range(len(words) - n + 1)}
