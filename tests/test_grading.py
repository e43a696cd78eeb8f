"""Grading the first assignment end to end, through real student processes."""

from __future__ import annotations

import nbformat
import pytest
from conftest import NUMPY_CORRECT, question

from grader.testing import write


def test_solution_scores_full_marks(grader, numpy_assignment):
    card = grader.grade(numpy_assignment, numpy_assignment.solution)
    assert card.status == "graded"
    assert card.score == card.max_score == 11
    assert all(q.status == "passed" for q in card.questions)


def test_skeleton_scores_zero_with_every_question_unanswered(grader, numpy_assignment):
    card = grader.grade(numpy_assignment, numpy_assignment.skeleton)
    assert card.score == 0
    assert [q.status for q in card.questions] == ["unanswered"] * len(numpy_assignment.questions)
    qkv = question(card, "qkv")
    assert qkv.lines[0] == "`Q` is not answered yet: fill in the blank `?` at cell 8, line 1: `Q = ?`."
    assert qkv.lines[1] == "`K` is not answered yet: fill in the blank `?` at cell 8, line 2: `K = ?`."


def test_one_blank_left_only_costs_the_questions_that_depend_on_it(submit):
    answers = {k: v for k, v in NUMPY_CORRECT.items() if k != "scaled_scores"}
    card = submit(answers)
    assert question(card, "qkv").status == "passed"
    assert question(card, "scores").status == "passed"
    assert question(card, "softmax").status == "passed"
    for qid in ("scaled", "weights", "output"):
        q = question(card, qid)
        assert q.status == "unanswered", qid
        assert "cell 15, line 2: `scaled_scores = ?`" in q.lines[0]
    assert card.score == 5  # qkv 3 + scores 1 + softmax 1


@pytest.mark.parametrize(
    "change, qid, hint",
    [
        ({"scaled_scores": "scores"}, "scaled", "The scores are not divided by sqrt(d_k)."),
        ({"scaled_scores": "scores / d_k"}, "scaled", "divided by d_k; the scaling is by the square root"),
        (
            {"attention_weights": "np.apply_along_axis(softmax, axis=0, arr=scaled_scores)"},
            "weights",
            "The softmax is taken over columns (axis 0) instead of rows",
        ),
        ({"Q": "X @ W_q"}, "qkv", "Q was computed as X @ W_q; in this notebook the weights are applied transposed"),
        ({"K": "X @ W_k"}, "qkv", "K was computed as X @ W_k"),
        ({"scores": "K @ Q.T"}, "scores", "The scores are K Qᵀ"),
        ({"output": "attention_weights @ X"}, "output", "The weights are applied to X"),
    ],
)
def test_each_hint_fires_on_the_mistake_it_names(submit, change, qid, hint):
    card = submit({**NUMPY_CORRECT, **change})
    q = question(card, qid)
    assert q.status in ("failed", "partial")
    assert any(line.startswith("Likely mistake:") and hint in line for line in q.lines), q.lines


@pytest.mark.parametrize(
    "change",
    [
        # torch instead of numpy, float32 throughout
        {
            "Q": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_q, dtype=torch.float32).T",
            "K": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_k, dtype=torch.float32).T",
            "V": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_v, dtype=torch.float32).T",
            "scaled_scores": "scores / d_k ** 0.5",
            "?1": "return torch.softmax(torch.as_tensor(x), dim=-1).numpy()",
            "attention_weights": "torch.softmax(scaled_scores, dim=-1)",
        },
        # float32 numpy
        {
            "Q": "(X @ W_q.T).astype(np.float32)",
            "K": "(X @ W_k.T).astype(np.float32)",
            "V": "(X @ W_v.T).astype(np.float32)",
        },
        # softmax without the max-subtraction trick is mathematically the same (within float range)
        {
            "?1": "return np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)",
            "attention_weights": "softmax(scaled_scores)",
        },
        # loops instead of matrix products
        {
            "scores": "np.array([[q @ k for k in K] for q in Q])",
            "output": "np.array([sum(w * v for w, v in zip(row, V)) for row in attention_weights])",
        },
    ],
    ids=["torch-float32", "numpy-float32", "softmax-without-max", "loops"],
)
def test_equivalent_rewrites_pass(submit, numpy_with_torch, change):
    card = submit(
        {**NUMPY_CORRECT, **change}, edit={1: "import numpy as np\nimport torch"}, assignment=numpy_with_torch
    )
    failing = {q.id: q.lines for q in card.questions if q.status != "passed"}
    assert not failing, failing


def test_torch_needs_importing_by_the_student(submit):
    card = submit({**NUMPY_CORRECT, "Q": "torch.tensor(X) @ torch.tensor(W_q).T"})
    q = question(card, "qkv")
    assert q.status == "error"
    assert "NameError: name 'torch' is not defined" in q.lines[0]


def test_a_raising_cell_is_recorded_and_later_questions_still_graded(submit):
    card = submit({**NUMPY_CORRECT, "scores": "Q @ K"})
    assert card.status == "graded"
    assert question(card, "qkv").status == "passed"
    assert question(card, "softmax").status == "passed"
    scores = question(card, "scores")
    assert scores.status == "error"
    assert scores.lines[0].startswith("`scores` has no value because cell 12 raised ValueError: matmul")
    assert "(cell 12, line 1: scores = Q @ K)" in scores.lines[0]
    scaled = question(card, "scaled")
    # The follow-on NameError in cell 15 is not repeated: the feedback points to the first error (issue 13).
    assert scaled.lines == [
        "`scaled_scores` has no value: it needs `scores`, which is missing because cell 12 "
        "raised ValueError, reported under *Attention scores*."
    ]
    errors = card.execution.to_dict()["errors"]
    assert len(errors) == 1 and errors[0]["cell"] == 12 and errors[0]["error"].startswith("ValueError")
    assert errors[0]["traceback"] == ["cell 12, line 1: scores = Q @ K"]


def test_warnings_on_stderr_cost_nothing(submit):
    card = submit(
        NUMPY_CORRECT, append=["import warnings, sys\nwarnings.warn('careful')\nprint('noise', file=sys.stderr)"]
    )
    assert card.score == card.max_score
    assert card.execution.to_dict()["errors"] == []


def test_monkeypatched_allclose_and_fake_scores_earn_nothing(submit, numpy_with_torch):
    cheat = {
        **NUMPY_CORRECT,
        "output": "np.zeros((3, 2))",
    }
    card = submit(
        cheat,
        append=[
            "import numpy, torch, builtins\n"
            "numpy.allclose = lambda *a, **k: True\nnumpy.testing.assert_allclose = lambda *a, **k: None\n"
            "torch.allclose = lambda *a, **k: True\nnumpy.array_equal = lambda *a, **k: True\n"
            "builtins.abs = lambda x: 0\n"
            "print('score: 11/11')\nprint('status: passed')",
        ],
        assignment=numpy_with_torch,
    )
    assert question(card, "output").status == "failed"
    assert card.score == card.max_score - 2


def test_always_equal_object_earns_nothing(submit):
    card = submit(
        {**NUMPY_CORRECT, "output": "AlwaysEqual()"},
        append=[],
        edit={
            1: "import numpy as np\nclass AlwaysEqual:\n    def __eq__(self, other): return True\n"
            "    def __ne__(self, other): return False\n    def __array__(self, *a, **k): raise RuntimeError('no')",
        },
    )
    q = question(card, "output")
    assert q.status == "failed"
    assert q.lines[0] == (
        "`output` cannot be graded: output is a __main__.AlwaysEqual, which cannot be compared as data."
    )


def test_ndarray_subclass_with_lying_eq_is_judged_on_its_data(submit):
    card = submit(
        {**NUMPY_CORRECT, "output": "Liar(np.zeros((3, 2)))"},
        edit={
            1: "import numpy as np\nclass Liar(np.ndarray):\n    def __new__(cls, a): return np.asarray(a).view(cls)\n"
            "    def __eq__(self, o): return np.ones(self.shape, bool)\n"
            "    def __array__(self, *a, **k): return np.asarray(REFERENCE)\n",
        },
    )
    assert question(card, "output").status == "failed"


def test_renamed_variable_is_reported_as_missing(submit):
    nb_answers = {**NUMPY_CORRECT, "output": "attention_weights @ V\nresult = output\ndel output"}
    card = submit(nb_answers)
    q = question(card, "output")
    assert q.status == "failed"
    assert q.lines == ["`output` is not defined when the notebook finishes."]


def test_expected_values_are_revealed_only_as_configured(course):
    import dataclasses
    from datetime import UTC, datetime

    from grader.judge.grading import Grader

    def reveal(show, due):
        settings = dataclasses.replace(course.scorecard, show_expected=show, due=due)
        return Grader(
            dataclasses.replace(course, scorecard=settings), executor=object(), now=datetime(2026, 11, 22, tzinfo=UTC)
        ).reveal()

    assert reveal("never", "2020-01-01") is False
    assert reveal("always", None) is True
    assert reveal("after_due", "2026-11-01") is True
    assert reveal("after_due", "2026-12-01T23:59") is False


def test_a_function_the_question_calls_and_the_notebook_never_defines_is_named(tmp_path, grader, numpy_assignment):
    # Written freely, in one cell: the weights come from torch.softmax, and no `softmax` of the
    # student's own exists. The question that calls `softmax(...)` says so, and sends no one to the
    # instructor: the student's values are right and the check itself is fine.
    solution = nbformat.read(str(numpy_assignment.solution), as_version=4)
    given = [c.source for c in solution.cells if c.cell_type == "code" and c.source.startswith(("tokens", "W_q"))]
    work = (
        "import numpy as np\nimport torch\n" + "\n".join(given) + "\n"
        "Q, K, V = X @ W_q.T, X @ W_k.T, X @ W_v.T\n"
        "scores = Q @ K.T\n"
        "d_k = Q.shape[1]\n"
        "scaled_scores = scores / np.sqrt(d_k)\n"
        "attention_weights = torch.softmax(torch.tensor(scaled_scores), dim=1).numpy()\n"
        "output = attention_weights @ V\n"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(work)])
    card = grader.grade(numpy_assignment, write(nb, tmp_path / "torch_softmax.ipynb"))
    softmax = question(card, "softmax")
    assert softmax.status == "failed" and softmax.score == 0
    assert softmax.lines == [
        "`softmax` is never defined in your notebook, and this question calls it: define a "
        "function with that exact name (was it renamed or deleted?)."
    ]
    assert all(question(card, q).status == "passed" for q in ("qkv", "scores", "scaled", "weights", "output"))
    assert not any("instructor" in line for q in card.questions for line in q.lines)


def test_a_function_whose_helper_was_never_computed_points_at_the_helpers_cell(tmp_path, grader, numpy_assignment):
    # The student's softmax calls a helper whose cell raised before defining it: the question that
    # calls softmax(...) names that cell's error, not "softmax is not defined".
    solution = nbformat.read(str(numpy_assignment.solution), as_version=4)
    given = [c.source for c in solution.cells if c.cell_type == "code" and c.source.startswith(("tokens", "W_q"))]
    cells = [
        "import numpy as np\n" + "\n".join(given),
        "shift = np.max(X, axis=-1)[5]\ndef stable_exp(x):\n    return np.exp(x - np.max(x))",
        "def softmax(x):\n    e_x = stable_exp(x)\n    return e_x / np.sum(e_x, axis=-1, keepdims=True)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    card = grader.grade(numpy_assignment, write(nb, tmp_path / "helper_failed.ipynb"))
    softmax = question(card, "softmax")
    assert softmax.status == "error" and softmax.score == 0
    assert softmax.lines[0] == (
        "`softmax(np.array([2.0, -1.0, 0.5, 3.0]))` has no value because cell 2 raised "
        "IndexError: index 5 is out of bounds for axis 0 with size 3 "
        "(cell 2, line 1: shift = np.max(X, axis=-1)[5])."
    )
