"""Results worked out from a cell's text, kept by exact text in bounded caches.

The same cell text is read again and again: by ``analyse``, again for every variant run
(``variants.with_injections``), and in every submission that keeps the notebook's given cells
as they were. Tokenizing and walking syntax trees are most of the grader's own time per
submission, so their results are kept by exact text. Those results are immutable (strings,
tuples, frozen dataclasses), so handing the same one out again is safe.

Bounded by count and by text length: ordinary cells (the course's are at most ~1,200 characters)
take a few MB in all, and cells written to fill the caches (2,000 characters of one-statement
lines) keep them under 70 MB.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Protocol, TypeVar, cast

CACHED_TEXT_CHARS = 2_000  # longer texts are worked out each time
CACHED_TEXTS = 256  # per cache: the cells of several submissions (a batch grades two at a time)

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class TextCached(Protocol[R_co]):
    """What ``cached_by_text`` returns: the function, its plain form, and its cache's controls."""

    __name__: str

    @property
    def uncached(self) -> Callable[[str], R_co]: ...

    @property
    def cache_info(self) -> Callable[[], functools._CacheInfo]: ...

    @property
    def cache_clear(self) -> Callable[[], None]: ...

    def __call__(self, text: str, /) -> R_co: ...


def cached_by_text(fn: Callable[[str], R]) -> TextCached[R]:
    """``fn(text)``, kept by exact text in a bounded cache; ``fn.uncached`` is the plain function."""
    cached = functools.lru_cache(maxsize=CACHED_TEXTS)(fn)

    @functools.wraps(fn)
    def wrapper(text: str) -> R:
        return cached(text) if len(text) <= CACHED_TEXT_CHARS else fn(text)

    # A plain function with attributes, not an object with __call__: it is called once per cell.
    wrapper.uncached, wrapper.cache_info, wrapper.cache_clear = (  # type: ignore[attr-defined]
        fn,
        cached.cache_info,
        cached.cache_clear,
    )
    return cast(TextCached[R], wrapper)
