"""The student's copy of an instructor's test holds only what feeds the calls into the student's
code: values a test computes for its expected side never enter the student's process, so code
that walks the caller's frames cannot stash them and show them in another test's message."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from conftest import notebook_with

from grader.course import config
from grader.judge.grading import Grader
from grader.judge.testrewrite import program

SECRET = 4242.5  # a value only the hidden test's expected side computes

HIDDEN = (
    f"import numpy as np\nscale = 7\nexpected_total = np.array([1.0, 4.0, 9.0]) * {SECRET}\n"
    "inputs = np.arange(1, 4) * 1.0\n"
    "assert np.allclose(squares(inputs) * " + str(SECRET) + ", expected_total), f'expected {expected_total}'"
)
PUBLIC = "assert leak() == []"
# The test's own function calls the student's: in an assignment, and inside asserts.
HELPER = (
    "def run(v):\n    return squares(v)\ngot = run(np.arange(3.0))\nassert np.allclose(got, [0, 1, 4])\n"
    "assert run(np.ones(2))[0] * 3 == 3"
)

SOLUTION = ["import numpy as np", "def squares(x):\n    return x ** 2", "def leak():\n    return []"]

# Walks every caller frame while the hidden test calls it, keeps whatever of the test's own names
# it finds, and gives them back to the public test, whose failure message would print them.
STASH = (
    "import sys, gc, inspect\n_seen = []\n"
    "def squares(x):\n"
    "    f = sys._getframe(1)\n"
    "    while f is not None:\n"
    "        for k, v in list(f.f_locals.items()) + list(f.f_globals.items()):\n"
    "            if k.startswith('expected'):\n"
    "                _seen.append(np.asarray(v).tolist())\n"
    "        f = f.f_back\n"
    "    for fr in inspect.stack():\n"
    "        for c in fr.frame.f_code.co_consts:\n"
    "            if isinstance(c, float) and c > 1000:\n"
    "                _seen.append(c)\n"
    "    return x ** 2\n"
    "def leak():\n    return _seen"
)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("slice")
    (root / "solutions/hw").mkdir(parents=True)
    notebook_with(SOLUTION, root / "solutions/hw/hw.ipynb")
    (root / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "course": {"name": "slice"},
                "assignments": {
                    "hw": {
                        "variants": {"count": 0},
                        "questions": [
                            {"id": "hidden_q", "points": 1, "checks": [{"test": HIDDEN, "hidden": True}]},
                            {"id": "public_q", "points": 1, "checks": [{"test": PUBLIC}]},
                            {"id": "helper_q", "points": 1, "checks": [{"test": HELPER}]},
                        ],
                    }
                },
            }
        )
    )
    return root, dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")


def test_the_students_copy_holds_no_statement_of_the_expected_side():
    copy = program(HIDDEN).record_source
    assert "squares(inputs)" in copy and "inputs = np.arange(1, 4)" in copy
    assert str(SECRET) not in copy and "expected" not in copy and "scale" not in copy


def test_a_frame_walking_student_sees_no_hidden_value(course):
    root, c = course
    card = Grader(c).grade(c.assignment("hw"), notebook_with([SOLUTION[0], STASH], root / "stash.ipynb"))
    qs = {q.id: q for q in card.questions}
    # The hidden test is still judged in full by the grader (the student's squares is right) ...
    assert qs["hidden_q"].score == 1
    # ... and nothing of its expected side reached the student's process to be shown back.
    assert qs["public_q"].score == 1, qs["public_q"].lines
    assert not any(str(SECRET) in line or "4242" in line for q in card.questions for line in q.lines)
    assert qs["helper_q"].score == 1, qs["helper_q"].lines


def test_a_tests_own_function_calls_the_students_in_both_runs(course):
    copy = program(HELPER).record_source
    assert "got = run(np.arange(3.0))" in copy and "lambda: (run(np.ones(2)),)" in copy
    root, c = course
    card = Grader(c).grade(
        c.assignment("hw"), notebook_with([SOLUTION[0], "def squares(x):\n    return x * 2"], root / "wrong.ipynb")
    )
    helper = next(q for q in card.questions if q.id == "helper_q")
    assert helper.score == 0 and helper.lines == [
        "`np.allclose(got, [0, 1, 4])` does not hold: `got`: 1 / 3 elements (33.3%) differ beyond tolerance "
        "(rtol=1e-05, atol=1e-08); first: [1] is 2. The largest relative difference is between 10% and 100%."
    ]


def test_a_raise_the_test_catches_itself_stays_without_its_message():
    src = (
        "expected = [1, 4]\ntry:\n    if squares(2) != expected:\n        raise ValueError(f'not {expected}')\n"
        "except ValueError:\n    sum_of_squares(1)\nelse:\n    raise AssertionError(f'{expected}')"
    )
    copy = program(src).record_source
    assert "raise ValueError\n" in copy + "\n" and "not {expected}" not in copy and "AssertionError" not in copy
    # Its condition decides which of the student's functions the test calls next: it stays, with what it reads.
    assert "expected = [1, 4]" in copy


def test_the_tests_random_draws_stay_whole_so_its_inputs_match():
    # Data 88E's idiom: the test seeds NumPy, draws its inputs, and draws one value it never passes on.
    src = (
        "np.random.seed(1234)\nunused = np.random.uniform(0, 1, 3)\nx2 = np.random.uniform(0, 10, 5)\n"
        "rng = np.random.default_rng(0)\nnoise = rng.random(2)\ny2 = rng.random(5)\nx2.sort()\n"
        "assert np.isclose(corr(x2, y2), 0.64)\nnp.testing.assert_allclose(corr(x2, y2), 0.6410799)"
    )
    copy = program(src).record_source
    for line in ["np.random.seed(1234)", "unused = np.random.uniform(0, 1, 3)", "noise = rng.random(2)", "x2.sort()"]:
        assert line in copy
    assert "0.64" not in copy


def test_a_value_synced_after_a_call_inside_the_tests_function_is_that_functions_own():
    """A test's function that hands a top-level list to the student's code does not rebind it there
    (which would make it the function's local, unbound before the call); one of its own it does."""
    from grader.judge.testrewrite import program

    src = "grid = [0]\ndef run():\n    fill(grid)\n    return grid\ndef own():\n    g = [1]\n    fill(g)\n    return g\nrun()"
    record = program(src, ()).record_source
    assert "grid = __grader_sync__" not in record
    assert "g = __grader_sync__" in record
    compile(record, "<test>", "exec")
