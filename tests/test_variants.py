"""Variants: typed-in answers and shape-bound code lose their points; honest rewrites keep them."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import NUMPY_CORRECT, question

from grader.capture import decode
from grader.judge import variants

TYPED_MESSAGE = "is correct for the notebook's data but not when `X`, `W_q`, `W_k` and `W_v` change"


def literal(value) -> str:
    """A value as a student would type it from the solution's printout (8 decimals)."""
    return f"np.array({np.round(np.asarray(value.data, dtype=float), 8).tolist()!r})"


def test_solution_passes_every_variant(grader, numpy_assignment):
    card = grader.grade(numpy_assignment, numpy_assignment.solution)
    assert card.score == card.max_score
    assert {q.id: q.variants for q in card.questions} == {
        "qkv": 2, "scores": 2, "scaled": 2, "softmax": 0, "weights": 2, "output": 2}


def test_skeleton_stays_unanswered(grader, numpy_assignment):
    card = grader.grade(numpy_assignment, numpy_assignment.skeleton)
    assert {q.status for q in card.questions} == {"unanswered"}


def test_typed_in_answers_lose_every_typed_question(grader, numpy_assignment, submit):
    ref = grader.references.get(numpy_assignment).captures
    typed = {
        "Q": literal(ref["qkv/0"].value), "K": literal(ref["qkv/1"].value), "V": literal(ref["qkv/2"].value),
        "scores": literal(ref["scores/0"].value), "scaled_scores": literal(ref["scaled/0"].value),
        "attention_weights": literal(ref["weights/0"].value), "output": literal(ref["output/0"].value),
        "?1": NUMPY_CORRECT["?1"],
    }
    card = submit(typed)
    for qid in ("qkv", "scores", "scaled", "weights", "output"):
        q = question(card, qid)
        assert q.status == "failed", (qid, q.feedback)
        assert any(TYPED_MESSAGE in line and "is a value typed in" in line for line in q.feedback), q.feedback
    assert question(card, "softmax").status == "passed"
    assert card.score == 1


def test_fixed_d_k_loses_scaled_scores_on_the_variant_that_changes_d_out(submit):
    card = submit({**NUMPY_CORRECT, "scaled_scores": "scores / np.sqrt(2)"})
    scaled = question(card, "scaled")
    assert scaled.status == "failed"
    # named: only the inputs scaled_scores is computed from in this notebook (not W_v)
    assert scaled.feedback[0] == ("`scaled_scores` is correct for the notebook's data but not when `X`, `W_q` and "
                                  "`W_k` change (its values do not follow): is a value typed in, or a size or "
                                  "constant fixed, rather than computed?")
    assert question(card, "scores").status == "passed"


@pytest.mark.parametrize("change", [
    {"Q": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_q, dtype=torch.float32).T",
     "?1": "return torch.nn.functional.softmax(torch.as_tensor(x), dim=-1).numpy()"},
    {"scores": "np.array([[sum(q[i] * k[i] for i in range(len(q))) for k in K] for q in Q])"},
    {"attention_weights": "np.exp(scaled_scores) / np.exp(scaled_scores).sum(axis=1, keepdims=True)"},
], ids=["torch-F.softmax", "loops", "vectorised-softmax"])
def test_equivalent_rewrites_pass_every_variant(submit, change):
    card = submit({**NUMPY_CORRECT, **change}, edit={1: "import numpy as np\nimport torch"})
    assert {q.id: q.status for q in card.questions if q.status != "passed"} == {}


def test_shape_bound_code_that_raises_only_under_a_variant(submit):
    card = submit({**NUMPY_CORRECT, "output": "attention_weights @ V.reshape(3, 2)"})
    q = question(card, "output")
    assert q.status == "failed"
    assert q.feedback[0].startswith("`output` is correct for the notebook's data, but the code fails when `X`, "
                                    "`W_q`, `W_k` and `W_v` change: cell 21 raised ValueError: cannot reshape")


def test_redefined_given_input_is_graded_on_what_it_computed(submit):
    card = submit(NUMPY_CORRECT, edit={2: "tokens = ['I', 'am', 'Batman']\nX = np.array([[1.0, 0.0], [0.0, 0.5], [0.0, 1.0]])"})
    # Q, K and V computed from the changed X lose their question, with the note; every later step is
    # right given them, so the one mistake is not charged again (error carried forward, issue 13).
    q = question(card, "qkv")
    assert q.status == "failed"
    assert q.feedback[-1] == ("Note: `X` in your notebook is not the data the notebook gives, so answers computed "
                              "from it cannot match; the grade is for what your notebook computed.")
    assert question(card, "output").carried_forward == ["qkv"]


def test_repeating_the_data_cell_still_gets_the_variant(submit):
    # A student who copies the given cell further down is not accused of typing values in.
    card = submit(NUMPY_CORRECT, append=[])
    again = submit(NUMPY_CORRECT, edit={4: "X = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])\nQ = X @ W_q.T\n"
                                           "K = X @ W_k.T\nV = X @ W_v.T"})
    assert card.score == again.score == card.max_score


def test_variant_values_are_hidden_from_students(grader, numpy_assignment):
    """No file given to students holds a variant's values (in any printed precision) or its seed."""
    ref = grader.references.get(numpy_assignment)
    student_files = [p for p in numpy_assignment.skeleton.parent.rglob("*") if p.is_file()]
    text = "\n".join(p.read_text(errors="ignore") for p in student_files)
    searched = 0
    for variant in ref.variants:
        for name, wire in variant.values.items():
            for x in decode(wire).data.ravel()[:4]:
                for digits in (8, 6, 4):
                    searched += 1
                    assert f"{x:.{digits}f}" not in text, (variant.number, name)
    assert searched == 2 * 4 * 4 * 3
    assert str(numpy_assignment.variants.seed) not in text


def test_validate_reports_a_variant_that_tests_nothing(course, tmp_path):
    import dataclasses

    from grader.authoring.validate import validate
    from grader.course.model import VariantSpec
    from grader.judge.grading import Grader

    a = course.assignment("attention_numpy")
    same = dataclasses.replace(a, given=("tokens",), variants=VariantSpec(count=1, seed=1, inputs=(("tokens", None),)),
                               config_digest=a.config_digest + "-same")
    problems = validate(dataclasses.replace(course, cache_dir=tmp_path), same, Grader(dataclasses.replace(course, cache_dir=tmp_path)))
    assert problems == ["variant 1 (tokens) changes no reference value of any question: it tests nothing"]


def test_injection_points_skip_rebindings_that_read_the_name():
    from grader import notebook

    cells = [notebook.Cell(1, "X = np.eye(2)"), notebook.Cell(2, "X = X.astype(np.float32)"),
             notebook.Cell(3, "X = np.eye(2)  # repeated data cell")]
    assert variants.injection_points(notebook.analyse(cells), ("X",)) == {"X": [0, 2]}


def test_a_variant_failure_costs_only_the_answer_whose_code_failed(submit):
    # Q only works for a 2x2 W_q: variant 2 (d_out 3) breaks its line, before K and V in the same
    # cell and before every later cell. Only Q loses its point; K, V and the rest are not blamed.
    card = submit({**NUMPY_CORRECT, "Q": "X @ W_q.reshape(2, 2).T"})
    qkv = question(card, "qkv")
    assert (qkv.status, qkv.score) == ("partial", 2)
    assert qkv.feedback == [
        "`Q` is correct for the notebook's data, but the code fails when `X` and `W_q` change: cell 8 raised "
        "ValueError: cannot reshape array of size 6 into shape (2,2) (cell 8, line 1: Q = X @ W_q.reshape(2, 2).T)."]
    assert {q.id for q in card.questions if q.status != "passed"} == {"qkv"}
    assert card.score == card.max_score - 1
