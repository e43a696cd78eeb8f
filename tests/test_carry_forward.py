"""Error carried forward, through the real grader on every assignment (issue 13).

A step whose value is right given the student's own wrong upstream values keeps its points under
the default policy, is marked as carried forward, and its feedback names the question where the
mistake is; a second, downstream mistake on top of it is still caught; a value typed in still
loses its question on the variants; and no hint fires for a value that carry-forward explains.
The root causes of errors are listed once: a NameError that follows from an earlier failed cell
is folded into that cell's error.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import NUMPY_CORRECT, ROOT, question
from test_assignments import CORRECT, NO_LOWER_CASE, Printout

from grader.course import config
from grader.errors import ConfigError
from grader.judge import wording
from grader.judge.grading import Grader
from grader.judge.jobs import run_notebook
from grader.outputs import gradescope
from grader.run.job import RunResult
from grader.testing import fill, write
from grader.vocab import RunStatus

EXAMPLES = ROOT / "examples" / "attention_numpy"

# name -> (one upstream mistake, the question it is in, the later questions right given it)
UPSTREAM = {
    "attention_numpy": ({"scaled_scores": "scores"}, "scaled", {"weights", "output"}),
    "attention_similarity": (
        {"S_learned": "torch.softmax(Q @ K.T, dim=-1)"},
        "q3_learned",
        {"q4_bank_interest_learned", "transformed_learned", "q5_top2"},
    ),
    "tokens_to_multihead": (
        {"?1": NO_LOWER_CASE},
        "tokenizer",
        {"token_ids", "embeddings", "multihead", "attention_table", "reading", "per_head"},
    ),
    "attention_french": ({"attention_weights": "torch.softmax(attention_scores, dim=-1)"}, "weights", {"output"}),
    "attention_from_scratch": (
        {"causal_weights": "torch.softmax(scores / d_k**0.5, dim=-1).masked_fill(mask, 0.0)"},
        "causal_weights",
        {"dropout"},
    ),
}

# name -> (a second mistake, later than the first, and the question it is in)
DOWNSTREAM = {
    "attention_numpy": ({"output": "attention_weights.T @ V"}, "output"),
    "attention_similarity": ({"sim_bank_interest_learned": "S_learned[3, 1]"}, "q4_bank_interest_learned"),
    "tokens_to_multihead": ({"bank_most_attended": "attention_df.loc['bank'].idxmin()"}, "reading"),
    "attention_french": ({"output": "attention_scores.unsqueeze(0) @ V"}, "output"),
    "attention_from_scratch": ({"dropped_weights": "causal_weights"}, "dropout"),
}

# name -> (a later value, the check it is graded by, the wrong upstream value it is computed from)
TYPED = {
    "attention_numpy": ("attention_weights", "weights/0", "scaled_scores"),
    "attention_similarity": ("sim_bank_interest_learned", "q4_bank_interest_learned/0", "S_learned[0, 0]"),
    "tokens_to_multihead": ("_, head_weights", "per_head/0", "embeddings.sum()"),
    "attention_french": ("output", "output/0", "attention_weights.sum()"),
    "attention_from_scratch": ("dropped_weights", "dropout/0", "causal_weights"),
}


def carried_questions(card) -> set[str]:
    return {q.id for q in card.questions if q.carried_forward}


@pytest.mark.parametrize("name", list(UPSTREAM))
def test_one_upstream_mistake_costs_only_its_own_question(course, grader, tmp_path, name):
    change, own, later = UPSTREAM[name]
    a = course.assignment(name)
    # On the course's variants: which later answers are marked carried forward rather than plainly
    # right depends on the variants for a discrete answer. tokens_to_multihead's `reading` is
    # carried only where a variant makes bank attend most to "the", which the cased tokenizer
    # spells "The"; a submission's own draw may not, and then it is plainly right (and still passes).
    path = write(fill(a.skeleton, {**CORRECT[name], **change}), tmp_path / f"{name}.ipynb")
    card = grader.grade(a, path, course_variants=True)
    assert {q.id for q in card.questions if q.score < q.max_score} == {own}
    assert card.score == a.max_score - question(card, own).max_score + question(card, own).score
    assert carried_questions(card) == later
    title = a.question(own).title
    for qid in later:
        q = question(card, qid)
        assert q.status == "passed" and q.carried_forward == (own,)
        # Named once, where it was made: the feedback points there, and no hint fires for the knock-on value.
        assert any("the mistake is upstream, in *" + title + "*" in line for line in q.lines), q.lines
        assert not any(line.startswith("Likely mistake:") for line in q.lines), q.lines
        assert all(not c.hint for c in q.checks)
        assert q.variants == 2 or name == "tokens_to_multihead"  # re-checked on the variants as well


@pytest.mark.parametrize("name", list(DOWNSTREAM))
def test_a_downstream_mistake_on_top_of_it_is_still_caught(course, submit, name):
    change, own, _ = UPSTREAM[name]
    more, second = DOWNSTREAM[name]
    card = submit({**CORRECT[name], **change, **more}, assignment=name)
    lost = {q.id for q in card.questions if q.score < q.max_score}
    assert {own, second} <= lost
    assert not question(card, second).carried_forward
    assert question(card, second).status in ("failed", "partial")


@pytest.mark.parametrize("name", list(TYPED))
def test_a_value_typed_in_after_an_upstream_mistake_still_loses_on_the_variants(course, grader, tmp_path, submit, name):
    change, own, _ = UPSTREAM[name]
    blank, check_id, upstream = TYPED[name]
    a = course.assignment(name)
    # What the student's own code prints for that value after the upstream mistake, typed in as a literal.
    path = write(fill(a.skeleton, {**CORRECT[name], **change}), tmp_path / "printed.ipynb")
    run, _ = run_notebook(a, path, grader.executor)
    typed = Printout(run.captures, "np.array" if name == "attention_numpy" else "torch.tensor")(check_id)
    qid = check_id.split("/")[0]
    # Typed in as it is: not computed from anything, so not right given anything either; and no hint,
    # since the value is the one the student's upstream values give.
    # Typed in behind a show of computing (`+ 0 * scaled_scores`), so right given the upstream values on
    # the notebook's data: the variants catch it.
    for literal in (typed, f"{typed} + 0 * {upstream}"):
        card = submit(
            {**CORRECT[name], **change, blank: f"None, {literal}" if blank.startswith("_,") else literal},
            assignment=name,
        )
        q = question(card, qid)
        assert q.score < q.max_score and not q.carried_forward, q.lines
        assert question(card, own).score < question(card, own).max_score
        check = next(c for c in q.checks if c.id == check_id)
        assert not check.hint, wording.check_lines(check)
        if literal != typed:  # "correct for the notebook's data but not when `X` ... change": the variants' verdict
            assert any("is correct for the notebook's data" in m for m in wording.check_lines(check)), check


def _with_policy(course, assignment: str, share: float) -> config.Course:
    a = course.assignment(assignment)
    questions = tuple(
        dataclasses.replace(q, checks=tuple(dataclasses.replace(c, carry_forward=share) for c in q.checks))
        for q in a.questions
    )
    changed = dataclasses.replace(a, questions=questions)
    return dataclasses.replace(course, assignments={**course.assignments, assignment: changed})


def test_carol_loses_only_scaled_and_the_sqrt_hint_is_where_the_mistake_is(grader, numpy_assignment):
    card = grader.grade(numpy_assignment, EXAMPLES / "carol_no_sqrt.ipynb")
    assert (card.score, card.max_score) == (9, 11)
    scaled, weights = question(card, "scaled"), question(card, "weights")
    assert (scaled.score, scaled.status) == (0, "failed")
    assert "Likely mistake: The scores are not divided by sqrt(d_k)." in scaled.lines
    assert weights.carried_forward == ("scaled",) and weights.score == 2
    assert weights.lines == [
        "`attention_weights` is correct given your `scaled_scores`; the mistake is upstream, "
        "in *Scaled scores*: this step keeps its points (error carried forward)."
    ]


@pytest.mark.parametrize("share, score, status", [(0.0, 5, "failed"), (0.5, 7, "partial")])
def test_the_carry_forward_policy_sets_the_credit_and_never_brings_the_hint_back(course, grader, share, score, status):
    changed = _with_policy(course, "attention_numpy", share)
    card = Grader(changed, executor=grader.executor).grade(
        changed.assignment("attention_numpy"), EXAMPLES / "carol_no_sqrt.ipynb"
    )
    assert card.score == score  # with `none`, 5/11 as before carry-forward; with 0.5, half of weights and output
    for qid in ("weights", "output"):
        q = question(card, qid)
        assert q.status == status and q.carried_forward == ("scaled",)
        assert not any(line.startswith("Likely mistake:") for line in q.lines), q.lines
    assert "Likely mistake: The scores are not divided by sqrt(d_k)." in question(card, "scaled").lines


class _FirstTrustedRunTimesOut:
    """The grader's executor, except that the first run of the solution's code in a reused session
    ends as a run cut by its time limit would (a loaded machine, a kernel slow to start)."""

    def __init__(self, executor):
        self.executor, self.failed = executor, 0

    def __getattr__(self, name):
        return getattr(self.executor, name)

    def session(self, reuse=None):
        inner, outer = self.executor.session(reuse=reuse), self

        class Session:
            def run(self, job):
                if job.trusted and reuse is not None and not outer.failed:
                    outer.failed += 1
                    return RunResult(status=RunStatus.TIMEOUT, reason="the notebook ran past its limit")
                return inner.run(job)

            def close(self):
                inner.close()

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                inner.close()

        return Session()


def test_a_carry_forward_run_cut_short_is_run_again_before_credit_is_decided(grader, numpy_assignment):
    flaky = _FirstTrustedRunTimesOut(grader.executor)
    card = Grader(grader.course, executor=flaky).grade(numpy_assignment, EXAMPLES / "carol_no_sqrt.ipynb")
    assert flaky.failed == 1  # the run was cut once; its second run decides
    assert (card.score, card.max_score) == (9, 11)
    assert question(card, "weights").carried_forward == ("scaled",)


def test_carry_forward_is_read_at_every_level_and_a_bad_value_is_named(tmp_path):
    text = (ROOT / "config.yaml").read_text()
    text = text.replace("    variants: 2\n", "    variants: 2\n    carry_forward: none\n", 1)
    text = text.replace("  attention_numpy:\n", "  attention_numpy:\n    carry_forward: 0.5\n", 1)
    text = text.replace(
        "      - id: output\n        title: Self-attention output\n",
        "      - id: output\n        title: Self-attention output\n        carry_forward: full\n",
        1,
    )
    for folder in ("solutions", "assignments"):  # the course's own files, next to the changed config
        (tmp_path / folder).symlink_to(ROOT / folder)
    path = tmp_path / "config.yaml"
    path.write_text(text)
    course = config.load(path)
    numpy_checks = {c.question_id: c.carry_forward for c in course.assignment("attention_numpy").checks}
    assert numpy_checks["weights"] == 0.5 and numpy_checks["output"] == 1.0
    assert {c.carry_forward for c in course.assignment("attention_french").checks} == {0.0}
    path.write_text(text.replace("    carry_forward: none\n", "    carry_forward: most\n"))
    with pytest.raises(ConfigError) as err:
        config.load(path)
    assert "course.defaults.carry_forward must be full, none or a share of the points from 0 to 1, got 'most'" in str(
        err.value
    )


def test_frank_gets_his_first_error_once_with_the_questions_it_blocked(grader, numpy_assignment):
    card = grader.grade(numpy_assignment, EXAMPLES / "frank_raises.ipynb")
    [error] = card.execution.to_dict()["errors"]  # one ValueError; the eight NameErrors after it follow from it
    assert error["cell"] == 12 and error["error"].startswith("ValueError")
    assert error["blocked_cells"] == [13, 15, 16, 18, 19, 21, 23, 24]  # every cell counted, as students see them
    assert error["blocked_questions"] == ["scores", "scaled", "weights", "output"]
    scores = question(card, "scores")
    assert scores.lines[0].startswith("`scores` has no value because cell 12 raised ValueError")
    assert scores.lines[-1] == (
        "The same error in cell 12 leaves *Scaled scores*, *Attention weights* and "
        "*Self-attention output* without a value too."
    )
    for qid in ("scaled", "weights", "output"):
        [line] = question(card, qid).lines
        assert "NameError" not in line and "cell 12 raised ValueError, reported under *Attention scores*" in line
    results = gradescope.results(card, numpy_assignment, grader.course.scorecard)
    text = json.dumps(results)
    assert "NameError" not in text
    assert results["output"].count("ValueError") == 1
    assert "cells 13, 15, 16, 18, 19, 21, 23, 24 then failed because of it" in results["output"]


def test_a_correct_notebook_needs_no_carry_forward_run(grader, numpy_assignment, submit, monkeypatch):
    calls = []
    original = Grader._carry_forward
    monkeypatch.setattr(Grader, "_carry_forward", lambda self, *a: calls.append(a) or original(self, *a))
    card = submit(NUMPY_CORRECT)
    assert card.score == card.max_score and not carried_questions(card)
    assert calls == []  # only a submission with a wrong step after a wrong step pays for the extra runs
    card = submit({**NUMPY_CORRECT, "attention_weights": "np.apply_along_axis(softmax, 0, scaled_scores)"})
    assert len(calls) == 1 and carried_questions(card) == {"output"}


def test_a_value_behind_a_wrong_answer_that_breaks_on_every_variant_is_not_carried_blindly(
    grader, numpy_assignment, tmp_path, submit
):
    # Q is wrong on the notebook's data and its code raises on any other data; scores is typed in
    # (the value the wrong Q gives) behind a show of using Q, so on the variants it fails only with a
    # NameError for Q. Nothing shows scores is computed: it does not keep its point.
    guard = "2 * (X @ W_q.T) if X.tolist() == [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]] else None.boom"
    answers = {**NUMPY_CORRECT, "Q": guard}
    path = write(fill(numpy_assignment.skeleton, answers), tmp_path / "printed.ipynb")
    run, _ = run_notebook(numpy_assignment, path, grader.executor)
    typed = Printout(run.captures, "np.array")("scores/0")
    card = submit({**answers, "scores": f"{typed} + 0 * Q.sum()"})
    assert question(card, "qkv").score < question(card, "qkv").max_score
    scores = question(card, "scores")
    assert scores.score == 0 and not scores.carried_forward, scores.lines
    assert any("could not be checked on other data" in line and "`Q`" in line for line in scores.lines), scores.lines
    # Computed from the same Q, scores is right given Q on the notebook's data, but no variant can
    # test it either: it waits for Q's code to be fixed, and says so.
    honest = submit(answers)
    assert question(honest, "scores").score == 0
    assert any("could not be checked on other data" in line for line in question(honest, "scores").lines)
