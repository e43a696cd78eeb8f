"""Which notebooks share code, weighed by how rare what they share is (``rarity``).

**The score of a pair** is the larger of two shares, each the part of a notebook's weight it
shares with the other *beyond what an independent classmate shares by chance*. A fragment's
weight is spread over its tokens when it is longer than ``SPREAD`` (a long statement, or a helper
written out where it is called, counts as much as a short one equally rare); each token of a
notebook weighs as much as the weightiest fragment covering it, and has the chance of that
fragment. A notebook's weight ``W`` is the sum over its tokens; ``X``, the sum of weight times
chance, is what an independent student is expected to share with it; ``S`` is the weight of its
tokens that the fragments it shares with the other cover. Its share is::

    (S - X) / max(W - X, FLOOR)

(0 when negative): 1 for an exact copy, about 0 for a classmate who writes the usual forms, and
a notebook with little beyond the usual (``W - X`` under ``FLOOR``, about two rare lines) cannot
reach 1 by sharing that. The share means the same in a class of 8 and of 500: the chances come
from the class and the baseline, and the scale from the notebook itself. A notebook made of two
classmates' halves scores about one half against each; two different algorithms for one question
share nothing beyond the usual and score about 0.

**Clusters** join the pairs a person should look at: at or above the threshold, and each
notebook's closest match (within ``TIE``) for both of its notebooks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from grader.similarity.documents import EXPRESSION, FLOW, NO_QUESTION, Document, Expected
from grader.similarity.rarity import COMMON, Weights

SPREAD = 12  # tokens: a fragment longer than this spreads its weight over its length
FLOOR = 16.0  # weighed tokens: the least weight beyond chance a notebook is scored as having (about two rare lines)
CANDIDATE = 0.1  # a pair whose score cannot reach this is not compared in full (the listing's default floor)
DETAILS = 0.2  # a pair scoring less is listed without its shared lines ...
DETAILED_BEST = 40  # ... unless it is among this many best pairs (shown side by side in the page)
MARKDOWN_PRIOR = 2.0**-8  # the prior of a run of four words a student wrote
MARKDOWN_FLOOR = 4.0  # weighed shingles
EVIDENCE = 8  # shared fragments described per pair
TIE = 0.005  # a pair within this of a notebook's best score is one of its closest matches (clusters)


@dataclass(frozen=True)
class Region:
    """A run of one notebook's lines, in one cell, covered by shared code."""

    cell: int
    first_line: int
    last_line: int


@dataclass(frozen=True)
class QuestionMatch:
    """The shared code of a pair that belongs to one question (or to none: ``question`` None)."""

    question: str | None
    title: str | None
    a: tuple[Region, ...]
    b: tuple[Region, ...]
    tokens: int  # shared tokens of a in this question
    weight: float  # their weight: the part of a's score this question makes (before the floor)


@dataclass(frozen=True)
class Shared:
    """One shared fragment and how rare it is."""

    question: str | None
    a: Region
    b: Region
    held_by: int  # notebooks holding it, these two included
    notebooks: int  # notebooks read, earlier terms' included
    common: bool  # a common way of writing it (the baseline holds it)
    weight: float  # 0 to 1: how rare, 1 the rarest a fragment can be in this class
    flow: bool  # the flow from one statement to another (``a`` and ``b`` then cover the reader)


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    score: float
    a_share: float  # of a's code, weighed by rarity, the part shared with b
    b_share: float
    matches: tuple[QuestionMatch, ...]
    markdown: float  # the same measure over markdown answers, as text
    markdown_cells: tuple[tuple[int, int], ...]  # (cell of a, cell of b) whose text overlaps
    shared: tuple[Shared, ...] = ()  # the rarest shared fragments, rarest first


def _cover(
    starts: npt.NDArray[np.int32], ends: npt.NDArray[np.int32]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For each token a range covers: the token, and the range's row."""
    lengths = (ends - starts).astype(np.int64)
    total = int(lengths.sum())
    first = np.repeat(np.cumsum(lengths) - lengths, lengths)
    at = np.repeat(starts.astype(np.int64), lengths) + (np.arange(total) - first)
    return at, np.repeat(np.arange(len(starts)), lengths)


def _paint(
    n: int, starts: npt.NDArray[np.int32], ends: npt.NDArray[np.int32], weights: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Each of ``n`` tokens' weight: the largest weight of the ranges that cover it."""
    out = np.zeros(n, dtype=np.float64)
    at, row = _cover(starts, ends)
    np.maximum.at(out, at, weights[row])
    return out


def _paint_chance(
    n: int,
    starts: npt.NDArray[np.int32],
    ends: npt.NDArray[np.int32],
    weights: npt.NDArray[np.float64],
    chances: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """Each of ``n`` tokens' chance of being shared by an independent student: the chance of the
    weightiest range that covers it (1 for a token no range covers: it weighs nothing)."""
    out = np.ones(n, dtype=np.float64)
    if not len(starts):
        return out
    order = np.argsort(weights, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    best = np.full(n, -1, dtype=np.int64)
    at, row = _cover(starts, ends)
    np.maximum.at(best, at, rank[row])
    covered = best >= 0
    out[covered] = chances[order][best[covered]]
    return out


@dataclass
class _Own:
    weights: npt.NDArray[np.float64]  # each row's weight
    tokens: npt.NDArray[np.float64]  # each token's weight
    total: float
    keys: npt.NDArray[np.int64]  # the fragment keys of weight above zero, unique
    unique_of_row: npt.NDArray[np.int64]  # each row's place in ``keys`` (len(keys) for a row of no weight)
    chance: float = 0.0  # the weight an independent student is expected to share: sum of weight x chance
    rare: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))  # keys: chance <= COMMON


class Index:
    """The weighed fragments of every notebook, and the candidate pairs they share."""

    def __init__(self, docs: Sequence[Document], known: Expected) -> None:
        self.docs = list(docs)
        self.known = known
        self.weights = Weights(self.docs)
        self.own: list[_Own] = []
        for d in self.docs:
            w = self.weights.of(d.keys) if len(d.keys) else np.zeros(0)
            # A fragment's weight spread over its tokens: a long statement counts as much as a short
            # one of the same rarity (a helper written out in a call is no more evidence than the call).
            w = w * np.minimum(1.0, SPREAD / np.maximum(d.sizes, 1))
            tokens = _paint(d.tokens, d.starts, d.ends, w)
            p = self.weights.chance_of(d.keys) if len(d.keys) else np.zeros(0)
            expected_share = float((tokens * _paint_chance(d.tokens, d.starts, d.ends, w, p)).sum())
            keys = np.unique(d.keys[w > 0])
            at = np.searchsorted(keys, d.keys)
            found = (at < len(keys)) & (keys[np.minimum(at, max(len(keys) - 1, 0))] == d.keys) if len(keys) else at < 0
            rare = self.weights.chance_of(keys) <= COMMON if len(keys) else np.zeros(0, dtype=bool)
            self.own.append(
                _Own(w, tokens, float(tokens.sum()), keys, np.where(found, at, len(keys)), expected_share, rare)
            )
        self.floor = FLOOR
        self._sorted: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
        self.markdown_weight = self._markdown_weights()

    def _markdown_weights(self) -> dict[int, float]:
        seen: dict[int, int] = {}
        for d in self.docs:
            for h in set().union(*d.shingles.values()) if d.shingles else set():
                seen[h] = seen.get(h, 0) + 1
        if not seen:
            return {}
        keys = list(seen)
        held = np.array([seen[k] for k in keys], dtype=np.int64)
        w = self.weights._weigh(held, np.full(len(keys), MARKDOWN_PRIOR), COMMON)
        return {k: float(x) for k, x in zip(keys, w, strict=True) if x > 0}

    def candidates(self) -> list[tuple[int, int]]:
        """Pairs (i < j), at least one of this term, whose shared fragments rarer than ``COMMON``
        could make a score of CANDIDATE on their own, or that share a markdown answer's wording; from
        the posting lists of the rare fragments, never from all pairs. What common fragments add
        beyond them is about what independent students share by chance, which the score takes off."""
        n = len(self.docs)
        keys, owners, masses = [], [], []
        room = np.ones(n)  # per notebook: the room above chance, the score's denominator
        for i, (d, o) in enumerate(zip(self.docs, self.own, strict=True)):
            room[i] = max(o.total - o.chance, self.floor)
            if not len(o.keys):
                continue
            # The most the fragment can add to this notebook's share: its weight over all its rows.
            at = np.searchsorted(o.keys, d.keys)
            at = np.minimum(at, len(o.keys) - 1)
            hit = o.keys[at] == d.keys
            mass = np.zeros(len(o.keys))
            np.add.at(mass, at[hit], (o.weights * (d.ends - d.starts))[hit])
            keys.append(o.keys[o.rare])
            owners.append(np.full(int(o.rare.sum()), i, dtype=np.int64))
            masses.append(mass[o.rare])
        pairs: set[tuple[int, int]] = set()
        if keys:
            k, who, m = np.concatenate(keys), np.concatenate(owners), np.concatenate(masses)
            order = np.lexsort((who, k))
            k, who, m = k[order], who[order], m[order]
            starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
            sizes = np.diff(np.r_[starts, len(k)])
            codes, left, right = [], [], []
            for size in np.unique(sizes):
                if size < 2:
                    continue
                rows = starts[sizes == size][:, None] + np.arange(size)
                ii, jj = np.triu_indices(int(size), 1)
                codes.append((who[rows][:, ii] * n + who[rows][:, jj]).ravel())
                left.append(m[rows][:, ii].ravel())
                right.append(m[rows][:, jj].ravel())
            if codes:
                found, inverse = np.unique(np.concatenate(codes), return_inverse=True)
                first, second = found // n, found % n
                bound_a = np.bincount(inverse, np.concatenate(left), len(found)) / room[first]
                bound_b = np.bincount(inverse, np.concatenate(right), len(found)) / room[second]
                keep = np.maximum(bound_a, bound_b) >= CANDIDATE
                pairs |= {(int(c // n), int(c % n)) for c in found[keep]}
        pairs |= self._markdown_pairs()
        return sorted((i, j) for i, j in pairs if not (self.docs[i].past and self.docs[j].past))

    def _markdown_pairs(self) -> set[tuple[int, int]]:
        holders: dict[int, list[int]] = {}
        for i, d in enumerate(self.docs):
            for h in set().union(*d.shingles.values()) if d.shingles else set():
                if h in self.markdown_weight:
                    holders.setdefault(h, []).append(i)
        out: set[tuple[int, int]] = set()
        for who in holders.values():
            out |= {(a, b) for x, a in enumerate(who) for b in who[x + 1 :]}
        return out

    def compare(self, i: int, j: int, *, details: bool | None = None) -> Pair:
        """The full comparison of two notebooks, with the lines and fragments they share when
        ``details`` (default: when the score reaches DETAILS)."""
        a, b, oa, ob = self.docs[i], self.docs[j], self.own[i], self.own[j]
        shared = np.intersect1d(oa.keys, ob.keys, assume_unique=True)
        cov_a = self._covered(a, oa, shared)
        cov_b = self._covered(b, ob, shared)
        share_a = self._beyond_chance(float(cov_a.sum()), oa)
        share_b = self._beyond_chance(float(cov_b.sum()), ob)
        score = round(min(1.0, max(share_a, share_b)), 4)
        md, md_cells = self._markdown(a, b)
        detailed = score >= DETAILS if details is None else details
        return Pair(
            a=a.key,
            b=b.key,
            score=score,
            a_share=round(min(1.0, share_a), 4),
            b_share=round(min(1.0, share_b), 4),
            matches=self._matches(a, b, cov_a, cov_b, oa, ob, shared) if detailed else (),
            markdown=md,
            markdown_cells=md_cells,
            shared=self._shared(a, b, oa, ob, shared) if detailed else (),
        )

    def _beyond_chance(self, shared: float, o: _Own) -> float:
        """The part of a notebook's weight shared beyond what an independent student shares by
        chance, over the most that can be (its weight, or the floor, less that chance): 1 for an
        exact copy, about 0 for a classmate who writes the usual forms, below 0 for less."""
        return max(0.0, (shared - o.chance) / max(o.total - o.chance, self.floor))

    def _covered(self, d: Document, o: _Own, shared: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """Each token's weight from the rows whose fragment is in ``shared`` (a subset of ``o.keys``)."""
        if not len(shared):
            return np.zeros(d.tokens)
        mask = np.zeros(len(o.keys) + 1, dtype=bool)
        mask[np.searchsorted(o.keys, shared)] = True
        rows = mask[o.unique_of_row]
        return _paint(d.tokens, d.starts[rows], d.ends[rows], o.weights[rows])

    def _rows_of(self, doc: Document, key: int) -> npt.NDArray[np.int64]:
        """The rows of ``doc`` whose fragment is ``key``, in order (by a sorted index made once per notebook)."""
        found = self._sorted.get(doc.key)
        if found is None:
            order = np.argsort(doc.keys, kind="stable")
            found = self._sorted[doc.key] = (order, doc.keys[order])
        order, keys = found
        lo, hi = np.searchsorted(keys, key), np.searchsorted(keys, key, side="right")
        return order[lo:hi]

    def _marked(self, d: Document, o: _Own, shared: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """The tokens a shared fragment no more common than ``COMMON`` covers: marked in the page."""
        mask = np.zeros(len(o.keys) + 1, dtype=bool)
        if len(shared):
            at = np.searchsorted(o.keys, shared)
            mask[at[o.rare[at]]] = True
        rows = mask[o.unique_of_row]
        return _paint(d.tokens, d.starts[rows], d.ends[rows], np.ones(int(rows.sum()))) > 0

    def _matches(
        self,
        a: Document,
        b: Document,
        cov_a: npt.NDArray[np.float64],
        cov_b: npt.NDArray[np.float64],
        oa: _Own,
        ob: _Own,
        shared: npt.NDArray[np.int64],
    ) -> tuple[QuestionMatch, ...]:
        side_a, side_b = (
            _regions(a, cov_a, self._marked(a, oa, shared)),
            _regions(b, cov_b, self._marked(b, ob, shared)),
        )
        total = max(oa.total, self.floor)
        out = []
        order = [q for q in range(len(self.known.questions)) if q in side_a or q in side_b]
        order += [NO_QUESTION] if NO_QUESTION in side_a or NO_QUESTION in side_b else []
        for q in order:
            qid, title = (self.known.questions[q][0], self.known.questions[q][1]) if q != NO_QUESTION else (None, None)
            ra, ta, wa = side_a.get(q, ((), 0, 0.0))
            rb, _, _ = side_b.get(q, ((), 0, 0.0))
            out.append(QuestionMatch(qid, title, ra, rb, ta, round(wa / total, 4)))
        return tuple(out)

    def _shared(
        self, a: Document, b: Document, oa: _Own, ob: _Own, shared: npt.NDArray[np.int64]
    ) -> tuple[Shared, ...]:
        """The shared lines of a that weigh most, each once, with the weightiest fragment that covers
        them (a statement, or the flow into or out of one) and how rare it is."""
        if not len(shared):
            return ()
        mask = np.zeros(len(oa.keys) + 1, dtype=bool)
        mask[np.searchsorted(oa.keys, shared)] = True
        rows = np.flatnonzero(mask[oa.unique_of_row] & (a.kinds != EXPRESSION))
        if not len(rows):
            return ()
        mass = oa.weights[rows] * (a.ends[rows] - a.starts[rows])
        # The weightiest row of each region of lines, the weightiest regions first.
        region_of = (
            a.cells[a.starts[rows]].astype(np.int64) << 40
            | a.lines[a.starts[rows]].astype(np.int64) << 20
            | a.lines[a.ends[rows] - 1].astype(np.int64)
        )
        order = np.argsort(-mass, kind="stable")
        _, first = np.unique(region_of[order], return_index=True)
        best = rows[order[np.sort(first)][:EVIDENCE]]
        out: list[Shared] = []
        for ra in best.tolist():
            region = _region(a, int(a.starts[ra]), int(a.ends[ra]))
            key = int(a.keys[ra])
            in_a, in_b = self._rows_of(a, key), self._rows_of(b, key)
            rb = int(in_b[min(int(np.searchsorted(in_a, ra)), len(in_b) - 1)])
            q = int(a.questions[a.starts[ra]])
            out.append(
                Shared(
                    question=self.known.questions[q][0] if q != NO_QUESTION else None,
                    a=region,
                    b=_region(b, int(b.starts[rb]), int(b.ends[rb])),
                    held_by=self.weights.held_by(key),
                    notebooks=self.weights.notebooks,
                    common=self.weights.is_common(key),
                    weight=round(float(self.weights.of(np.array([key]))[0]), 3),
                    flow=int(a.kinds[ra]) == FLOW,
                )
            )
        return tuple(out)

    def _markdown(self, a: Document, b: Document) -> tuple[float, tuple[tuple[int, int], ...]]:
        if not a.shingles or not b.shingles:
            return 0.0, ()
        cells = []
        weigh = self.markdown_weight
        shared: set[int] = set()
        for ca, sa in a.shingles.items():
            for cb, sb in b.shingles.items():
                both = {h for h in sa & sb if h in weigh}
                if both:
                    cells.append((ca, cb))
                    shared |= both
        total_a = sum(weigh.get(h, 0.0) for h in set().union(*a.shingles.values()))
        total_b = sum(weigh.get(h, 0.0) for h in set().union(*b.shingles.values()))
        score = sum(weigh[h] for h in shared) / max(min(total_a, total_b), MARKDOWN_FLOOR)
        return round(min(1.0, score), 4), tuple(cells)


def _region(doc: Document, start: int, end: int) -> Region:
    cells = doc.cells[start:end]
    lines = doc.lines[start:end][cells == cells[0]]
    return Region(int(cells[0]), int(lines.min()), int(lines.max()))


def _regions(
    doc: Document, covered: npt.NDArray[np.float64], marked: npt.NDArray[np.bool_]
) -> dict[int, tuple[tuple[Region, ...], int, float]]:
    """The marked tokens as line ranges per cell, grouped by question, with a token count, and the
    weight of the covered ones."""
    idx = np.flatnonzero(marked)
    if len(idx) == 0:
        return {}
    questions_all = doc.questions.astype(np.int64) + 1  # NO_QUESTION is -1
    weight_of = np.bincount(questions_all, covered)
    cells, questions, lines = doc.cells[idx], doc.questions[idx], doc.lines[idx]
    order = np.lexsort((lines, cells, questions))
    cells, questions, lines = cells[order].tolist(), questions[order].tolist(), lines[order].tolist()
    out: dict[int, tuple[list[Region], int]] = {}
    for q, cell, line in zip(questions, cells, lines, strict=True):
        regions, count = out.get(q, ([], 0))
        if regions and regions[-1].cell == cell and regions[-1].last_line >= line - 1:
            if line > regions[-1].last_line:
                regions[-1] = Region(cell, regions[-1].first_line, line)
        else:
            regions.append(Region(cell, line, line))
        out[q] = (regions, count + 1)
    return {q: (tuple(r), n, float(weight_of[q + 1])) for q, (r, n) in out.items()}


def clusters(pairs: Sequence[Pair], threshold: float) -> list[list[str]]:
    """Groups of three or more notebooks joined by the pairs a person should look at, largest
    first: pairs scoring at least ``threshold`` that are, for each of the two, its closest match
    (within ``TIE``). Copies of one notebook are each other's closest matches; a classmate who
    shares a usual form with many others is the closest match of few, so independent students are
    not chained into one large group through their second and third best pairs."""
    best: dict[str, float] = {}
    for p in pairs:
        best[p.a] = max(best.get(p.a, 0.0), p.score)
        best[p.b] = max(best.get(p.b, 0.0), p.score)
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in pairs:
        if p.score >= threshold and p.score >= best[p.a] - TIE and p.score >= best[p.b] - TIE:
            parent[root(p.a)] = root(p.b)
    groups: dict[str, list[str]] = {}
    for x in parent:
        groups.setdefault(root(x), []).append(x)
    return sorted((sorted(g) for g in groups.values() if len(g) >= 3), key=lambda g: (-len(g), g))


def compare_all(
    index: Index, candidates: Sequence[tuple[int, int]] | None = None, tick: Callable[[int], None] | None = None
) -> list[Pair]:
    """Every candidate pair (default: the index's) compared, best first; the pairs scoring at least
    DETAILS, and the DETAILED_BEST best, with their shared lines and fragments."""
    found = []
    for i, j in index.candidates() if candidates is None else candidates:
        found.append((index.compare(i, j, details=False), i, j))
        if tick is not None:
            tick(1)
    found.sort(key=lambda x: (-x[0].score, -x[0].markdown, x[0].a, x[0].b))
    return [
        index.compare(i, j, details=True) if rank < DETAILED_BEST or p.score >= DETAILS else p
        for rank, (p, i, j) in enumerate(found)
    ]
