"""``test`` checks: the instructor's asserts run in the grader on values the student's sandbox
computes; the student's process never sees the test and cannot change its outcome."""

from __future__ import annotations

import ast
import dataclasses
import textwrap

import pytest
from conftest import notebook_with

from grader.authoring.validate import validate
from grader.course import config
from grader.course.model import Check
from grader.errors import ConfigError
from grader.judge import testcheck
from grader.judge.grading import Grader
from grader.packaging.gradescope import stage_grading

CHECK_STUB = Check(
    id="q/0", question_id="q", kind="test", target="", points=1, rtol=1e-5, atol=1e-8, strict_types=False
)

SOLUTION = [
    "import numpy as np",
    "def relu(x):\n    x = np.asarray(x, dtype=float)\n    if x.ndim == 0:\n        raise ValueError('relu needs an array')\n"
    "    return np.maximum(x, 0)",
    "W = np.tril(np.ones((4, 4)))\nW = W / W.sum(axis=1, keepdims=True)",
    "class Counter:\n    def __init__(self):\n        self.n = 0\n    def step(self):\n        self.n += 1\n        return self.n",
    "A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])\nb = np.array([1.0, 0.0, 2.0])\nw = np.array([0.5, -0.5])\n"
    "def gradient(A, b, w):\n    return 2 / len(b) * A.T @ (A @ w - b)\ng = gradient(A, b, w)",
]

CONFIG = """
course:
  name: tests
assignments:
  hw:
    variants: {count: 0}
    questions:
      - id: relu
        points: 2
        checks:
          - test: |
              for x in [[-1.0, 2.0], [3.0, -4.0, 0.0]]:
                  out = relu(np.array(x))
                  assert out.shape == (len(x),)
                  assert np.allclose(out, np.maximum(x, 0))
              with pytest.raises(ValueError):
                  relu(np.float64(3.0))
      - id: causal
        points: 1
        checks:
          - test: |
              assert W[0, 3] == 0
              assert np.allclose(W.sum(axis=1), 1), "each row of W should sum to 1"
            partial: true
      - id: counter
        points: 1
        checks:
          - test: |
              c = Counter()
              steps = [c.step() for _ in range(3)]
              assert steps == [1, 2, 3]
              assert c.n == 3
      - id: secret
        points: 1
        checks:
          - test: |
              assert W[1, 0] == 0.5
            hidden: true
      - id: grad
        points: 2
        checks:
          - test: |
              assert np.allclose(g, 2 / 3 * A.T @ (A @ w - b))
              assert g[0] == 2 / 3 * (A.T @ (A @ w - b))[0]
            partial: true
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("testcheck")
    (root / "solutions/hw").mkdir(parents=True)
    notebook_with(SOLUTION, root / "solutions/hw/hw.ipynb")
    (root / "config.yaml").write_text(CONFIG)
    course = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    return root, course, Grader(course)  # the process's warm executor, shared with other tests


def grade(setup, name, cells):
    root, course, grader = setup
    card = grader.grade(course.assignment("hw"), notebook_with(cells, root / f"{name}.ipynb"))
    return {q.id: q for q in card.questions}


def test_solution_passes_every_test(setup):
    qs = grade(setup, "solution", SOLUTION)
    assert {k: q.score for k, q in qs.items()} == {"relu": 2, "causal": 1, "counter": 1, "secret": 1, "grad": 2}


def test_failures_name_what_differs_without_the_hidden_values(setup):
    cells = [SOLUTION[0], "def relu(x):\n    return np.abs(x)", "W = np.ones((4, 4)) / 4", SOLUTION[3]]
    qs = grade(setup, "wrong", cells)
    assert qs["relu"].score == 0
    # All or nothing: the first failing assert ends the test and names itself, and says how the
    # student's value differs (the grader's own comparison, with np.allclose's tolerance).
    assert qs["relu"].lines == [
        "`np.allclose(out, np.maximum(x, 0))` does not hold: `out`: 1 / 2 elements (50.0%) "
        "differ beyond tolerance (rtol=1e-05, atol=1e-08); first: [0] is 1. The largest "
        "relative difference is over 100%."
    ]
    # Partial credit by the share of asserts that pass; the generated message shows a literal of the test.
    assert qs["causal"].score == 0.5 and qs["causal"].status == "partial"
    assert "`W[0, 3]` should be 0; it is 0.25." in qs["causal"].lines
    # A hidden test says only that it failed.
    assert qs["secret"].lines == ["A hidden check on secret did not pass."]
    assert not any("0.5" in f for f in qs["secret"].lines)


def test_a_failing_test_names_the_students_value_and_never_quotes_the_reference_formula(setup):
    # The test's expected side is the reference formula, in names the student cannot see: the
    # message says how `g` differs, by the test's own tolerance, and quotes neither assert.
    cells = [*SOLUTION[:4], SOLUTION[4].replace("return 2 / len(b)", "return 1 / len(b)")]
    grad = grade(setup, "no_factor_2", cells)["grad"]
    assert grad.score == 0 and grad.status == "failed"
    assert grad.lines == [
        "the test's comparison of `g` does not hold: `g`: 2 / 2 elements (100.0%) differ beyond tolerance "
        "(rtol=1e-05, atol=1e-08); first: [0] is -5.1666667; [1] is -6.6666667. The largest relative difference is between "
        "10% and 100%.",
        "`g[0]` is -5.16667, which is not what the test expects.",
    ]
    assert not any("A.T @" in line or "2 / 3" in line for line in grad.lines)


def test_expected_exceptions_cross_the_boundary_as_data(setup):
    cells = [SOLUTION[0], "def relu(x):\n    raise TypeError('not today')", SOLUTION[2], SOLUTION[3]]
    qs = grade(setup, "raises", cells)
    assert qs["relu"].score == 0
    assert any("`relu(__grader_in0__)`" not in f and "raised TypeError: not today" in f for f in qs["relu"].lines)


def test_an_exception_the_test_expects_and_the_code_never_raises_is_named(setup):
    # relu is right on arrays but accepts a scalar: the test's `pytest.raises(ValueError)` block
    # raises nothing, and the message names the statement and the exception by its name.
    cells = [SOLUTION[0], "def relu(x):\n    return np.maximum(np.asarray(x, dtype=float), 0)", *SOLUTION[2:]]
    relu = grade(setup, "never_raises", cells)["relu"]
    assert relu.score == 0
    assert relu.lines == ["`relu(np.float64(3.0))` should raise ValueError; it did not."]


def test_results_kept_between_sites_stay_in_the_students_process(setup):
    cells = [
        *SOLUTION[:3],
        "class Counter:\n    def __init__(self):\n        self.n = 0\n    def step(self):\n"
        "        self.n += 2\n        return self.n",
    ]
    qs = grade(setup, "counter", cells)
    assert qs["counter"].score == 0 and qs["relu"].score == 2


@pytest.mark.parametrize(
    "cheat",
    [
        "np.allclose = lambda *a, **k: True\nnp.maximum = lambda a, b: a",
        "import builtins\nclass Quiet(Exception):\n    pass\nbuiltins.AssertionError = Quiet\nAssertionError = Quiet",
        "class AlwaysEqual:\n    shape = None\n    def __eq__(self, other):\n        return True\n"
        "    def __bool__(self):\n        return True\nrelu = lambda x: AlwaysEqual()",
    ],
)
def test_cheats_earn_nothing(setup, cheat):
    cells = [
        SOLUTION[0],
        "def relu(x):\n    return np.abs(np.asarray(x, dtype=float))\n" + cheat,
        "W = np.ones((4, 4)) / 4",
        SOLUTION[3],
    ]
    qs = grade(setup, "cheat", cells)
    assert qs["relu"].score == 0
    assert qs["causal"].score == 0.5  # only what is true of its W: rows sum to 1


def test_placeholders_count_as_unanswered(setup):
    cells = [SOLUTION[0], "def relu(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()", "W = ...", SOLUTION[3]]
    qs = grade(setup, "placeholder", cells)
    assert qs["relu"].status == "unanswered" and qs["causal"].status == "unanswered"
    assert qs["counter"].score == 1


def test_validate_reports_a_test_the_solution_fails(tmp_path):
    (tmp_path / "solutions/hw").mkdir(parents=True)
    notebook_with(SOLUTION, tmp_path / "solutions/hw/hw.ipynb")
    text = CONFIG.replace("assert W[1, 0] == 0.5", "assert W[1, 0] == 0.25")
    text = text.replace(
        "      - id: counter",
        textwrap.indent(
            textwrap.dedent("""\
        - id: depends
          points: 1
          checks:
            - test: |
                n = len(relu(np.ones(3)))
                assert relu(np.ones(n)).shape == (3,)
        """),
            "      ",
        )
        + "      - id: counter",
    )
    (tmp_path / "config.yaml").write_text(text)
    course = dataclasses.replace(config.load(tmp_path / "config.yaml"), cache_dir=tmp_path / "cache")
    problems = validate(course, course.assignment("hw"), Grader(course))
    assert any(p.startswith("the solution does not pass question secret") for p in problems)
    # A test whose inputs come from the student's own values runs as written.
    assert not any("question depends" in p for p in problems)


def test_config_accepts_any_python_as_a_test_and_rejects_what_is_not_python(tmp_path):
    (tmp_path / "solutions/hw").mkdir(parents=True)
    notebook_with(SOLUTION, tmp_path / "solutions/hw/hw.ipynb")
    for test, why in (("print(relu([1]))", None), ("assert (", "is not Python code")):
        (tmp_path / "config.yaml").write_text(
            "course: {name: t}\nassignments:\n  hw:\n    questions:\n      - id: a\n        points: 1\n"
            f"        checks:\n          - test: {test!r}\n"
        )
        if why is None:
            assert config.load(tmp_path / "config.yaml").assignment("hw").checks[0].target == test
        else:
            with pytest.raises(ConfigError, match=why):
                config.load(tmp_path / "config.yaml")


def test_the_students_process_receives_no_expected_side_and_no_message():
    source = (
        "x = np.arange(4.0)\nassert np.allclose(prefix_sum(x), [0.0, 1.0, 3.0, 6.0]), 'wrong'\n"
        "assert prefix_sum([1]) == [1], 'secret message'\n"
    )
    sent = testcheck.captures(dataclasses.replace(CHECK_STUB, target=source), None)[0].target
    assert "prefix_sum(x)" in sent and "prefix_sum([1])" in sent
    assert "6.0" not in sent and "wrong" not in sent and "secret" not in sent and "allclose" not in sent


def test_a_test_can_live_in_checks_py_beside_the_solution(tmp_path):
    (tmp_path / "solutions/hw").mkdir(parents=True)
    notebook_with(SOLUTION, tmp_path / "solutions/hw/hw.ipynb")
    (tmp_path / "solutions/hw/checks.py").write_text(
        "import numpy as np\n\nINPUTS = [np.ones(2), -np.ones(3)]\n\n\n"
        "def test_relu():\n    for x in INPUTS:\n        assert (relu(x) >= 0).all()\n\n\n"
        "def test_other():\n    assert W[0, 0] == 1\n"
    )
    (tmp_path / "config.yaml").write_text(
        "course: {name: t}\nassignments:\n  hw:\n    variants: {count: 0}\n    questions:\n      - id: a\n"
        "        points: 1\n        checks:\n          - test: checks.py::test_relu\n"
    )
    course = dataclasses.replace(config.load(tmp_path / "config.yaml"), cache_dir=tmp_path / "cache")
    check = course.assignment("hw").checks[0]
    assert "for x in INPUTS:" in check.target and "INPUTS = [" in check.target and "W[0, 0]" not in check.target
    assert check.names == {"relu"}
    card = Grader(course).grade(course.assignment("hw"), tmp_path / "solutions/hw/hw.ipynb")
    assert card.score == 1
    # Graded without the solution folder (Gradescope, a grading bundle), the test travels as its code.
    staged = config.load(stage_grading(course, course.assignment("hw"), tmp_path / "stage")).assignment("hw")
    assert staged.checks[0].target == check.target
    assert staged.config_digest == course.assignment("hw").config_digest
    (tmp_path / "config.yaml").write_text((tmp_path / "config.yaml").read_text().replace("test_relu", "test_nope"))
    with pytest.raises(ConfigError, match="names test_nope, which checks.py does not define"):
        config.load(tmp_path / "config.yaml")


def test_tests_replayed_by_threads_at_once_keep_their_own_draws():
    # A batch grades submissions in threads; a test that seeds NumPy and draws is replayed in the
    # grader with the process's generators: no other thread's draws may fall in between.
    import threading

    from grader.course.model import Check
    from grader.judge.testcheck import judge

    src = "np.random.seed(7)\na = np.random.rand(20000)\nnp.random.seed(7)\nb = np.random.rand(20000)\nassert (a == b).all()"
    check = Check(id="q/0", question_id="q", kind="test", target=src, points=None, rtol=0, atol=0, strict_types=False)
    failed: list[tuple[object, ...]] = []

    def work() -> None:
        for _ in range(15):
            failed.extend(judge(check, {}, reveal=False).findings)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failed == []


LIBRARY_CONFIG = """
course:
  name: tests
assignments:
  hw:
    variants: {count: 0}
    questions:
      - id: close
        points: 1
        checks:
          - test: np.testing.assert_allclose(relu(np.array([-1.0, 2.0])), [0.0, 2.0])
      - id: equal
        points: 1
        checks:
          - test: |
              from numpy.testing import assert_array_equal
              assert_array_equal(W[0], [1.0, 0.0, 0.0, 0.0])
      - id: err_msg
        points: 1
        checks:
          - test: |
              import numpy.testing as npt
              npt.assert_allclose(W.sum(axis=1), 1, err_msg="each row of W should sum to 1")
      - id: caught
        points: 1
        checks:
          - test: |
              try:
                  np.testing.assert_allclose(relu(np.array([-3.0])), [0.0])
              except AssertionError:
                  raise AssertionError("relu should clip negative inputs")
      - id: library
        points: 1
        checks:
          - test: |
              import unittest
              unittest.TestCase().assertEqual(float(W[1, 0]), 0.5)
      - id: fails_itself
        points: 1
        checks:
          - test: |
              if W[0, 0] != 1:
                  pytest.fail("the first row of W should keep only its first element")
      - id: nose
        points: 1
        checks:
          - test: |
              from nose.tools import assert_equal
              assert_equal(float(W[0, 1]), 0.0)
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    root = tmp_path_factory.mktemp("testcheck_library")
    (root / "solutions/hw").mkdir(parents=True)
    notebook_with(SOLUTION, root / "solutions/hw/hw.ipynb")
    (root / "config.yaml").write_text(LIBRARY_CONFIG)
    course = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    return root, course, Grader(course)


def test_a_failed_library_assertion_is_told_by_where_it_came_from_never_by_its_message(library):
    assert all(q.score == 1 for q in grade(library, "solution", SOLUTION).values())
    cells = [SOLUTION[0], "def relu(x):\n    return np.abs(x)", "W = np.ones((4, 4)) / 3", SOLUTION[3]]
    qs = grade(library, "wrong", cells)
    assert all(q.score == 0 for q in qs.values())
    # numpy.testing's comparisons fail as data and are told as an np.allclose assert is: how the
    # student's value differs, by the grader's comparison with numpy's tolerance, never numpy's
    # lines (its DESIRED: and its largest differences give the expected values away).
    assert qs["close"].lines == [
        "`np.testing.assert_allclose(relu(np.array([-1.0, 2.0])), [0.0, 2.0])` does not hold: "
        "`relu(np.array([-1.0, 2.0]))`: 1 / 2 elements (50.0%) differ beyond tolerance (rtol=1e-07, atol=0); "
        "first: [0] is 1. The largest relative difference is over 100%."
    ]
    assert (
        qs["equal"]
        .lines[0]
        .startswith(
            "`assert_array_equal(W[0], [1.0, 0.0, 0.0, 0.0])` does not hold: `W[0]`: 4 / 4 elements (100.0%) differ"
        )
    )
    # The test's own words: numpy's err_msg, and its own raise of an AssertionError it caught.
    assert qs["err_msg"].lines == ["each row of W should sum to 1"]
    assert qs["caught"].lines == ["relu should clip negative inputs"]
    # Another library's message may hold the expected value (unittest's "0.333 != 0.5"): not shown.
    assert qs["library"].lines == ["`unittest.TestCase().assertEqual(float(W[1, 0]), 0.5)` failed."]
    # pytest.fail, recognised by pytest's own class; nose's helpers show the student's value only.
    assert qs["fails_itself"].lines == ["the first row of W should keep only its first element."]
    assert qs["nose"].lines == ["`assert_equal(float(W[0, 1]), 0.0)`: got 0.333333, which is not the expected value"]


def _small_course(tmp_path, text: str, name: str, cells: list[str]) -> tuple[Grader, object]:
    """A course of one assignment ``name`` from config ``text``, its solution ``cells``."""
    (tmp_path / f"solutions/{name}").mkdir(parents=True)
    notebook_with(cells, tmp_path / f"solutions/{name}/{name}.ipynb")
    (tmp_path / "config.yaml").write_text(text)
    course = dataclasses.replace(config.load(tmp_path / "config.yaml"), cache_dir=tmp_path / "cache")
    return Grader(course), course.assignment(name)


NO_CONVOLVE = """
course:
  name: tests
assignments:
  conv:
    variants: {count: 0}
    questions:
      - id: full
        points: 1
        checks:
          - test: |
              import importlib
              importlib.reload(np)
              x, h = np.arange(6.0), np.array([0.5, 0.25, 0.25])
              reference = np.convolve(x, h, "full")
              np.convolve = None  # the student's function may not call it
              setattr(np, "correlate", None)
              assert np.allclose(convolve_full(x, h), reference)
"""


def test_a_test_that_takes_a_library_function_away_changes_only_the_students_process(tmp_path):
    import numpy as np

    convolve, correlate = np.convolve, np.correlate
    own = "def convolve_full(x, h):\n    n = len(x) + len(h) - 1\n    return np.array([sum(x[j] * h[i - j] for j in range(len(x)) if 0 <= i - j < len(h)) for i in range(n)])"
    borrowed = "def convolve_full(x, h):\n    return np.convolve(x, h, 'full')"
    grader, a = _small_course(tmp_path, NO_CONVOLVE, "conv", ["import numpy as np", own])
    scores = {
        name: grader.grade(a, notebook_with(["import numpy as np", cell], tmp_path / f"{name}.ipynb")).score
        for name, cell in (("own", own), ("borrowed", borrowed), ("own_again", own))
    }
    assert scores == {"own": 1, "borrowed": 0, "own_again": 1}
    # The grader's numpy is as it was: the reference is computed with it, test after test.
    assert np.convolve is convolve and np.correlate is correlate


PRINTED_ARRAY = """
course:
  name: tests
assignments:
  printed:
    variants: {count: 0}
    questions:
      - id: thirds
        points: 1
        checks:
          - test: |
              assert str(thirds) == "[0.33 0.67]"  # as the notebook prints it
              np.set_printoptions(precision=1)
              assert str(thirds) == "[0.3 0.7]"
"""


def test_an_array_in_a_test_reads_as_the_notebooks_print_options_print_it(tmp_path):
    import numpy as np

    cells = ["import numpy as np\nnp.set_printoptions(precision=2)", "thirds = np.array([1, 2]) / 3"]
    grader, a = _small_course(tmp_path, PRINTED_ARRAY, "printed", cells)
    assert grader.grade(a, notebook_with(cells, tmp_path / "same.ipynb")).score == 1
    default = notebook_with(["import numpy as np", cells[1]], tmp_path / "default.ipynb")
    assert grader.grade(a, default).score == 0  # printed with eight digits in that notebook
    assert np.get_printoptions()["precision"] == 8  # the grader's own, after the test's set_printoptions


READ_THEN_BOUND = """
course:
  name: tests
assignments:
  scaled:
    variants: {count: 0}
    questions:
      - id: scale
        points: 1
        checks:
          - test: |
              assert np.allclose(scale(x, h), x * h) and h == 2  # the notebook's h
              for c in range(2):
                  h = np.random.rand(3)  # the test's own, from here on
                  assert np.allclose(scale(x, h), x * h)
"""


def test_a_name_the_test_reads_before_binding_it_is_the_notebooks_there(tmp_path):
    cells = ["import numpy as np\nx = np.arange(3.0)\nh = 2.0", "def scale(x, h):\n    return x * h"]
    grader, a = _small_course(tmp_path, READ_THEN_BOUND, "scaled", cells)
    assert grader.grade(a, notebook_with(cells, tmp_path / "same.ipynb")).score == 1
    other_h = notebook_with([cells[0] + "\nh = 3.0", cells[1]], tmp_path / "other_h.ipynb")
    assert grader.grade(a, other_h).score == 0
    # Read and bound in one loop, it is the test's own from the second time round.
    from grader.course import testcode

    for loop in (
        "for k in range(3):\n    if k:\n        assert prev < k\n    prev = k",
        "for v in xs:\n    total = total + v",
    ):
        assert testcode.read_then_bound(ast.parse(loop)) == set()


def test_an_attribute_a_test_sets_on_the_students_object_is_read_back_from_the_student(setup):
    # A test that makes an object of the student's class, sets an attribute and calls a method: the
    # object lives in the student's process, where the later read is taken.
    root, course, grader = setup
    bus = (
        "class Bus:\n    def __init__(self):\n        self.n = 0\n"
        "    def update(self, enter=0, leave=0):\n        self.n = self.n + enter - leave"
    )
    check = dataclasses.replace(
        CHECK_STUB,
        target="b = Bus()\nb.update(enter=5)\nassert b.n == 5\nb = Bus()\nb.n = 20\nb.update(leave=5)\nassert b.n == 15",
    )
    hw = course.assignment("hw")
    a = dataclasses.replace(hw, questions=(dataclasses.replace(hw.questions[0], checks=(check,), points=1),))
    card = grader.grade(a, notebook_with([*SOLUTION, bus], root / "bus.ipynb"))
    assert card.questions[0].status == "passed", card.questions[0].lines


def test_a_test_function_given_the_students_class_calls_it_in_the_students_process(setup):
    # ``check(Counter)``: the class crosses as its record, which the grader cannot call; the calls
    # the test's function makes with it are taken where the class lives.
    root, course, grader = setup
    check = dataclasses.replace(
        CHECK_STUB,
        target="def check(make):\n    c = make()\n    assert c.step() == 1 and c.step() == 2\ncheck(Counter)",
    )
    hw = course.assignment("hw")
    a = dataclasses.replace(hw, questions=(dataclasses.replace(hw.questions[0], checks=(check,), points=1),))
    card = grader.grade(a, notebook_with(SOLUTION, root / "counter.ipynb"))
    assert card.questions[0].status == "passed", card.questions[0].lines


def test_checks_a_test_imports_from_a_course_module_run_as_its_own_code(setup):
    from grader.authoring.imported_checks import inline

    module = (
        "import numpy as np\nLIMIT = 2\n\ndef _clip(x):\n    return np.minimum(x, LIMIT)\n\n"
        "def check_relu(relu):\n    assert np.allclose(_clip(relu(np.array([-1.0, 3.0]))), [0.0, 2.0])\n\n"
        "def unused():\n    return 1\n"
    )
    test, used = inline("from more_tests import check_relu as c\nc(relu)\nimport more_tests", {"more_tests": module})
    assert used == ["more_tests"] and "def check_relu(relu)" in test and "LIMIT = 2" in test
    assert "def unused" not in test and test.endswith("c(relu)\nimport more_tests")
    # ``import more_tests`` and ``more_tests.check_relu(relu)``: the same, the call now the test's own.
    whole, used = inline("import more_tests as mt\nmt.check_relu(relu)", {"more_tests": module})
    assert used == ["more_tests"] and whole.endswith("\ncheck_relu(relu)") and "import more_tests" not in whole
    # A value read from the module (the notebook may have changed it) leaves the import as it is.
    assert inline("import more_tests\nassert more_tests.LIMIT == 2", {"more_tests": module})[1] == []
    # A module whose code would hide a name of the notebook's the test reads is left as an import.
    shadows = "def relu(x):\n    return x\n\ndef check(f):\n    assert relu(f(1.0)) == 1.0\n"
    assert inline("from more_tests import check\ncheck(relu)", {"more_tests": shadows})[1] == []
    root, course, grader = setup
    hw = course.assignment("hw")
    a = dataclasses.replace(
        hw,
        questions=(
            dataclasses.replace(
                hw.questions[0],
                checks=(dataclasses.replace(CHECK_STUB, target=test.replace("\nimport more_tests", "")),),
                points=1,
            ),
        ),
    )
    assert grader.grade(a, notebook_with(SOLUTION, root / "inlined.ipynb")).questions[0].status == "passed"
    wrong = [*SOLUTION[:1], "def relu(x):\n    return np.abs(np.asarray(x, dtype=float))", *SOLUTION[2:]]
    assert grader.grade(a, notebook_with(wrong, root / "inlined_wrong.ipynb")).questions[0].status == "failed"


def test_warnings_the_students_code_gives_are_read_from_the_list_that_records_them(setup):
    root, course, grader = setup
    bus = (
        "import warnings\nclass Bus:\n    def __init__(self):\n        self.n = 0\n    def go(self, k):\n"
        "        self.n += k\n        if self.n > 10:\n            {}\n"
    )
    check = dataclasses.replace(
        CHECK_STUB,
        target="import warnings\nwith warnings.catch_warnings(record=True) as w:\n    warnings.simplefilter('always')\n"
        "    b = Bus()\n    b.go(5)\n    assert len(w) == 0\n    b.go(50)\n    assert len(w) == 1, 'A warning was not raised'\n"
        "    assert str(w[-1].message) == 'the bus is full' and issubclass(w[-1].category, UserWarning)",
    )
    hw = course.assignment("hw")
    a = dataclasses.replace(hw, questions=(dataclasses.replace(hw.questions[0], checks=(check,), points=1),))
    warns = notebook_with([*SOLUTION, bus.format("warnings.warn('the bus is full')")], root / "warns.ipynb")
    assert grader.grade(a, warns).questions[0].status == "passed"
    silent = grader.grade(a, notebook_with([*SOLUTION, bus.format("pass")], root / "silent.ipynb")).questions[0]
    assert silent.status == "failed" and silent.lines == ["A warning was not raised"], silent.lines


def test_an_assert_whose_failure_the_test_catches_lets_the_test_go_on(setup):
    # nbgrader's partial credit: each part in a ``try``, its failure caught and printed, the points
    # of the parts that held added up.
    root, course, grader = setup
    test = (
        "score = 0\nfor x, want in [(-1.0, 0.0), (2.0, 3.0), (4.0, 4.0)]:\n    try:\n"
        "        assert relu(np.array([x]))[0] == want, f'relu({x}) is wrong'\n"
        "    except AssertionError as e:\n        print(f'Failed: {e}')\n    else:\n        score += 1\n"
        "partial_credit(score / 3)"
    )
    check = dataclasses.replace(CHECK_STUB, target=test)
    hw = course.assignment("hw")
    a = dataclasses.replace(hw, questions=(dataclasses.replace(hw.questions[0], checks=(check,), points=1),))
    q = grader.grade(a, notebook_with(SOLUTION, root / "caught.ipynb")).questions[0]
    assert q.score == pytest.approx(2 / 3), q.lines


def test_a_dicts_views_in_a_test_are_views_in_the_grader(setup):
    # A published course's test: `'x' in sail.keys()` over the notebook's dict. The views cross as
    # plain data and are views again in the grader: membership, set comparisons and operations,
    # insertion order, and values views compared as Python compares them (by identity).
    root, course, grader = setup
    check = dataclasses.replace(
        CHECK_STUB,
        target="assert 'x' in sail.keys() and sail.keys() == {'x', 'y'}\n"
        "assert list(sail.keys()) == ['x', 'y'] and len(sail.values()) == 2\n"
        "assert sail.keys() - {'y'} == {'x'} and sail.items() & {('x', 1)} == {('x', 1)}\n"
        "assert sorted(sail.values()) == [1, 2] and sail.values() != sail.values()",
    )
    hw = course.assignment("hw")
    a = dataclasses.replace(hw, questions=(dataclasses.replace(hw.questions[0], checks=(check,), points=1),))
    right = grader.grade(a, notebook_with([*SOLUTION, "sail = {'x': 1, 'y': 2}"], root / "sail.ipynb"))
    assert right.questions[0].status == "passed", right.questions[0].lines
    wrong = grader.grade(a, notebook_with([*SOLUTION, "sail = {'y': 2, 'x': 1}"], root / "sail_order.ipynb"))
    assert wrong.questions[0].status == "failed" and "list(sail.keys())" in repr(wrong.questions[0].lines)


def _one_check(setup, target, **fields):
    root, course, grader = setup
    hw = course.assignment("hw")
    check = dataclasses.replace(CHECK_STUB, target=target, **fields)
    return (
        root,
        grader,
        dataclasses.replace(hw, questions=(dataclasses.replace(hw.questions[0], checks=(check,), points=1),)),
    )


def test_a_test_cell_run_as_the_main_module_calls_what_it_guards(setup):
    root, grader, a = _one_check(
        setup, "def t():\n    assert relu(np.array([-1.0]))[0] == 1\nif __name__ == '__main__':\n    t()"
    )
    assert grader.grade(a, notebook_with(SOLUTION, root / "main_guard.ipynb")).questions[0].status == "failed"


def test_what_the_test_itself_shows_on_stderr_fails_a_check_that_stderr_fails(setup):
    for target in ("import sys\nprint('careful', file=sys.stderr)", "import warnings\nwarnings.warn('careful')"):
        root, grader, a = _one_check(setup, "assert W[0, 3] == 0\n" + target, stderr_fails=True)
        q = grader.grade(a, notebook_with(SOLUTION, root / "stderr.ipynb")).questions[0]
        assert q.status == "failed" and "careful" in " ".join(q.lines), q.lines
        root, grader, a = _one_check(setup, "assert W[0, 3] == 0\n" + target)  # a test that may: passes
        assert grader.grade(a, notebook_with(SOLUTION, root / "stderr.ipynb")).questions[0].status == "passed"


def test_an_assert_of_the_students_own_is_caught_where_the_test_expects_it(setup):
    target = "try:\n    relu([])\nexcept AssertionError:\n    pass\nelse:\n    assert False, 'relu([]) should stop on its assert'"
    root, grader, a = _one_check(setup, target)
    checked = "def relu(x):\n    assert len(x) > 0, 'empty'\n    return np.maximum(np.asarray(x, dtype=float), 0)"
    sub = notebook_with([SOLUTION[0], checked, *SOLUTION[2:]], root / "own_assert.ipynb")
    assert grader.grade(a, sub).questions[0].status == "passed"
    silent = notebook_with(SOLUTION, root / "no_assert.ipynb")  # np.maximum([]) raises nothing
    assert grader.grade(a, silent).questions[0].lines == ["relu([]) should stop on its assert"]


def test_a_test_of_its_own_class_kept_in_a_name_calls_the_students_code_through_it(setup):
    # unittest's habit without unittest: ``t = TestRelu(); t.test_negative()``.
    target = "class TestRelu:\n    def test_negative(self):\n        assert relu(np.array([-2.0]))[0] == 0\nt = TestRelu()\nt.test_negative()"
    root, grader, a = _one_check(setup, target)
    assert grader.grade(a, notebook_with(SOLUTION, root / "own_class.ipynb")).questions[0].status == "passed"


def test_arithmetic_on_objects_of_the_students_class_is_taken_where_they_live(setup):
    vec = (
        "class Vec:\n    def __init__(self, xs):\n        self.data = np.asarray(xs, dtype=float)\n"
        "    def __add__(self, other):\n        return Vec(self.data + other.data)\n"
        "    def __mul__(self, k):\n        return Vec(self.data * k)"
    )
    target = "a = Vec([1, 2])\nb = Vec([3, 4])\nresult = a + b * 2\nassert result.data.tolist() == [7.0, 10.0]"
    root, grader, a = _one_check(setup, target)
    assert grader.grade(a, notebook_with([*SOLUTION, vec], root / "vec.ipynb")).questions[0].status == "passed"
    wrong = vec.replace("self.data + other.data", "self.data - other.data")
    assert grader.grade(a, notebook_with([*SOLUTION, wrong], root / "vec_wrong.ipynb")).questions[0].status == "failed"


def test_the_grader_replays_a_test_on_one_blas_thread_as_the_students_process_runs():
    """BITS Pilani's hidden test compares its own ``np.linalg.eig`` of a 100 x 100 matrix with the
    student's, bit for bit (``np.array_equal``): with several BLAS threads in the grader and one in
    the sandbox the bits differ. Replaying a test puts the grader's BLAS on one thread."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from grader.judge import testvocab

    testvocab.one_blas_thread()
    blas = [lib for lib in threadpoolctl.threadpool_info() if lib.get("user_api") == "blas"]
    assert blas and all(lib["num_threads"] == 1 for lib in blas)
