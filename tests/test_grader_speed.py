"""The grader's own per-submission work is cached and short-cut; these pin that the answers stay
the same: parsed cells are kept by exact source text, a context's memo never outlives its data,
and the message-free verdict (``matches``) agrees with ``compare``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import NUMPY_CORRECT

from grader import notebook
from grader.capture import decode, encode
from grader.course.model import Check
from grader.errors import NotebookError
from grader.judge import checks, variants
from grader.judge.checks import Context
from grader.judge.compare import compare, matches
from grader.notebook import blanks, textcache

ROOT = Path(__file__).resolve().parent.parent


def course_notebooks() -> list[Path]:
    return sorted(p for d in ("solutions", "assignments", "examples") for p in (ROOT / d).rglob("*.ipynb"))


def V(x):
    return decode(json.loads(json.dumps(encode(x, budget=[1 << 24]))))


# --------------------------------------------------------------------------------------------
# parse_cell: kept by exact source text


def test_cached_parses_equal_fresh_parses_on_every_course_notebook():
    texts = []
    for path in course_notebooks():
        try:
            cells = notebook.read(path)
        except NotebookError:
            continue
        for cell in cells:
            texts.append(cell.source)
            if notebook.find_blanks(cell.source):
                texts.append(notebook.fill_blanks(cell.source))
    assert len(texts) > 100
    cached = (notebook.parse_cell, notebook.fill_blanks, blanks._blank_lines)
    for text in texts:  # fill the caches with every cell first, so a mix-up between entries would show
        for fn in cached:
            fn(text)
    for text in texts:
        for fn in cached:
            assert fn(text) == fn.uncached(text), (fn.__name__, text)


def test_blanks_carry_the_cell_they_were_found_in():
    source = "x = ?\ny = f(?, 1)\nhelp?"
    assert notebook.find_blanks(source, 3) == [notebook.Blank(3, 1, "x = ?"), notebook.Blank(3, 2, "y = f(?, 1)")]
    assert notebook.find_blanks(source, 7) == [notebook.Blank(7, 1, "x = ?"), notebook.Blank(7, 2, "y = f(?, 1)")]
    assert notebook.fill_blanks(source) == "x = __grader_blank__\ny = f(__grader_blank__, 1)\nhelp?"


def test_analyse_is_the_same_from_a_cold_and_a_warm_cache():
    for path in course_notebooks():
        try:
            cells = notebook.read(path)
        except NotebookError:
            continue
        notebook.parse_cell.cache_clear()
        cold = notebook.analyse(cells)
        warm = notebook.analyse(cells)
        assert warm == cold, path
        assert notebook.blank_report(warm) == notebook.blank_report(cold)


def test_sources_differing_in_one_character_do_not_share_an_entry():
    assert notebook.parse_cell("x = 1").statements[0].binds == {"x"}
    assert notebook.parse_cell("y = 1").statements[0].binds == {"y"}
    assert notebook.parse_cell("x = y").statements[0].reads == {"y"}
    assert notebook.parse_cell("x = y ").statements[0].end_col_offset == 5
    assert notebook.parse_cell("x = (").syntax_error == "line 1: '(' was never closed"
    assert notebook.parse_cell("x = ()").syntax_error is None


def test_a_very_large_cell_is_parsed_but_not_kept():
    source = "x = 1\n" + "# padding\n" * (textcache.CACHED_TEXT_CHARS // 10)
    assert len(source) > textcache.CACHED_TEXT_CHARS
    before = notebook.parse_cell.cache_info().currsize
    parsed = notebook.parse_cell(source)
    assert [s.binds for s in parsed.statements] == [{"x"}]
    assert notebook.parse_cell.cache_info().currsize == before


def test_analyse_keeps_the_binds_of_a_cell_that_does_not_parse():
    info = notebook.analyse([notebook.Cell(1, "a = 1\nb == 2\nc = (")])[0]
    assert info.syntax_error == "line 3: '(' was never closed"
    assert info.binds == {"a", "c"} and info.statements == []


# --------------------------------------------------------------------------------------------
# with_injections: the rewritten cells, pinned (each variant asks for the same cell again)

INJECTIONS = [
    ("X = np.eye(2)\nprint(X)", ("X",), "X = np.eye(2); __grader_inject__('X')\nprint(X)"),
    (
        "ids = tok(words)\nids = torch.tensor([ids])\nn = len(ids)",
        ("ids",),
        "ids = tok(words)\nids = torch.tensor([ids]); __grader_inject__('ids')\nn = len(ids)",
    ),
    ("a = 1; b = 2", ("a", "b"), "a = 1; __grader_inject__('a'); b = 2; __grader_inject__('b')"),
    (
        "W = np.array([\n    [1, 2],\n])  # weights\n",
        ("W",),
        "W = np.array([\n    [1, 2],\n]); __grader_inject__('W')  # weights\n",
    ),
    (
        "%matplotlib inline\nmot = 'café'; X = f(mot)",
        ("X",),
        "%matplotlib inline\nmot = 'café'; X = f(mot); __grader_inject__('X')",
    ),
    ("X = X.astype(np.float32)", ("X",), "X = X.astype(np.float32)"),
    ("X = (", ("X",), "X = ("),
]


@pytest.mark.parametrize("source, names, expected", INJECTIONS)
def test_injections_go_after_the_statements_that_define_the_names(source, names, expected):
    assert variants.with_injections(source, names) == expected
    assert variants.with_injections(source, names) == expected  # again, as for the second variant
    assert variants.with_injections(source, ()) == source


# --------------------------------------------------------------------------------------------
# Context memo: once per context, never carried over by replace()


def _infos(*sources: str) -> list[notebook.CellInfo]:
    return notebook.analyse([notebook.Cell(i, s) for i, s in enumerate(sources, 1)])


def test_a_context_memo_does_not_survive_replace():
    first = _infos("X = load()", "Q = X @ W", "out = Q + 1")
    second = _infos("X = load()", "Q = W @ W", "out = Q + 1")
    ctx = Context(infos=first, blanks=notebook.blank_report(first), cells=[], student={}, reference={})
    assert ctx.dependencies(("X", "W"))["out"] == {"X", "W"}
    assert ctx.dependencies(("X", "W")) == notebook.dependencies(first, ("X", "W"))
    other = dataclasses.replace(ctx, infos=second)
    assert other.dependencies(("X", "W"))["out"] == {"W"}
    assert other.dependencies(("X",)) == notebook.dependencies(second, ("X",))


def test_changed_givens_is_computed_once_and_handed_out_as_a_copy():
    given = variants.GIVEN_PREFIX + "X"
    infos = _infos("X = load()")
    ctx = Context(
        infos=infos,
        blanks=notebook.blank_report(infos),
        cells=[],
        student={given: checks.Captured(value=V(np.ones(3)))},
        reference={given: checks.Captured(value=V(np.zeros(3)))},
    )
    changed = ctx.changed_givens()
    assert changed == ["X"]
    changed.append("Y")
    assert ctx.changed_givens() == ["X"]
    same = dataclasses.replace(ctx, student={given: checks.Captured(value=V(np.zeros(3)))})
    assert same.changed_givens() == []


def test_names_of_checks_that_differ_only_in_their_target():
    base = Check(
        id="q/0",
        question_id="q",
        kind="expr",
        target="softmax(x) + len(y)",
        points=None,
        rtol=1e-5,
        atol=1e-8,
        strict_types=False,
    )
    assert base.names == {"softmax", "x", "y"}
    assert dataclasses.replace(base, target="f(z)").names == {"f", "z"}
    assert dataclasses.replace(base, kind="value", target="Q").names == {"Q"}


# --------------------------------------------------------------------------------------------
# matches == compare(...).ok; exact equality settles a comparison without the rest

nan, inf = float("nan"), float("inf")
PAIRS = [
    (np.array([1.0, 2.0]), np.array([1.0, 2.0])),
    (np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9])),
    (np.array([1.0, 2.0]), np.array([1.0, 2.1])),
    (np.array([1.0, nan]), np.array([1.0, nan])),
    (np.array([1.0, nan]), np.array([1.0, 2.0])),
    (np.array([inf, -inf]), np.array([inf, -inf])),
    (np.array([inf, 1.0]), np.array([-inf, 1.0])),
    (np.array([1.0, inf]), np.array([1.0, 2.0])),
    (np.array([-0.0]), np.array([0.0])),
    (np.array([1 + 2j]), np.array([1 + 2j])),
    (np.array([1 + 2j]), np.array([1 - 2j])),
    (np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)),
    (np.arange(4, dtype=np.int64), np.arange(4, dtype=np.int32)),
    (torch.tensor([0.5, 0.25]), np.array([0.5, 0.25])),
    (np.float32(0.1), 0.1),
    (3, 3.0),
    ([1.0, 2.0], np.array([1.0, 2.0])),
    (np.array([True, False]), np.array([True, False])),
    (np.array([True, False]), np.array([True, True])),
    ({"a": np.ones(2)}, {"a": np.ones(2)}),
    ({"a": np.ones(2)}, {"a": np.zeros(2)}),
    ("text", "text"),
    ("text", "other"),
    (None, None),
    (pd.DataFrame({"a": [1.0, 2.0]}), pd.DataFrame({"a": [1.0, 2.0]})),
    (pd.DataFrame({"a": [1.0, 2.0]}), pd.DataFrame({"a": [1.0, 3.0]})),
]


@pytest.mark.parametrize("actual, expected", PAIRS)
@pytest.mark.parametrize("rtol, atol, strict", [(0, 0, False), (1e-5, 1e-8, False), (1e-5, 1e-8, True)])
def test_matches_is_the_verdict_of_compare(actual, expected, rtol, atol, strict):
    a, e = V(actual), V(expected)
    full = compare("`x`", a, e, rtol=rtol, atol=atol, strict_types=strict)
    assert matches(a, e, rtol=rtol, atol=atol, strict_types=strict) == full.ok
    assert bool(full.messages) != full.ok


def test_exact_matches_keep_their_counts_and_the_tolerance_rule():
    x = V(np.arange(12.0).reshape(3, 4))
    assert compare("`x`", x, x, rtol=0, atol=0) == compare(
        "`x`", x, V(np.arange(12.0).reshape(3, 4) + 0.0), rtol=0, atol=0
    )
    assert compare("`x`", x, x, rtol=0, atol=0).total == 12
    # A negative tolerance (only possible when calling compare directly) still fails equal values.
    assert not compare("`x`", x, x, rtol=0, atol=-1).ok


# --------------------------------------------------------------------------------------------
# Variants: which answers a variant changes, worked out once for the reference, gives the same
# verdicts as working it out per check


@pytest.fixture
def graded_contexts(grader, numpy_assignment, submit, monkeypatch):
    """The Context of each real grading below, as grading.py hands it to grade_assignment."""
    from grader.judge import grading

    seen = []

    def spy(assignment, ctx):
        seen.append(ctx)
        return checks.grade_assignment(assignment, ctx)

    monkeypatch.setattr(grading, "grade_assignment", spy)
    ref = grader.references.get(numpy_assignment).captures
    typed = {**NUMPY_CORRECT, "Q": f"np.array({np.asarray(ref['qkv/0'].value.data).tolist()!r})"}
    submit(NUMPY_CORRECT)
    submit(typed)
    submit({**NUMPY_CORRECT, "scaled_scores": "scores / np.sqrt(2)"})
    submit({**NUMPY_CORRECT, "output": "attention_weights @ V.reshape(3, 2)"})
    for path in sorted((ROOT / "examples" / "attention_numpy").glob("*.ipynb")):
        grader.grade(numpy_assignment, path)
    return seen


def test_changed_answers_once_per_reference_gives_the_same_verdicts(numpy_assignment, graded_contexts):
    with_variants = [ctx for ctx in graded_contexts if ctx.variants]
    assert len(with_variants) >= 6
    for ctx in with_variants:
        precomputed = dataclasses.replace(
            ctx,
            variants=tuple(
                dataclasses.replace(run, changed=checks.changed_answers(ctx.reference, run.reference))
                for run in ctx.variants
            ),
        )
        assert all(run.changed for run in precomputed.variants)
        assert checks.grade_assignment(numpy_assignment, precomputed) == checks.grade_assignment(numpy_assignment, ctx)
