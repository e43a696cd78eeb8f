"""Work split among several graders (``--split``), and each grader's progress.

``question``: each question goes to one grader in turn (with more graders than questions, the
graders of a question share its submissions in ranges). ``students``: the class, in the page's
order (by output name), is cut into as many ranges of consecutive submissions as there are
graders, the same for every question. A share is computed from the class and the graders as they
are when it is asked for: a submission graded into the folder, or a grader added, moves the ranges'
ends, never a grade (a grade stays whoever gave it). Anyone may still open and grade any answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SPLITS = ("question", "students")


def ranges(ids: Sequence[str], n: int) -> list[list[str]]:
    """``ids`` cut into ``n`` runs of consecutive ids whose sizes differ by one at most."""
    size, extra = divmod(len(ids), n)
    out, at = [], 0
    for i in range(n):
        take = size + (1 if i < extra else 0)
        out.append(list(ids[at : at + take]))
        at += take
    return out


@dataclass(frozen=True)
class Split:
    by: str  # one of SPLITS
    graders: tuple[str, ...]
    questions: tuple[str, ...]
    ids: tuple[str, ...]

    def shares(self) -> dict[str, dict[str, list[str]]]:
        """grader -> question -> the submissions it is theirs to grade."""
        found: dict[str, dict[str, list[str]]] = {name: {} for name in self.graders}
        n, nq = len(self.graders), len(self.questions)
        if not n:
            return found
        for i, qid in enumerate(self.questions):
            if self.by == "students":
                who, cut = list(self.graders), ranges(self.ids, n)
            else:
                who = [g for j, g in enumerate(self.graders) if j % nq == i] or [self.graders[i % n]]
                cut = ranges(self.ids, len(who))
            for name, part in zip(who, cut, strict=True):
                if part:
                    found[name][qid] = part
        return found

    def owner(self, qid: str, sid: str) -> str:
        """Whose it is to grade (``""``: nobody's, the split gives it to no one)."""
        return next((name for name, qs in self.shares().items() if sid in qs.get(qid, ())), "")


def span(ids: Sequence[str], names: dict[str, str]) -> str:
    """A share as a person reads it: 'ada – cy (3)'."""
    if not ids:
        return "none"
    first, last = names.get(ids[0], ids[0]), names.get(ids[-1], ids[-1])
    return f"{first} ({len(ids)})" if len(ids) == 1 else f"{first} – {last} ({len(ids)})"


def progress(
    split: Split | None, graders: Sequence[str], graded: dict[tuple[str, str], str], names: dict[str, str]
) -> list[dict[str, object]]:
    """Each grader's row: their share (where the work is split), how much of it is graded, and how
    many grades they gave (answers graded as they are now)."""
    shares = split.shares() if split is not None else {}
    rows = []
    others = sorted({who for who in graded.values() if who and who not in graders})  # no longer listed, or not known
    for name in [*graders, *others]:
        mine = shares.get(name, {})
        assigned = [(s, q) for q, ids in mine.items() for s in ids]
        rows.append(
            {
                "name": name,
                "share": "; ".join(f"{q}: {span(ids, names)}" for q, ids in mine.items()) if split else "",
                "assigned": len(assigned),
                "done": sum(1 for key in assigned if key in graded),
                "given": sum(1 for who in graded.values() if who == name),
            }
        )
    return rows
