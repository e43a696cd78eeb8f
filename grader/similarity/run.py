"""``grader similarity``: read a class (and earlier terms), find the pairs that share code, write
``similarity.json`` and ``similarity.html``.

A score is a lead for a person to look at, never proof, and nothing here changes a grade.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from grader.batch.intake import intake
from grader.batch.progress import Progress
from grader.course.model import Assignment
from grader.errors import NotebookError, UsageError
from grader.files import write_atomic
from grader.similarity.compare import Index, Pair, clusters, compare_all
from grader.similarity.documents import Document, Expected, document, expected
from grader.similarity.page import render
from grader.similarity.result import DEFAULT_THRESHOLD, NOTICE, Similarity, Skipped
from grader.similarity.tokens import K, W


def _read(paths: list[Path], assignment: Assignment, known: Expected, *, past: bool, prefix: str,
          docs: list[Document], skipped: list[Skipped], notes: list[str], progress: Progress | None) -> None:
    with intake(paths, assignment) as found:
        if progress is not None:
            progress.total += len(found.submissions)
            if progress.bar is not None:
                progress.bar.total = progress.total
        notes.extend(found.notes)
        for sub in found.submissions:
            key = prefix + sub.name
            try:
                docs.append(document(sub.path, key=key, student=sub.student, origin=sub.origin, past=past,
                                     known=known))
            except NotebookError as exc:
                skipped.append(Skipped(key, sub.origin, str(exc)))
            except (OSError, UnicodeError, ValueError, RecursionError) as exc:  # a file that changed under us
                skipped.append(Skipped(key, sub.origin, f"The file cannot be read: {exc}."))
            if progress is not None:
                progress.advance()


def find_similar(paths: list[Path], assignment: Assignment, *, past: Sequence[Path] = (),
                 threshold: float = DEFAULT_THRESHOLD, progress: bool | None = None) -> Similarity:
    """Read the class in ``paths`` and the earlier terms in ``past``; compare. ``progress`` None
    shows a bar on a terminal and plain lines elsewhere; False shows nothing."""
    if not 0 < threshold <= 1:
        raise UsageError(f"--threshold must be a score above 0 and at most 1, got {threshold:g}.")
    known = expected(assignment)
    docs: list[Document] = []
    skipped: list[Skipped] = []
    notes: list[str] = []
    bar = Progress(0, f"{assignment.name}: reading", done_word="read") if progress is not False else None
    try:
        _read(paths, assignment, known, past=False, prefix="", docs=docs, skipped=skipped, notes=notes, progress=bar)
        for n, folder in enumerate(past, 1):
            label = folder.name or f"past{n}"
            _read([folder], assignment, known, past=True, prefix=f"past:{label}/", docs=docs, skipped=skipped,
                  notes=notes, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    if not any(not d.past for d in docs) and not any(not s.key.startswith("past:") for s in skipped):
        raise UsageError("No notebooks found in the given paths.")
    index = Index(docs, known)
    pairs = compare_all(index)
    return Similarity(assignment=assignment, documents=docs, pairs=pairs, clusters=clusters(pairs, threshold),
                      skipped=skipped, notes=notes, threshold=threshold, common_limit=index.common_limit)


def to_data(result: Similarity, *, min_score: float = 0.0) -> dict[str, object]:
    """The JSON form: the pairs scoring at least ``min_score`` (code or markdown), best first."""
    return {
        "notice": NOTICE,
        "assignment": result.assignment.name,
        "settings": {"k": K, "window": W, "threshold": result.threshold, "common_in_more_than": result.common_limit,
                     "min_score": min_score},
        "notebooks": [{"id": d.key, "student": d.student, "origin": d.origin, "past": d.past,
                       "tokens": int(len(d.tokens))} for d in result.documents],
        "skipped": [asdict(s) for s in result.skipped],
        "clusters": result.clusters,
        "pairs": [_pair_data(p) for p in result.pairs if p.score >= min_score or p.markdown >= min_score],
    }


def _pair_data(p: Pair) -> dict[str, object]:
    return {
        "a": p.a, "b": p.b, "score": p.score, "a_share": p.a_share, "b_share": p.b_share,
        "questions": [m.question for m in p.matches if m.question is not None],
        "matches": [{"question": m.question, "title": m.title, "tokens": m.tokens,
                     "a": [asdict(r) for r in m.a], "b": [asdict(r) for r in m.b]} for m in p.matches],
        "markdown": {"score": p.markdown, "cells": [list(c) for c in p.markdown_cells]},
    }


def write(result: Similarity, out: Path, *, min_score: float = 0.0) -> tuple[Path, Path]:
    """DIR/similarity.json and DIR/similarity.html."""
    out.mkdir(parents=True, exist_ok=True)
    data = json.dumps(to_data(result, min_score=min_score), indent=1, ensure_ascii=False)
    json_path = write_atomic(out / "similarity.json", data + "\n")
    html_path = write_atomic(out / "similarity.html", render(result, min_score=min_score))
    return json_path, html_path
