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
        "qkv": 2,
        "scores": 2,
        "scaled": 2,
        "softmax": 0,
        "weights": 2,
        "output": 2,
    }


def test_skeleton_stays_unanswered(grader, numpy_assignment):
    card = grader.grade(numpy_assignment, numpy_assignment.skeleton)
    assert {q.status for q in card.questions} == {"unanswered"}


def test_typed_in_answers_lose_every_typed_question(grader, numpy_assignment, submit):
    ref = grader.references.get(numpy_assignment).captures
    typed = {
        "Q": literal(ref["qkv/0"].value),
        "K": literal(ref["qkv/1"].value),
        "V": literal(ref["qkv/2"].value),
        "scores": literal(ref["scores/0"].value),
        "scaled_scores": literal(ref["scaled/0"].value),
        "attention_weights": literal(ref["weights/0"].value),
        "output": literal(ref["output/0"].value),
        "?1": NUMPY_CORRECT["?1"],
    }
    card = submit(typed)
    for qid in ("qkv", "scores", "scaled", "weights", "output"):
        q = question(card, qid)
        assert q.status == "failed", (qid, q.lines)
        assert any(TYPED_MESSAGE in line and "is a value typed in" in line for line in q.lines), q.lines
    assert question(card, "softmax").status == "passed"
    assert card.score == 1


def test_fixed_d_k_loses_scaled_scores_on_the_variant_that_changes_d_out(submit):
    card = submit({**NUMPY_CORRECT, "scaled_scores": "scores / np.sqrt(2)"})
    scaled = question(card, "scaled")
    assert scaled.status == "failed"
    # named: only the inputs scaled_scores is computed from in this notebook (not W_v)
    assert scaled.lines[0] == (
        "`scaled_scores` is correct for the notebook's data but not when `X`, `W_q` and "
        "`W_k` change (its values do not follow): is a value typed in, or a size or "
        "constant fixed, rather than computed?"
    )
    assert question(card, "scores").status == "passed"


@pytest.mark.parametrize(
    "change",
    [
        {
            "Q": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_q, dtype=torch.float32).T",
            "?1": "return torch.nn.functional.softmax(torch.as_tensor(x), dim=-1).numpy()",
        },
        {"scores": "np.array([[sum(q[i] * k[i] for i in range(len(q))) for k in K] for q in Q])"},
        {"attention_weights": "np.exp(scaled_scores) / np.exp(scaled_scores).sum(axis=1, keepdims=True)"},
    ],
    ids=["torch-F.softmax", "loops", "vectorised-softmax"],
)
def test_equivalent_rewrites_pass_every_variant(submit, numpy_with_torch, change):
    card = submit(
        {**NUMPY_CORRECT, **change}, edit={1: "import numpy as np\nimport torch"}, assignment=numpy_with_torch
    )
    assert {q.id: q.status for q in card.questions if q.status != "passed"} == {}


def test_shape_bound_code_that_raises_only_under_a_variant(submit):
    card = submit({**NUMPY_CORRECT, "output": "attention_weights @ V.reshape(3, 2)"})
    q = question(card, "output")
    assert q.status == "failed"
    # The error is named by kind and place, never by its message: "cannot reshape array of size 8"
    # would tell the student the variant's sizes.
    assert q.lines == [
        "`output` is correct for the notebook's data, but the code fails when `X`, `W_q`, `W_k` "
        "and `W_v` change: cell 21 raised ValueError (cell 21, line 1: output = attention_weights "
        "@ V.reshape(3, 2))."
    ]


def test_redefined_given_input_is_graded_on_what_it_computed(submit):
    card = submit(
        NUMPY_CORRECT, edit={2: "tokens = ['I', 'am', 'Batman']\nX = np.array([[1.0, 0.0], [0.0, 0.5], [0.0, 1.0]])"}
    )
    # Q, K and V computed from the changed X lose their question, with the note; every later step is
    # right given them, so the one mistake is not charged again (error carried forward, issue 13).
    q = question(card, "qkv")
    assert q.status == "failed"
    assert q.lines[-1] == (
        "Note: `X` in your notebook is not the data the notebook gives, so answers computed "
        "from it cannot match; the grade is for what your notebook computed."
    )
    assert question(card, "output").carried_forward == ("qkv",)


def test_repeating_the_data_cell_still_gets_the_variant(submit):
    # A student who copies the given cell further down is not accused of typing values in.
    card = submit(NUMPY_CORRECT, append=[])
    again = submit(
        NUMPY_CORRECT,
        edit={4: "X = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])\nQ = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T"},
    )
    assert card.score == again.score == card.max_score


def test_the_data_under_a_name_of_ones_own_still_gets_the_variant(submit):
    # The given data built under the student's own name (the solution's very expression), every
    # answer computed from it, and the name the exercise asks for assigned only at the end: the
    # variants reach the answers through the student's name, so nothing looks typed in.
    own = {k: v.replace("X @", "data @") for k, v in NUMPY_CORRECT.items()}
    given = "tokens = ['I', 'am', 'Batman']\ndata = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])"
    card = submit(own, edit={2: given}, append=["X = data"])
    assert card.score == card.max_score, [q.lines for q in card.questions if q.score < q.max_score]
    # Typed in on top of it, Q still does not follow the data.
    typed = submit({**own, "Q": "np.array([[1.0, 3.0], [0.0, 0.0], [2.0, 4.0]])"}, edit={2: given}, append=["X = data"])
    assert question(typed, "qkv").score < question(typed, "qkv").max_score
    assert any("typed in" in line for line in question(typed, "qkv").lines), question(typed, "qkv").lines


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
    same = dataclasses.replace(
        a,
        given=("tokens",),
        variants=VariantSpec(count=1, seed=1, inputs=(("tokens", None),)),
        config_digest=a.config_digest + "-same",
    )
    problems = validate(
        dataclasses.replace(course, cache_dir=tmp_path), same, Grader(dataclasses.replace(course, cache_dir=tmp_path))
    )
    assert problems == ["variant 1 (tokens) changes no reference value of any question: it tests nothing"]


def test_injection_points_skip_rebindings_that_read_the_name():
    from grader import notebook

    cells = [
        notebook.Cell(1, "X = np.eye(2)"),
        notebook.Cell(2, "X = X.astype(np.float32)"),
        notebook.Cell(3, "X = np.eye(2)  # repeated data cell"),
    ]
    assert variants.injection_points(notebook.analyse(cells), ("X",)) == {"X": [0, 2]}


def test_a_variant_failure_excuses_no_answer_whose_own_value_was_not_computed(submit):
    # Q only works for a 2x2 W_q: variant 2 (d_out 3) breaks its line, before K and V in the same
    # cell. K and V have no value on that variant, and Q, the answer the failure belongs to, does
    # not pass its own variants, so nothing shows that K and V were computed: they fail too (else
    # a student would give up one answer to hide typed-in ones after it). The messages name the
    # error, not typing.
    card = submit({**NUMPY_CORRECT, "Q": "X @ W_q.reshape(2, 2).T"})
    qkv = question(card, "qkv")
    assert (qkv.status, qkv.score) == ("failed", 0)
    assert qkv.lines[0] == (
        "`Q` is correct for the notebook's data, but the code fails when `X` and `W_q` change: cell 8 raised "
        "ValueError (cell 8, line 1: Q = X @ W_q.reshape(2, 2).T)."
    )
    assert not any("typed in" in line for line in qkv.lines)
    assert card.score < card.max_score - 1


def typed_answers(grader, assignment) -> dict[str, str]:
    """Every answer typed in from the solution's printout (softmax, which no variant tests, computed)."""
    ref = grader.references.get(assignment).captures
    return {
        "Q": literal(ref["qkv/0"].value),
        "K": literal(ref["qkv/1"].value),
        "V": literal(ref["qkv/2"].value),
        "scores": literal(ref["scores/0"].value),
        "scaled_scores": literal(ref["scaled/0"].value),
        "attention_weights": literal(ref["weights/0"].value),
        "output": literal(ref["output/0"].value),
        "?1": NUMPY_CORRECT["?1"],
    }


@pytest.mark.parametrize(
    "last_cell, status",
    [
        ("import os\nos._exit(0)", "crashed"),
        (
            "import os\nfd = os.open('/dev/null', os.O_RDWR)\nfor i in range(3, 64):\n    if i != fd:\n"
            "        try:\n            os.dup2(fd, i)\n        except OSError:\n            pass",
            "crashed",
        ),
    ],
    ids=["os._exit", "dup2-over-the-channel"],
)
def test_typed_in_answers_lose_even_when_the_run_does_not_end_cleanly(
    grader, numpy_assignment, submit, last_cell, status
):
    # Variants used to run only after a clean run: ending the process in the last cell kept
    # every typed-in answer's points.
    card = submit(typed_answers(grader, numpy_assignment), append=[last_cell])
    assert card.status == status, card.reason
    for qid in ("qkv", "scores", "scaled", "weights", "output"):
        assert question(card, qid).status == "failed", (qid, question(card, qid).lines)
    assert card.score == 1


def test_typed_in_answers_lose_when_a_capture_hangs(grader, numpy_assignment, course, tmp_path):
    import dataclasses

    from grader.testing import fill, write

    a = dataclasses.replace(
        numpy_assignment, limits=dataclasses.replace(numpy_assignment.limits, cell_timeout=1.5, notebook_timeout=20.0)
    )
    answers = typed_answers(grader, numpy_assignment)
    # `output` is an object whose every attribute lookup waits forever: capturing it never returns
    # (asleep, not spinning: the suite's CPU is the machine's).
    answers["output"] = "type('Hang', (), {'__getattribute__': lambda self, name: __import__('time').sleep(3600)})()"
    card = grader.grade(a, write(fill(a.skeleton, answers), tmp_path / "spin.ipynb"))
    for qid in ("qkv", "scores", "scaled", "weights", "output"):
        assert question(card, qid).status != "passed", (qid, question(card, qid).lines)
    assert card.score == 1


def test_a_guard_that_fails_only_on_variants_hides_no_typed_in_answer(grader, numpy_assignment, submit):
    # Each typed-in answer sits behind a statement that raises only when the data is not the
    # notebook's own: the answer's value is missing on every variant, for a reason that belongs to
    # no other answer, so it fails, and the message names the error rather than typing.
    t = typed_answers(grader, numpy_assignment)
    guard = "_ok = 1 / int(bool(X.shape == (3, 2) and X[0, 0] == 1.0))\n"
    card = submit(
        t,
        edit={
            4: guard + f"Q = {t['Q']}\n" + guard + f"K = {t['K']}\n" + guard + f"V = {t['V']}",
            7: guard + f"scores = {t['scores']}",
            9: "d_k = Q.shape[1]\n" + guard + f"scaled_scores = {t['scaled_scores']}",
            11: "def softmax(x):\n    e_x = np.exp(x - np.max(x))\n    return e_x / np.sum(e_x, axis=-1, keepdims=True)\n"
            + guard
            + f"attention_weights = {t['attention_weights']}",
            13: guard + f"output = {t['output']}",
        },
    )
    assert card.status == "graded"
    for qid in ("qkv", "scores", "scaled", "weights", "output"):
        q = question(card, qid)
        assert q.status == "failed", (qid, q.lines)
        assert not any("typed in" in line for line in q.lines), q.lines
        assert any(" raised ZeroDivisionError" in line or " raised NameError" in line for line in q.lines), q.lines
    assert card.score == 1


def test_code_slow_only_on_variants_runs_out_of_the_submissions_time(numpy_assignment, grader, tmp_path):
    import dataclasses

    from grader.testing import fill, write

    # Twelve cells that each sleep just under the cell limit, but only when the data is not the
    # notebook's own: the variants would take 30 s each; they get twice the original run plus
    # one cell's limit, and fail.
    a = dataclasses.replace(
        numpy_assignment, limits=dataclasses.replace(numpy_assignment.limits, cell_timeout=3.0, notebook_timeout=60.0)
    )
    slow = "import time\nif X.shape != (3, 2):\n    time.sleep(2.5)"
    card = grader.grade(a, write(fill(a.skeleton, NUMPY_CORRECT, append=[slow] * 12), tmp_path / "slow.ipynb"))
    assert card.status == "graded"
    for qid in ("qkv", "scores", "scaled", "weights", "output"):
        q = question(card, qid)
        assert q.status == "failed", (qid, q.lines)
        assert any(line.endswith("change: the run did not finish in time.") for line in q.lines), q.lines
    assert card.score == 1


# --------------------------------------------------------------------------------------------
# Variants of each submission's own (``variants.per_submission``)


def lookup_output(pairs) -> str:
    """An answer for `output` that computes nothing: the values for each data it knows, looked up
    by `X` (as a student would who had the inputs and answers of some runs)."""
    table = {
        str(np.round(decode(x).data if isinstance(x, dict) else x, 6).ravel().tolist()): np.round(out, 8).tolist()
        for x, out in pairs
    }
    return f"np.array({table!r}[str(np.round(X, 6).ravel().tolist())])"


def known_runs(ref_captures, variant_set) -> list:
    """(X, output) of the notebook's data and of every variant in the set."""
    pairs = [(ref_captures["__given__/X"].value.data, ref_captures["output/0"].value.data)]
    pairs += [
        (v.values["X"], c["output/0"].value.data)
        for v, c in zip(variant_set.variants, variant_set.captures, strict=True)
    ]
    return pairs


@pytest.fixture(scope="module")
def own_course(configured, tmp_path_factory):
    """The course as configured (variants of each submission's own), with a cache of its own: its own
    variant secret."""
    import dataclasses

    return dataclasses.replace(configured, cache_dir=tmp_path_factory.mktemp("own-variants"))


def test_each_submission_is_checked_on_variants_of_its_own(own_course, monkeypatch, tmp_path):
    import dataclasses
    import stat

    from grader.judge.grading import Grader
    from grader.judge.reference import References
    from grader.outputs.yaml import write_yaml
    from grader.testing import fill, write

    monkeypatch.delenv(variants.SECRET_ENV, raising=False)
    grader = Grader(own_course)
    a = own_course.assignment("attention_numpy")
    assert a.variants.per_submission  # the default
    one = grader.grade(a, write(fill(a.skeleton, NUMPY_CORRECT, append=["# one"]), tmp_path / "one.ipynb"))
    two = grader.grade(a, write(fill(a.skeleton, NUMPY_CORRECT, append=["# two"]), tmp_path / "two.ipynb"))
    for card in (one, two):
        assert card.score == card.max_score
        assert card.execution.to_dict()["variant_inputs"] == "this submission's own"
        assert {q.id: q.variants for q in card.questions} == {
            "qkv": 2,
            "scores": 2,
            "scaled": 2,
            "softmax": 0,
            "weights": 2,
            "output": 2,
        }
    # The secret was made once, for the grader's uid alone.
    secret = own_course.cache_dir / variants.SECRET_FILE
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and len(secret.read_text()) == 64
    course_x = [decode(v.values["X"]).data for v in grader.references.get(a).variants]
    own = {
        card.sha256: [decode(v.values["X"]).data for v in grader.references.variants_for(a, card.sha256).variants]
        for card in (one, two)
    }
    xs = [x for found in own.values() for x in found] + course_x
    assert all(not np.array_equal(p, q) for i, p in enumerate(xs) for q in xs[i + 1 :])  # six distinct inputs
    # Sizes stay as the rules make them (variant 2 has one more token, by its rule).
    assert [x.shape for x in own[one.sha256]] == [x.shape for x in course_x]
    # Computed once per seed: a new grader finds them in the cache, and draws the same for the same notebook.
    again = References(own_course, grader.executor).variants_for(a, one.sha256)
    assert all(
        np.array_equal(decode(v.values["X"]).data, x) for v, x in zip(again.variants, own[one.sha256], strict=True)
    )
    # Another secret, other variants.
    monkeypatch.setenv(variants.SECRET_ENV, "another course secret, set in the environment")
    other = References(own_course, grader.executor).variants_for(a, one.sha256)
    assert not np.array_equal(decode(other.variants[0].values["X"]).data, own[one.sha256][0])
    # Nothing of the seed or the secret reaches a scorecard.
    seed = variants.submission_seed(secret.read_text().encode(), one.sha256, a.name)
    write_yaml(one, tmp_path / "one.yaml")
    text = (tmp_path / "one.yaml").read_text()
    assert str(seed) not in text and secret.read_text() not in text
    # ``grader validate`` checks the course's variants, not a submission's own.
    validated = grader.grade(a, a.solution, course_variants=True)
    assert validated.execution.variant_inputs is None
    assert dataclasses.replace(a.variants, per_submission=False) != a.variants


def test_inputs_leaked_from_one_submission_serve_no_other(own_course, tmp_path, monkeypatch):
    """An answer that looks its value up from known runs (the notebook's data and some variants'
    inputs and answers): on the course's shared variants a leak of them earns the points; with
    variants per submission, neither the course's nor another submission's variants help."""
    import dataclasses

    from grader.judge.grading import Grader
    from grader.testing import fill, write

    monkeypatch.delenv(variants.SECRET_ENV, raising=False)
    grader = Grader(own_course)
    a = own_course.assignment("attention_numpy")
    shared = dataclasses.replace(a, variants=dataclasses.replace(a.variants, per_submission=False))
    ref = grader.references.get(a)

    def hand_in(answer: str, name: str, assignment=a):
        return grader.grade(
            assignment, write(fill(a.skeleton, {**NUMPY_CORRECT, "output": answer}), tmp_path / f"{name}.ipynb")
        )

    course_leak = lookup_output(known_runs(ref.captures, ref.course_set()))
    assert hand_in(course_leak, "course-leak", shared).score == a.max_score  # the leak served everyone
    honest = grader.grade(
        a, write(fill(a.skeleton, NUMPY_CORRECT, append=["# a classmate"]), tmp_path / "classmate.ipynb")
    )
    classmate_leak = lookup_output(known_runs(ref.captures, grader.references.variants_for(a, honest.sha256)))
    for name, answer in (("course-leak", course_leak), ("classmate-leak", classmate_leak)):
        card = hand_in(answer, name)
        assert card.execution.to_dict()["variant_inputs"] == "this submission's own"
        assert question(card, "output").status == "failed", name
        assert (
            question(card, "output")
            .lines[0]
            .startswith("`output` is correct for the notebook's data, but the code fails when `X`")
        ), question(card, "output").lines
        assert card.score == a.max_score - question(card, "output").max_score


def test_without_solution_steps_the_course_variants_stand_in_and_the_scorecard_says_so(own_course, tmp_path):
    """A ``grading-bundle`` holds no solution code, so no variant of a submission's own can be computed."""
    import dataclasses

    from grader.judge.grading import Grader
    from grader.testing import fill, write

    grader = Grader(own_course)
    a = own_course.assignment("attention_numpy")
    bundle = grader.references.save_bundle(a, tmp_path / "bundle.json", solution_steps=False)
    graded_there = Grader(own_course, executor=grader.executor)
    card = graded_there.grade(
        dataclasses.replace(a, bundle=bundle), write(fill(a.skeleton, NUMPY_CORRECT), tmp_path / "sub.ipynb")
    )
    assert card.score == card.max_score
    assert card.execution.to_dict()["variant_inputs"] == (
        "the course's variants: this grader has no solution steps to compute a submission's own variants with"
    )
    typed = graded_there.grade(
        dataclasses.replace(a, bundle=bundle),
        write(
            fill(a.skeleton, {**NUMPY_CORRECT, "output": literal(grader.references.get(a).captures["output/0"].value)}),
            tmp_path / "t.ipynb",
        ),
    )
    assert question(typed, "output").status == "failed"  # the course's variants still test it


def test_a_draw_that_tests_less_than_the_course_variant_gives_way_to_it(own_course, tmp_path, monkeypatch):
    """tokens_to_multihead's seed was chosen so that both variants change which word bank attends
    to most. A draw of a submission's own that does not change it would test nothing there (the
    answer is a word, typed in as easily as computed): it is not used. With one draw allowed, a
    notebook whose draw misses is checked on the course's variant instead, and its card says so."""
    import nbformat

    from grader.files import sha256_file
    from grader.judge import reference
    from grader.judge.grading import Grader

    monkeypatch.setattr(reference, "ATTEMPTS", 1)
    grader = Grader(own_course)
    a = own_course.assignment("tokens_to_multihead")
    ref = grader.references.get(a)
    assert all("reading/0" in changed for changed in ref.changed)
    for k in range(20):
        nb = nbformat.read(str(a.solution), as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(f"# {k}"))
        path = tmp_path / f"solution-{k}.ipynb"
        nbformat.write(nb, str(path))
        found = grader.references.variants_for(a, sha256_file(path))
        if found.note:
            break
    else:
        raise AssertionError("no draw missed the word in 20 notebooks")
    missed = [
        v.number
        for v, own in zip(found.variants, found.captures, strict=True)
        if own is ref.variant_captures[v.number - 1]
    ]
    assert missed and found.note == (
        f"the course's variant {', '.join(map(str, missed))}: no draw of this "
        "submission's own changed every answer it changes"
    )
    assert all("reading/0" in changed for changed in found.changed)
    card = grader.grade(a, path)
    assert card.score == card.max_score
    assert card.execution.to_dict()["variant_inputs"] == found.note
    assert question(card, "reading").variants == 2
