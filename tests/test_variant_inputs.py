"""Variants cannot silently test less than the config declares: every given input is varied unless
its rule says ``keep``, a given input the solution never defines and a stale skeleton are
``grader validate`` errors with their fix, and attention_french tells queries, keys and values apart."""

from __future__ import annotations

import dataclasses
import shutil

import nbformat
from conftest import NUMPY_CORRECT, question

from grader.authoring.validate import validate
from grader.judge import variants, wording
from grader.judge.grading import Grader
from grader.testing import fill, write

# W_v typed into V's code: V follows X, but not W_v.
W_V_TYPED = {**NUMPY_CORRECT, "V": "X @ np.array([[1.0, 0.5], [0.5, 1.0]]).T"}


def with_rules(assignment, rules: tuple[tuple[str, str | None], ...], given=None):
    return dataclasses.replace(
        assignment,
        given=given or assignment.given,
        variants=dataclasses.replace(assignment.variants, inputs=rules),
        config_digest=f"{assignment.config_digest}-{rules!r}-{given!r}",
    )


def grade(grader, assignment, answers, tmp_path, name="sub"):
    return grader.grade(assignment, write(fill(assignment.skeleton, answers), tmp_path / f"{name}.ipynb"))


def test_a_given_input_without_a_rule_is_varied_when_other_inputs_have_rules(grader, numpy_assignment, tmp_path):
    only_x = with_rules(numpy_assignment, (("X", "rng.uniform(-1, 1, size=(3 + variant, 2))"),))
    assert variants.varied_names(only_x) == ("X", "W_q", "W_k", "W_v")
    card = grade(grader, only_x, W_V_TYPED, tmp_path)
    qkv = question(card, "qkv")
    assert qkv.status == "partial"
    assert [c.status for c in qkv.checks] == ["passed", "passed", "failed"]
    assert any("`V` is correct for the notebook's data but not when" in line for line in qkv.lines), qkv.lines


def test_keep_leaves_a_given_input_as_the_notebook_defines_it(grader, numpy_assignment, tmp_path):
    kept = with_rules(numpy_assignment, (("X", "rng.uniform(-1, 1, size=(3 + variant, 2))"), ("W_v", "keep")))
    assert variants.varied_names(kept) == ("X", "W_q", "W_k")
    card = grade(grader, kept, W_V_TYPED, tmp_path)
    assert card.score == card.max_score, [q.lines for q in card.questions if q.status != "passed"]


def test_validate_reports_a_given_input_the_solution_never_defines(course, numpy_assignment, tmp_path):
    own = dataclasses.replace(course, cache_dir=tmp_path)
    bad = with_rules(numpy_assignment, (), given=("X", "W_q", "W_k", "W_v", "W"))
    assert validate(own, bad, Grader(own)) == [
        "the given input `W` of attention_numpy is never defined by its solution (attention_numpy.ipynb): no "
        "statement binds it, so it cannot be varied. Fix the name in `given:` in config.yaml to the solution's "
        "variable, or remove it from `given:`."
    ]


def test_validate_says_run_grader_assign_when_the_skeleton_is_stale(course, numpy_assignment, grader, tmp_path):
    nb = nbformat.read(str(numpy_assignment.skeleton), as_version=4)
    for cell in nb.cells:  # the skeleton made before `Q = X @ W_q.T` was marked `# SOLUTION`
        cell.source = cell.source.replace("Q = ?", "Q = X @ W_q.T")
    old = write(nb, tmp_path / "old" / "attention_numpy.ipynb")
    stale = dataclasses.replace(numpy_assignment, skeleton=old)
    assert validate(course, stale, grader) == [
        f"the skeleton {old} is out of date with the solution (it is not what `grader assign` makes from it now): "
        "run `grader assign attention_numpy`"
    ]
    shutil.copyfile(numpy_assignment.skeleton, old)  # a fresh skeleton validates
    assert validate(course, stale, grader) == []


def test_attention_french_keys_used_as_queries_lose_their_questions(submit):
    # In the notebook W_Q == W_K, so K[0] equals Q[0] on its data: only the variants tell them apart.
    from test_assignments import FRENCH

    card = submit(
        {
            **FRENCH,
            "attention_scores": "torch.matmul(K[0], K.T)",
            "all_attention_weights": "torch.softmax(torch.matmul(K, K.T) / d_k ** 0.5, dim=-1)",
        },
        assignment="attention_french",
    )
    status = {q.id: q.status for q in card.questions}
    assert status["scores"] == "failed" and status["all_words"] in ("failed", "partial")
    # the rest of the notebook is right: its own questions keep their points
    assert {status[q] for q in ("fix_projections", "self_attention_fn", "multihead")} == {"passed"}


def test_a_students_own_variable_named_like_a_later_given_input_is_left_alone(submit):
    # `bank = X[11]` in part 1 is the student's own; the given `bank` is the next part's data. The
    # variant of that `bank` goes in only where the notebook defines it (part 2), and questions
    # answered `before: bank` are answered before part 2, not before the student's own `bank`.
    from test_assignments import SIMILARITY

    card = submit(
        {
            **SIMILARITY,
            "sim_swam_bank": "torch.dot(X[1], X[11])",
            "sim_river_bank": "torch.dot(X[5], X[11]); bank = X[11]",
        },
        assignment="attention_similarity",
    )
    assert {q.id: q.lines for q in card.questions if q.status != "passed"} == {}
    assert not any("is not the data the notebook gives" in line for q in card.questions for line in q.lines)


def test_a_check_expression_of_the_grader_accepts_equivalent_values_and_never_blames_the_student(submit):
    from test_assignments import FRENCH

    # heads as a list of NumPy arrays: `torch.stack(heads)` (the grader's own expression) is tried
    # on the same values as tensors, and the notebook keeps full marks.
    numpy_heads = {
        **FRENCH,
        "heads": "[self_attention(embeddings, W_q, W_k, W_v).numpy() for W_q, W_k, W_v in head_params]",
        "multihead_output": "torch.cat([torch.from_numpy(h) for h in heads], dim=-1) @ W_O",
    }
    card = submit(numpy_heads, assignment="attention_french")
    assert {q.id: q.lines for q in card.questions if q.status != "passed"} == {}

    # heads in a form no conversion fits: the student is not told that their code raised.
    odd = {
        **FRENCH,
        "heads": "{i: h for i, h in enumerate([self_attention(embeddings, W_q, W_k, W_v) "
        "for W_q, W_k, W_v in head_params])}",
        "multihead_output": "torch.cat(list(heads.values()), dim=-1) @ W_O",
    }
    card = submit(odd, assignment="attention_french")
    q = question(card, "multihead")
    assert q.status == "partial"
    text = " ".join(q.lines)
    assert "the grader's own expression `torch.stack(heads)` cannot be applied" in text
    assert "your code itself did not raise" in text and "calling your code raised" not in text


def test_an_error_inside_the_students_function_is_still_theirs(submit):
    from test_assignments import FRENCH

    card = submit({**FRENCH, "?1": "raise ValueError('not done yet')"}, assignment="attention_french")
    q = question(card, "self_attention_fn")
    assert q.status == "error"
    assert any("raised ValueError: not done yet" in line for line in q.lines), q.lines


def test_no_typed_in_question_for_an_answer_computed_from_a_wrong_one(submit):
    # S_learned is transposed (keys @ queries.T: a real mistake, its own question loses it). The
    # top-2 words, computed from it, match on the notebook's data by chance but not on the variants:
    # nothing was typed in, and the message names the wrong input instead of asking.
    from test_assignments import SIMILARITY

    card = submit(
        {**SIMILARITY, "S_learned": "torch.softmax(torch.matmul(K, Q.T) / d_k ** 0.5, dim=-1)"},
        assignment="attention_similarity",
    )
    assert question(card, "q3_learned").status == "failed"
    q5 = question(card, "q5_top2")
    assert "typed in" not in " ".join(q5.lines)
    words = next(c for c in q5.checks if c.target == "top2_words")
    # With error carried forward (issue 13), the top-2 words are right given the student's own
    # S_learned on the notebook's data and on every variant: they keep their points, and the
    # feedback names the wrong input's question instead of asking about typed-in values.
    assert words.status == "passed" and words.carried_from == ("q3_learned/0",)
    assert wording.check_lines(words) == [
        "`top2_words` is correct given your `S_learned`; the mistake is upstream, in *Q3: scaled similarities with "
        "learning*: this step keeps its points (error carried forward)."
    ]
