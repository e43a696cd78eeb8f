"""How rare each fragment of a class is: the chance that an independent student writes it, and
the information it carries.

**How rare a fragment is.** For each fragment (a statement, an expression, the flow from one
statement to the one that reads its value: ``canon``, ``documents``) the chance that an
independent student writes it is estimated from the notebooks that hold it, this term's and
earlier terms', *other than the two being compared*, smoothed towards a prior worth
``PRIOR_NOTEBOOKS`` notebooks::

    p = (others holding it + PRIOR_NOTEBOOKS * prior) / (notebooks - 2 + PRIOR_NOTEBOOKS)

The prior is the baseline, which a section of eight has too. A fragment of a common way of
writing a question or a common check (``baseline``, and any print, plot or check: ``canon``) has
the prior ``COMMON_PRIOR``; a flow between two common statements too. Any other statement or
expression has a prior that halves with every ``TOKENS_PER_HALVING`` tokens of its length
(``V = []`` is written by everyone, a thirty-token statement by almost no one); any other flow,
the product of its two statements' chances (two choices made independently). Fragments the
skeleton or the solution hold are expected and weigh nothing. A fragment's weight is the
information it carries, ``log2(1 / p)`` bits, as a share of the most a fragment can carry in
this class: 0 to 1. A fragment that one student in four or more writes (``COMMON``) still weighs
something, but is not looked up to find the pairs worth comparing (``compare``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from grader.similarity.documents import FLOW, Document

PRIOR_NOTEBOOKS = 20.0  # how many notebooks' worth the prior is
COMMON_PRIOR = 0.2  # the prior of a fragment the baseline holds (one of several common ways)
TOKENS_PER_HALVING = 3.0  # a fragment's own prior halves with every this many tokens of length ...
FREE_TOKENS = 2  # ... beyond this many ...
RAREST_PRIOR = 2.0**-12  # ... down to this
COMMON = 0.25  # a fragment at least this likely is a common one: not looked up, not marked in the page
INFORMATIVE = 1.0  # a fragment's information is log2(INFORMATIVE / chance): only a certain one carries none


class Weights:
    """How rare each fragment is, from the notebooks that hold it and the prior."""

    def __init__(self, docs: Sequence[Document]) -> None:
        self.notebooks = len(docs)
        unique = [np.unique(d.keys) for d in docs]
        everything = np.concatenate(unique) if unique else np.zeros(0, dtype=np.int64)
        self.keys, self.held = np.unique(everything, return_counts=True)
        size = np.zeros(len(self.keys), dtype=np.int64)
        common = np.zeros(len(self.keys), dtype=bool)
        flow = np.zeros(len(self.keys), dtype=bool)
        ends = np.zeros((len(self.keys), 2), dtype=np.int64)
        for d in docs:
            at = np.searchsorted(self.keys, d.keys)
            np.maximum.at(size, at, d.sizes)
            common[at[d.common]] = True
            is_flow = d.kinds == FLOW
            flow[at[is_flow]] = True
            ends[at[is_flow]] = d.flows[is_flow]
        self.common = common
        prior = np.clip(2.0 ** (-(size - FREE_TOKENS) / TOKENS_PER_HALVING), RAREST_PRIOR, COMMON_PRIOR)
        prior[common & ~flow] = COMMON_PRIOR
        p = self._chance(self.held, prior)
        # A flow is as likely as its two statements written together by chance (independently),
        # twice that for the statements that go together anyway; the statements never counted
        # (the solution's, the skeleton's) are certain.
        chance = np.ones(len(self.keys) + 1)
        chance[:-1] = p
        for side in (0, 1):
            where = np.searchsorted(self.keys, ends[flow, side])
            where = np.minimum(where, len(self.keys) - 1) if len(self.keys) else where
            found = self.keys[where] == ends[flow, side] if len(self.keys) else where.astype(bool)
            prior_side = np.where(found, chance[where], 1.0)
            prior[flow] = prior_side if side == 0 else np.minimum(COMMON_PRIOR, 2 * prior[flow] * prior_side)
        prior[flow] = np.maximum(prior[flow], RAREST_PRIOR)
        # Two common ways of writing two steps, one feeding the other, are a common way of
        # writing both: only the notebooks that hold the pair can tell otherwise.
        prior[flow & common] = COMMON_PRIOR
        self.chance = self._chance(self.held, prior)
        self.weight = self._weigh(self.held, prior, INFORMATIVE)

    def _chance(self, held: npt.NDArray[np.int64], prior: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """The chance that an independent student writes the fragment (two notebooks holding it aside)."""
        others = np.maximum(held - 2, 0)
        chance: npt.NDArray[np.float64] = (others + PRIOR_NOTEBOOKS * prior) / (
            max(self.notebooks - 2, 0) + PRIOR_NOTEBOOKS
        )
        return chance

    def _weigh(
        self, held: npt.NDArray[np.int64], prior: npt.NDArray[np.float64], certain: float
    ) -> npt.NDArray[np.float64]:
        """The information a fragment carries, ``log2(certain / chance)`` bits (nothing at a chance of
        ``certain`` or more), as a share of the most a fragment can carry in this class."""
        rest = max(self.notebooks - 2, 0) + PRIOR_NOTEBOOKS
        most = np.log2(certain * rest / (PRIOR_NOTEBOOKS * RAREST_PRIOR))
        weight: npt.NDArray[np.float64] = np.clip(np.log2(certain / self._chance(held, prior)) / most, 0.0, 1.0)
        return weight

    def chance_of(self, keys: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        return self.chance[np.searchsorted(self.keys, keys)]

    def of(self, keys: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        return self.weight[np.searchsorted(self.keys, keys)]

    def held_by(self, key: int) -> int:
        return int(self.held[np.searchsorted(self.keys, key)])

    def is_common(self, key: int) -> bool:
        return bool(self.common[np.searchsorted(self.keys, key)])
