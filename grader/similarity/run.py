"""``grader similarity``: read a class (and earlier terms), find the pairs that share code, write
``similarity.json`` and ``similarity.html``.

A score is a lead for a person to look at, never proof, and nothing here changes a grade.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.batch.intake import intake
from grader.batch.progress import Progress
from grader.course.model import Assignment
from grader.errors import NotebookError, UsageError
from grader.files import write_atomic
from grader.similarity import compare, rarity
from grader.similarity.compare import Index, Pair, clusters, compare_all
from grader.similarity.documents import Document, Expected, document, expected
from grader.similarity.page import render
from grader.similarity.result import DEFAULT_THRESHOLD, NOTICE, Similarity, Skipped


@dataclass(frozen=True)
class _Task:
    key: str
    path: Path
    student: str
    origin: str
    past: bool


_KNOWN: Expected | None = None  # what a reading process compares against, set once per process


def _remember(known: Expected) -> None:
    global _KNOWN
    _KNOWN = known


def _read_one(task: _Task) -> Document | Skipped:
    assert _KNOWN is not None
    try:
        return document(task.path, key=task.key, student=task.student, origin=task.origin, past=task.past, known=_KNOWN)
    except NotebookError as exc:
        return Skipped(task.key, task.origin, str(exc))
    except (OSError, UnicodeError, ValueError, RecursionError) as exc:  # a file that changed under us
        return Skipped(task.key, task.origin, f"The file cannot be read: {exc}.")


def _read_all(
    tasks: list[_Task], known: Expected, jobs: int, new_bar: Callable[[], Progress | None]
) -> list[Document | Skipped]:
    """Every notebook read, in order: in ``jobs`` processes when there are enough to be worth it.
    The progress bar is made once the processes are started: forked while the bar's thread runs,
    a process could inherit a lock that thread holds."""
    _remember(known)
    if jobs <= 1 or len(tasks) < 50:
        return _reading(map(_read_one, tasks), new_bar())
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_remember, initargs=(known,)) as pool:
        pool.submit(os.getpid).result()  # every process is started with the first task
        return _reading(pool.map(_read_one, tasks, chunksize=16), new_bar())


def _reading(results: Iterable[Document | Skipped], bar: Progress | None) -> list[Document | Skipped]:
    out = []
    try:
        for found in results:
            out.append(found)
            if bar is not None:
                bar.advance()
    finally:
        if bar is not None:
            bar.close()
    return out


def find_similar(
    paths: list[Path],
    assignment: Assignment,
    *,
    past: Sequence[Path] = (),
    threshold: float = DEFAULT_THRESHOLD,
    progress: bool | None = None,
    jobs: int | None = None,
) -> Similarity:
    """Read the class in ``paths`` and the earlier terms in ``past``; compare. ``progress`` None
    shows a bar on a terminal and plain lines elsewhere; False shows nothing. ``jobs`` processes
    read the notebooks (default: one per core)."""
    if not 0 < threshold <= 1:
        raise UsageError(f"--threshold must be a score above 0 and at most 1, got {threshold:g}.")
    known = expected(assignment)
    notes: list[str] = []
    if not assignment.skeleton.is_file():
        notes.append(
            f"the skeleton {assignment.skeleton} does not exist (grader assign writes it): the given "
            "code cannot be told from the students' own, so every notebook shares it"
        )
    if not assignment.solution.is_file():
        notes.append(
            f"the solution {assignment.solution} is not here: code written as the solution writes it "
            "counts as evidence unless many students write it"
        )
    tasks: list[_Task] = []
    with ExitStack() as stack:
        sources = [("", list(paths), False)]
        labels: list[str] = []
        for n, folder in enumerate(past, 1):  # each earlier term by its folder's name, made distinct
            label = folder.name or f"past{n}"
            labels.append(label if label not in labels else f"{label}-{n}")
            sources.append((f"past:{labels[-1]}/", [folder], True))
        for prefix, where, is_past in sources:
            found = stack.enter_context(intake(where, assignment))
            notes.extend(found.notes)
            tasks.extend(
                _Task(prefix + sub.name, sub.path, sub.student, sub.origin, is_past) for sub in found.submissions
            )
        if not any(not t.past for t in tasks):
            raise UsageError("No notebooks found in the given paths.")

        def new_bar() -> Progress | None:
            return (
                Progress(len(tasks), f"{assignment.name}: reading", done_word="read") if progress is not False else None
            )

        read = _read_all(tasks, known, jobs if jobs is not None else (os.cpu_count() or 1), new_bar)
    docs = [r for r in read if isinstance(r, Document)]
    skipped = [r for r in read if isinstance(r, Skipped)]
    index = Index(docs, known)
    candidates = index.candidates()
    bar = (
        Progress(len(candidates), f"{assignment.name}: comparing", done_word="pairs compared")
        if progress is not False
        else None
    )
    try:
        pairs = compare_all(index, candidates, tick=bar.advance if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    return Similarity(
        assignment=assignment,
        documents=docs,
        pairs=pairs,
        clusters=clusters(pairs, threshold),
        skipped=skipped,
        notes=notes,
        threshold=threshold,
        notebooks=index.weights.notebooks,
    )


def to_data(result: Similarity, *, min_score: float = 0.0) -> dict[str, object]:
    """The JSON form: the pairs scoring at least ``min_score`` (code or markdown), best first."""
    return {
        "notice": NOTICE,
        "assignment": result.assignment.name,
        "settings": {
            "threshold": result.threshold,
            "min_score": min_score,
            "notebooks_weighed": result.notebooks,
            "prior_notebooks": rarity.PRIOR_NOTEBOOKS,
            "common_prior": rarity.COMMON_PRIOR,
            "common_chance": rarity.COMMON,
            "floor": compare.FLOOR,
        },
        "notebooks": [
            {"id": d.key, "student": d.student, "origin": d.origin, "past": d.past, "tokens": d.tokens}
            for d in result.documents
        ],
        "skipped": [asdict(s) for s in result.skipped],
        "clusters": result.clusters,
        "pairs": [_pair_data(p) for p in result.pairs if p.score >= min_score or p.markdown >= min_score],
    }


def _pair_data(p: Pair) -> dict[str, object]:
    return {
        "a": p.a,
        "b": p.b,
        "score": p.score,
        "a_share": p.a_share,
        "b_share": p.b_share,
        "questions": [m.question for m in p.matches if m.question is not None],
        "matches": [
            {
                "question": m.question,
                "title": m.title,
                "tokens": m.tokens,
                "weight": m.weight,
                "a": [asdict(r) for r in m.a],
                "b": [asdict(r) for r in m.b],
            }
            for m in p.matches
        ],
        "markdown": {"score": p.markdown, "cells": [list(c) for c in p.markdown_cells]},
        "shared": [
            {
                "question": s.question,
                "a": asdict(s.a),
                "b": asdict(s.b),
                "held_by": s.held_by,
                "notebooks": s.notebooks,
                "common": s.common,
                "rarity": s.weight,
                "flow": s.flow,
            }
            for s in p.shared
        ],
    }


def write(result: Similarity, out: Path, *, min_score: float = 0.0) -> tuple[Path, Path]:
    """DIR/similarity.json and DIR/similarity.html."""
    out.mkdir(parents=True, exist_ok=True)
    data = json.dumps(to_data(result, min_score=min_score), indent=1, ensure_ascii=False)
    json_path = write_atomic(out / "similarity.json", data + "\n")
    html_path = write_atomic(out / "similarity.html", render(result, min_score=min_score))
    return json_path, html_path
