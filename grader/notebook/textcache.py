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

CACHED_TEXT_CHARS = 2_000  # longer texts are worked out each time
CACHED_TEXTS = 256  # per cache: the cells of several submissions (a batch grades two at a time)


def cached_by_text(fn):
    """``fn(text)``, kept by exact text in a bounded cache; ``fn.uncached`` is the plain function."""
    cached = functools.lru_cache(maxsize=CACHED_TEXTS)(fn)

    @functools.wraps(fn)
    def wrapper(text: str):
        return cached(text) if len(text) <= CACHED_TEXT_CHARS else fn(text)

    wrapper.uncached, wrapper.cache_info, wrapper.cache_clear = fn, cached.cache_info, cached.cache_clear
    return wrapper
