"""Where a notebook answers a question graded by a person: its written answer, its plot.

A question marked ``manual: true`` has no value to capture, so its answer is found among the
notebook's cells, markdown included, in the order a person would look:

1. ``tag``: the cell tagged ``answer`` (``grader assign`` keeps the tag on the prompt it puts in the
   skeleton), for the question its metadata names (``grader: {question: ID}``, as the importers
   write it), or else the k-th such cell answering the k-th manual question;
2. ``skeleton``: students' editors drop tags, so the cell that follows the skeleton's cell before
   the answer (the question's text, as given), up to the next cell the skeleton gives;
3. ``heading``: the cells after a markdown cell that names the question (its title or id), up to
   the next heading.

In each case, the cells a student added right after the answer (a second paragraph, a plot in a
new cell) belong to it: they run until the next cell that the skeleton gives unchanged (without
the skeleton, as in a student's self-check, the tagged cell alone is the answer). Nothing
here runs code; outputs are read as they were saved.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

ANSWER_TAG = "answer"
ANSWER_PROMPT = "YOUR ANSWER HERE"
MAX_ANSWER_CHARS = 20_000  # what a scorecard carries of an answer's text
_BLANKS = {"?", "...", "raise NotImplementedError()", "raise NotImplementedError"}  # an answer cell as released
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s", re.M)


class FoundBy(StrEnum):
    """How an answer's cells were found (``Answer.found_by``)."""

    TAG = "tag"
    SKELETON = "skeleton"
    HEADING = "heading"
    PERSON = "person"  # none was found: the person grading picked them (``grader review``)


@dataclass(frozen=True)
class NbCell:
    """One cell of a notebook, any type, as saved."""

    index: int  # 1-based among all cells, as every message numbers them
    kind: str  # code | markdown | raw
    source: str
    tags: tuple[str, ...] = ()
    outputs: str = ""  # the saved outputs, as JSON text (what a change of plot changes)
    question: str = ""  # an answer cell's question, where its metadata says (``grader: {question: ID}``)

    @property
    def key(self) -> str:
        return " ".join(self.source.split())


@dataclass(frozen=True)
class Answer:
    """The cells that answer a question, with their text and a digest of what they hold."""

    cells: tuple[int, ...]
    found_by: FoundBy
    text: str
    digest: str  # sources and saved outputs: a regrade keeps a person's grade while this is the same
    # What its code cells draw in the grader's own run (``grader.run.figures``): PNG images as
    # base64 text (None: the run took none), and how many were left out (too many, too large).
    figures: tuple[str, ...] | None = None
    figures_left_out: int = 0

    @property
    def untouched(self) -> bool:
        """The answer is still the skeleton's prompt or blank (a plot cell left ``?``, ``...`` or
        the ``raise NotImplementedError()`` stub some tools release), or empty."""
        lines = [line.strip() for line in self.text.splitlines()]
        code = [line for line in lines if line and not line.startswith("#")]
        # A line that is still a blank (``?`` under a given ``import matplotlib.pyplot as plt``) is no
        # answer yet; ``...`` or a stub only where nothing else is written.
        return self.text.strip() in ("", ANSWER_PROMPT) or "?" in code or (bool(code) and set(code) <= _BLANKS)


def read_cells(path: Path, answer_ids: str = "") -> list[NbCell]:
    """Every cell of a notebook file; an unreadable file has none (grading says why elsewhere).
    ``answer_ids``: where the cells' metadata names the question each answers (``Assignment.answer_ids``)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    return cells_of(data, answer_ids)


def _at(meta: Any, path: str) -> Any:
    for part in path.split("."):
        meta = meta.get(part) if isinstance(meta, dict) else None
    return meta


def cells_of(data: Any, answer_ids: str = "") -> list[NbCell]:
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return []
    out = []
    for n, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(s) for s in source)
        meta = cell.get("metadata")
        tags = meta.get("tags", []) if isinstance(meta, dict) else []
        tags = tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ()
        outputs = cell.get("outputs") or []
        own = meta.get("grader") if isinstance(meta, dict) else None
        question = own.get("question") if isinstance(own, dict) else None
        if question is None and answer_ids:
            # The course's own id of the cell (``answer_ids``): the question it answers, where one
            # has that id; it ends the answer of the cells before it.
            question = _at(meta, answer_ids)
            if isinstance(question, str) and question and ANSWER_TAG not in tags:
                tags = (*tags, ANSWER_TAG)
        out.append(
            NbCell(
                index=n,
                kind=str(cell.get("cell_type", "")),
                source=str(source),
                tags=tags,
                outputs=json.dumps(outputs, sort_keys=True) if outputs else "",
                question=question if isinstance(question, str) else "",
            )
        )
    return out


def answer_of(cells: Sequence[NbCell], found_by: FoundBy) -> Answer:
    text = "\n\n".join(c.source.strip() for c in cells if c.source.strip())
    h = hashlib.sha256()
    for c in cells:
        h.update(c.kind.encode() + b"\0" + c.source.strip().encode() + b"\0" + c.outputs.encode() + b"\1")
    return Answer(
        cells=tuple(c.index for c in cells), found_by=found_by, text=text[:MAX_ANSWER_CHARS], digest=h.hexdigest()[:16]
    )


def locate(cells: Sequence[NbCell], given: Sequence[NbCell], questions: Sequence[tuple[str, str]]) -> dict[str, Answer]:
    """Question id -> its answer in ``cells``. ``given``: the skeleton's cells (or the solution's:
    the cells a student starts from, answer cells tagged); ``questions``: the manual questions'
    (id, title), in the assignment's order."""
    ids = [qid for qid, _ in questions]
    prompts = _answer_cells(given, ids, strict=False)
    given_keys = {c.key for i, c in enumerate(given) if i not in prompts.values() and c.key}
    tagged = _answer_cells(cells, ids, strict=True)
    out: dict[str, Answer] = {}
    for qid, title in questions:
        start: int | None = None
        how = FoundBy.TAG
        given_answer = given[prompts[qid]].key if qid in prompts else ""
        same = [i for i, c in enumerate(cells) if given_answer and c.key == given_answer]
        if qid in tagged:
            start = tagged[qid]
        elif given_answer and given_answer != ANSWER_PROMPT and same:
            start, how = same[-1], FoundBy.SKELETON  # an answer cell given as it is (a test whose output is graded)
        elif prompts.get(qid, 0) > 0:
            before = given[prompts[qid] - 1].key
            at = [i for i, c in enumerate(cells) if c.key == before]
            if at and at[-1] + 1 < len(cells) and cells[at[-1] + 1].key not in given_keys:
                start, how = at[-1] + 1, FoundBy.SKELETON
        if start is None:
            start, how = _after_heading(cells, qid, title), FoundBy.HEADING
        if start is None:
            continue
        end = start + 1
        while (
            (given or how == FoundBy.HEADING)
            and end < len(cells)
            and cells[end].key not in given_keys
            and ANSWER_TAG not in cells[end].tags
            and not (how == FoundBy.HEADING and cells[end].kind == "markdown" and _HEADING.search(cells[end].source))
        ):
            end += 1
        out[qid] = answer_of(cells[start:end], how)
    return out


def picked(cells: Sequence[NbCell], indices: Sequence[int]) -> Answer | None:
    """The answer made of the cells a person picked (1-based indices); ``None`` where none of them
    is in the notebook any more."""
    wanted = set(indices)
    chosen = [c for c in cells if c.index in wanted]
    return answer_of(chosen, FoundBy.PERSON) if chosen else None


def unclaimed(cells: Sequence[NbCell], given: Sequence[NbCell], found: dict[str, Answer]) -> set[int]:
    """The cells (1-based) that neither the skeleton gives as they are nor any found answer holds:
    what a student wrote that no question claims, where a lost answer is."""
    given_keys = {c.key for c in given if c.key}
    claimed = {i for a in found.values() for i in a.cells}
    # A given cell whose blanks (``?``) a student filled is still the given cell: an autograded question's.
    filled = [
        re.compile(re.escape(c.key).replace(r"\?", ".+?") + "$")
        for c in given
        if c.kind == "code" and "?" in c.key and len(c.key) > 3
    ]
    return {
        c.index
        for c in cells
        if c.key
        and c.key not in given_keys
        and c.index not in claimed
        and not (c.kind == "code" and any(p.match(c.key) for p in filled))
    }


def _answer_cells(cells: Sequence[NbCell], ids: Sequence[str], *, strict: bool) -> dict[str, int]:
    """Question id -> position of its ``answer`` cell: by the cell's own question where it names
    one, the others in order. ``strict``: in order only when there are as many of them as questions
    left (a student's copy, where a tag may have been lost or copied)."""
    found = [i for i, c in enumerate(cells) if ANSWER_TAG in c.tags]
    out = {cells[i].question: i for i in found if cells[i].question in ids}
    rest = [i for i in found if cells[i].question not in ids]
    free = [q for q in ids if q not in out]
    if not strict or len(rest) == len(free):
        out.update(zip(free, rest, strict=False))
    return out


def _after_heading(cells: Sequence[NbCell], qid: str, title: str) -> int | None:
    names = [n.lower() for n in (title, f"question {qid}", qid) if n and len(n) > 2]
    for i, c in enumerate(cells):
        if c.kind != "markdown" or not _HEADING.search(c.source):
            continue
        heading = " ".join(line.lower() for line in c.source.splitlines() if _HEADING.match(line))
        if any(n in heading for n in names) and i + 1 < len(cells):
            return i + 1
    return None
