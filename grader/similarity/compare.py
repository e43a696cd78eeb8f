"""Which notebooks share code: an inverted index of winnowed fingerprints finds the candidate
pairs, and only those are compared in full.

A k-gram counts as evidence when it is neither expected (the skeleton's or the solution's code)
nor common: one that more than ``common`` notebooks hold is what many students write for the
question (``np.exp(x) / np.exp(x).sum()``), not a sign that two of them worked together.

A pair's ``score`` is the larger of the two shares: the part of each notebook's distinctive code
(its tokens outside expected runs) that the shared k-grams cover. Half a notebook taken from one
classmate and half from another scores about one half against each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from grader.similarity.documents import NO_QUESTION, Document, Expected
from grader.similarity.tokens import K, W, kgram_hashes, winnow

MIN_TOKENS = 40  # a notebook with less distinctive code than this is scored as if it had this much
MIN_SHARED = 2  # winnowed fingerprints two notebooks must share to be compared in full ...
CANDIDATE_SHARE = 0.1  # ... and at least this share of the smaller one's (a pair below it scores about as little)
COMMON_SHARE = 0.1  # a k-gram in more than this share of the notebooks is common ...
COMMON_MIN = 10  # ... and in more than this many (a small class has no "common")


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


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    score: float
    a_share: float  # of a's distinctive code, the part shared with b
    b_share: float
    matches: tuple[QuestionMatch, ...]
    markdown: float  # the same measure over markdown answers, as text
    markdown_cells: tuple[tuple[int, int], ...]  # (cell of a, cell of b) whose text overlaps


@dataclass
class _Prints:
    grams: npt.NDArray[np.uint64]  # every k-gram hash, by position
    evidence: npt.NDArray[np.bool_]  # which positions count (not expected, not common)
    distinct: int  # the student's tokens not inside an expected run


def _covered(starts: npt.NDArray[np.int64], n_tokens: int, k: int = K) -> npt.NDArray[np.bool_]:
    """Which tokens the k-grams starting at ``starts`` cover."""
    mark = np.zeros(n_tokens + 1, dtype=np.int32)
    np.add.at(mark, starts, 1)
    np.add.at(mark, np.minimum(starts + k, n_tokens), -1)
    return np.cumsum(mark[:-1]) > 0


class Index:
    """The fingerprints of every notebook, and the candidate pairs they share."""

    def __init__(self, docs: Sequence[Document], known: Expected, *, common: int | None = None) -> None:
        self.docs = list(docs)
        self.known = known
        expected = np.array(sorted(known.grams), dtype=np.uint64)
        grams = [kgram_hashes(d.tokens) for d in self.docs]
        unique = [np.unique(g) for g in grams]
        everything = np.concatenate(unique) if unique else np.zeros(0, dtype=np.uint64)
        values, counts = np.unique(everything, return_counts=True)
        self.common_limit = common if common is not None else max(COMMON_MIN, int(COMMON_SHARE * len(self.docs)))
        common_grams = values[counts > self.common_limit]
        self.common_count = len(common_grams)
        barred = np.union1d(expected, common_grams)
        self.prints: list[_Prints] = []
        for d, g in zip(self.docs, grams, strict=True):
            is_expected = np.isin(g, expected)
            evidence = ~np.isin(g, barred)
            if len(g):  # a run of tokens none of which is the student's is no evidence of anything
                evidence &= np.convolve(d.own.astype(np.int32), np.ones(K, dtype=np.int32), "valid") > 0
            inside_expected = _covered(np.flatnonzero(is_expected), len(d.tokens))
            self.prints.append(_Prints(g, evidence, int((d.own & ~inside_expected).sum())))
        self.markdown_common = self._markdown_common()

    def _markdown_common(self) -> set[int]:
        seen: dict[int, int] = {}
        for d in self.docs:
            for h in set().union(*d.shingles.values()) if d.shingles else set():
                seen[h] = seen.get(h, 0) + 1
        return {h for h, n in seen.items() if n > self.common_limit}

    def candidates(self) -> list[tuple[int, int]]:
        """Pairs (i < j) sharing at least MIN_SHARED winnowed fingerprints or a markdown shingle,
        at least one of them from this term; from the posting lists, never from all pairs."""
        keys: list[npt.NDArray[np.uint64]] = []
        owners: list[npt.NDArray[np.int64]] = []
        for i, p in enumerate(self.prints):
            at = winnow(p.grams, W)
            chosen = np.unique(p.grams[at[p.evidence[at]]])
            keys.append(chosen)
            owners.append(np.full(len(chosen), i, dtype=np.int64))
        sizes = np.array([len(k) for k in keys], dtype=np.int64)
        pairs = self._pairs(keys, owners, MIN_SHARED, sizes)
        md_keys: list[npt.NDArray[np.uint64]] = [
            np.array(
                sorted(set().union(*d.shingles.values()) - self.markdown_common) if d.shingles else [], dtype=np.uint64
            )
            for d in self.docs
        ]
        md_owners = [np.full(len(k), i, dtype=np.int64) for i, k in enumerate(md_keys)]
        pairs |= self._pairs(md_keys, md_owners, 1)
        return sorted((i, j) for i, j in pairs if not (self.docs[i].past and self.docs[j].past))

    def _pairs(
        self,
        keys: list[npt.NDArray[np.uint64]],
        owners: list[npt.NDArray[np.int64]],
        least: int,
        prints: npt.NDArray[np.int64] | None = None,
    ) -> set[tuple[int, int]]:
        """Pairs of owners sharing at least ``least`` keys (and, given each owner's number of
        ``prints``, at least CANDIDATE_SHARE of the smaller one's)."""
        if not keys:
            return set()
        k, o = np.concatenate(keys), np.concatenate(owners)
        order = np.lexsort((o, k))
        k, o = k[order], o[order]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        sizes = np.diff(np.r_[starts, len(k)])
        codes: list[npt.NDArray[np.int64]] = []
        n = len(self.docs)
        for size in np.unique(sizes):
            if size < 2:
                continue
            groups = o[starts[sizes == size][:, None] + np.arange(size)]  # one row per posting list
            ii, jj = np.triu_indices(int(size), 1)
            codes.append((groups[:, ii] * n + groups[:, jj]).ravel())
        if not codes:
            return set()
        found, counts = np.unique(np.concatenate(codes), return_counts=True)
        keep = counts >= least
        if prints is not None:
            smaller = np.minimum(prints[found // n], prints[found % n])
            keep &= counts >= CANDIDATE_SHARE * smaller
        return {(int(c // n), int(c % n)) for c in found[keep]}

    def compare(self, i: int, j: int) -> Pair:
        """The full comparison of two notebooks: every shared k-gram, by position."""
        a, b, pa, pb = self.docs[i], self.docs[j], self.prints[i], self.prints[j]
        shared = np.intersect1d(pa.grams[pa.evidence], pb.grams[pb.evidence])
        at_a = np.flatnonzero(np.isin(pa.grams, shared) & pa.evidence)
        at_b = np.flatnonzero(np.isin(pb.grams, shared) & pb.evidence)
        cov_a, cov_b = _covered(at_a, len(a.tokens)) & a.own, _covered(at_b, len(b.tokens)) & b.own
        share_a = float(cov_a.sum()) / max(pa.distinct, MIN_TOKENS)
        share_b = float(cov_b.sum()) / max(pb.distinct, MIN_TOKENS)
        md, md_cells = self._markdown(a, b)
        return Pair(
            a=a.key,
            b=b.key,
            score=round(min(1.0, max(share_a, share_b)), 4),
            a_share=round(min(1.0, share_a), 4),
            b_share=round(min(1.0, share_b), 4),
            matches=self._matches(a, b, cov_a, cov_b),
            markdown=md,
            markdown_cells=md_cells,
        )

    def _matches(
        self, a: Document, b: Document, cov_a: npt.NDArray[np.bool_], cov_b: npt.NDArray[np.bool_]
    ) -> tuple[QuestionMatch, ...]:
        side_a, side_b = _regions(a, cov_a), _regions(b, cov_b)
        out = []
        order = [q for q in range(len(self.known.questions)) if q in side_a or q in side_b]
        order += [NO_QUESTION] if NO_QUESTION in side_a or NO_QUESTION in side_b else []
        for q in order:
            qid, title = (self.known.questions[q][0], self.known.questions[q][1]) if q != NO_QUESTION else (None, None)
            ra, ta = side_a.get(q, ((), 0))
            rb, _ = side_b.get(q, ((), 0))
            out.append(QuestionMatch(qid, title, ra, rb, ta))
        return tuple(out)

    def _markdown(self, a: Document, b: Document) -> tuple[float, tuple[tuple[int, int], ...]]:
        if not a.shingles or not b.shingles:
            return 0.0, ()
        cells = []
        shared_total = 0
        for ca, sa in a.shingles.items():
            for cb, sb in b.shingles.items():
                both = (sa & sb) - self.markdown_common
                if both:
                    cells.append((ca, cb))
                    shared_total += len(both)
        all_a = len(set().union(*a.shingles.values()))
        all_b = len(set().union(*b.shingles.values()))
        smaller = max(min(all_a, all_b), 10)
        return round(min(1.0, shared_total / smaller), 4), tuple(cells)


def _regions(doc: Document, covered: npt.NDArray[np.bool_]) -> dict[int, tuple[tuple[Region, ...], int]]:
    """The covered tokens as line ranges per cell, grouped by question, with a token count."""
    idx = np.flatnonzero(covered)
    if len(idx) == 0:
        return {}
    cells, questions = doc.cells[idx], doc.questions[idx]
    breaks = np.flatnonzero((np.diff(idx) != 1) | (np.diff(cells) != 0) | (np.diff(questions) != 0)) + 1
    starts, ends = np.r_[0, breaks], np.r_[breaks, len(idx)] - 1
    out: dict[int, tuple[list[Region], int]] = {}
    for first, last in zip(starts.tolist(), ends.tolist(), strict=True):
        q = int(questions[first])
        regions, count = out.get(q, ([], 0))
        region = Region(int(cells[first]), int(doc.lines[idx[first]]), int(doc.lines[idx[last]]))
        if regions and regions[-1].cell == region.cell and regions[-1].last_line >= region.first_line - 1:
            regions[-1] = Region(region.cell, regions[-1].first_line, max(region.last_line, regions[-1].last_line))
        else:
            regions.append(region)
        out[q] = (regions, count + last - first + 1)
    return {q: (tuple(r), n) for q, (r, n) in out.items()}


def clusters(pairs: Sequence[Pair], threshold: float) -> list[list[str]]:
    """Groups of three or more notebooks joined by pairs scoring at least ``threshold``
    (connected components), largest first."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in pairs:
        if p.score >= threshold:
            parent[root(p.a)] = root(p.b)
    groups: dict[str, list[str]] = {}
    for x in parent:
        groups.setdefault(root(x), []).append(x)
    return sorted((sorted(g) for g in groups.values() if len(g) >= 3), key=lambda g: (-len(g), g))


def compare_all(
    index: Index, candidates: Sequence[tuple[int, int]] | None = None, tick: Callable[[int], None] | None = None
) -> list[Pair]:
    """Every candidate pair (default: the index's) compared, best first."""
    out = []
    for i, j in index.candidates() if candidates is None else candidates:
        out.append(index.compare(i, j))
        if tick is not None:
            tick(1)
    return sorted(out, key=lambda p: (-p.score, -p.markdown, p.a, p.b))
