"""Names as a person grading reads them: one Unicode form, and the ones that could fool the eye marked.

A name is shown NFC-normalised (``Zoë`` typed as ``e`` and a combining diaeresis reads as the one
letter). It is marked where its letters come from more than one script (``Dее`` with two Cyrillic
``е``; Japanese kana with kanji is one script here), and where it looks like another name of the
class: the two are the same once each is NFKC-normalised, stripped of invisible
characters and each letter that looks like a Latin one replaced by it (``_LATIN``: the Cyrillic and
Greek letters Unicode's confusables list maps to a Latin letter, and the digits read as letters).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

_CONFUSABLE = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "һ": "h",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "ү": "y", "ɡ": "g",
    # Greek
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w",
    # Digits read as letters
    "0": "o", "1": "l", "|": "l",
}  # fmt: skip
_LATIN = str.maketrans(
    {**_CONFUSABLE, **{k.upper(): v.upper() for k, v in _CONFUSABLE.items() if k.isalpha() and k.upper() != k}}
)
_ONE_SCRIPT = {"CJK": "HAN", "HIRAGANA": "HAN", "KATAKANA": "HAN"}  # Japanese writes them together


def shown(name: str) -> str:
    """The name in one Unicode form (NFC), as the page shows it."""
    return unicodedata.normalize("NFC", name)


def scripts(name: str) -> list[str]:
    """The scripts of the name's letters, capitalised (``["Cyrillic", "Latin"]``), in order of first use."""
    found: list[str] = []
    for ch in shown(name):
        if not unicodedata.category(ch).startswith("L"):
            continue
        word = unicodedata.name(ch, "UNKNOWN").split(" ")[0]
        script = _ONE_SCRIPT.get(word, word).capitalize()
        if script not in found:
            found.append(script)
    return found


def skeleton(name: str) -> str:
    """What the name looks like: equal for two names a reader cannot tell apart."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Mn", "Zs") or ch == " ")
    return " ".join(text.translate(_LATIN).split())


def marks(name: str, others: Iterable[str]) -> list[str]:
    """What a person grading should know about a name among the other names of the class (those of
    other submissions): that it mixes scripts, that it looks like another, or nothing."""
    out = []
    used = scripts(name)
    if len(used) > 1:
        out.append(f"mixes {' and '.join(used)} letters")
    mine, look = shown(name), skeleton(name)
    alike: dict[str, str] = {}
    for other in others:
        if other == name:
            continue
        if shown(other) == mine:
            alike[mine] = f"another submission has this name in another Unicode form ({_codes(other)})"
        elif skeleton(other) == look:
            alike.setdefault(shown(other), f"looks like {shown(other)!r}, another submission's name")
    out += [alike[k] for k in sorted(alike)]
    return out


def _codes(name: str) -> str:
    """The code points where a name is not plain ASCII: how two forms that look alike differ."""
    return " ".join(f"U+{ord(ch):04X}" for ch in name if ord(ch) > 0x7E)
