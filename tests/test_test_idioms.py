"""Test cells as nbgrader and otter authors write them: each idiom passes on a correct notebook
and fails on a wrong one, and the cheats a student's process can try earn nothing.

The test runs over the notebook's own names in the student's sandbox, where what each call into
the student's code returns is recorded, then runs again in the grader on those records
(``grader.judge.testcheck``)."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import notebook_with

from grader.course import config
from grader.judge.grading import Grader

SOLUTION = [
    "import numpy as np\nimport pandas as pd",
    "def squares(n):\n    if n < 1:\n        raise ValueError('n must be at least 1')\n"
    "    return [i ** 2 for i in range(1, n + 1)]",
    "def sum_of_squares(n):\n    return sum(squares(n))",
    "def fiberator():\n    x, y = 0, 1\n    while True:\n        yield x\n        x, y = y, x + y",
    "class ShapeError(ValueError):\n    pass\n"
    "def check_square(a):\n    if a.shape[0] != a.shape[1]:\n        raise ShapeError('not square')\n    return True",
    "class Account:\n    def __init__(self):\n        self.balance, self.log = 0, []\n"
    "    def deposit(self, x):\n        self.balance += x\n        return self\n"
    "    def __enter__(self):\n        self.log.append('open')\n        return self\n"
    "    def __exit__(self, *exc):\n        self.log.append('closed')\n        return False",
    "data = pd.DataFrame({'flavor': ['mint', 'vanilla', 'mint', 'lime'], 'price': [4.0, 1.5, 5.0, 2.0]})\n"
    "price_by_flavor = data.groupby('flavor')['price'].mean()",
    "def greet(name):\n    print('Hello,', name)",
    "def fill_corners(a, items):\n    a[0, 0], a[-1, -1] = 1, -1\n    items.append(len(items))",
    "def mc_mean(n):\n    return np.random.uniform(0, 1, n).mean()",
    "import math\nOPS = {'sqrt': math.sqrt, 'sq': squares}",
    "grid = np.arange(3)\nrow = [0, grid, 'x']",
]

TESTS = {
    # nbgrader: a test cell passes when it raises nothing.
    "prints": "print('Success!', squares(2))",
    "raises": "try:\n    squares(0)\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('did not raise')",
    "uses": "orig_squares = squares\ndel squares\ntry:\n    sum_of_squares(1)\nexcept NameError:\n    pass\n"
    "else:\n    raise AssertionError('sum_of_squares does not use squares')\nfinally:\n    squares = orig_squares",
    "helper": "def check(fn, n):\n    assert fn(n) == sum(i * i for i in range(1, n + 1))\nfor n in range(1, 6):\n"
    "    check(sum_of_squares, n)",
    "generator": "f = fiberator()\nassert next(f) == 0\nassert next(f) == 1\n"
    "first = [x for _, x in zip(range(6), fiberator())]\nassert first == [0, 1, 1, 2, 3, 5]\n"
    "assert type(f).__name__ == 'generator'",
    "subclass": "try:\n    check_square(np.ones((2, 3)))\nexcept ValueError:\n    pass\nelse:\n"
    "    raise AssertionError('accepts a non-square array')\nassert check_square(np.eye(2))",
    "with": "acct = Account()\nwith acct as a:\n    a.deposit(3).deposit(4)\n    assert a.balance == 7\n"
    "assert acct.log == ['open', 'closed']\nassert isinstance(acct, Account)\n"
    "assert acct is not None and acct.deposit(0) is not None\n"  # an object of the student's class is no None
    "assert acct.deposit(0) is acct and acct is not Account()",  # two records of one object are one
    "inputs_from_values": "n = len(squares(3))\nassert squares(n + 1)[-1] == 16",
    "pandas": "assert len(data['flavor'].unique()) == 3\nfor l in ['mint', 'vanilla', 'lime']:\n"
    "    assert l in data['flavor'].unique()\nassert type(price_by_flavor) == pd.Series\n"
    "assert np.isclose(price_by_flavor['mint'], 4.5)\n"
    "data['double'] = data['price'] * 2\nassert data['double'].sum() == 25",
    # What the student's function prints, caught by the test (nbgrader's way, and a bare one)
    "redirect": "import io, contextlib\nbuf = io.StringIO()\nwith contextlib.redirect_stdout(buf):\n    greet('Ann')\n"
    "assert buf.getvalue() == 'Hello, Ann\\n', buf.getvalue()",
    "stdout": "import io, sys\nsys.stdout = io.StringIO()\ngreet('Bo')\nout = sys.stdout.getvalue()\n"
    "sys.stdout = sys.__stdout__\nassert out.strip() == 'Hello, Bo'",
    # A helper of the test's whose branches return its result, used in arithmetic (a tiered score)
    "tiers": "def tier(n):\n    if n >= 10:\n        return 30\n    else:\n        return 0\n"
    "k = sum(squares(3))\nscore = tier(k) + 1\nassert squares(2) == [1, 4] and score == 31",
    # The student's own source, read where it is
    "source": "import inspect\nassert 'sum(squares(' in inspect.getsource(sum_of_squares)",
    # What a class or an object of the student's has, and which object it is: asked of the object itself
    "introspect": "assert 'deposit' in dir(Account) and hasattr(Account, '__exit__')\n"
    "a = Account().deposit(3).deposit(4)\nassert vars(a)['balance'] == 7 and 'log' in dir(a)\n"
    "alias = squares\nassert id(alias) == id(squares)",
    # Two of the student's functions compared with ``==``: one function, or two
    "functions": "f = fiberator\nassert f == fiberator and f != squares and not (sum_of_squares == squares)\n"
    "assert next(f()) == 0\nimport math\nassert OPS['sqrt'] == math.sqrt and OPS['sq'] == squares",
    # The student's function fills the test's own array and list in place; its value is not used
    "in_place": "grid = np.zeros((2, 3))\nseen = []\nfill_corners(grid, seen)\nfor _ in range(2):\n"
    "    fill_corners(grid, items=seen)\nassert grid[0, 0] == 1 and grid[-1, -1] == -1 and grid.sum() == 0\n"
    "assert seen == [0, 1, 2]\nkept = [7]\nr = fill_corners(np.zeros((2, 2)), kept)\nassert r is None and kept == [7, 1]",
    # A list holding the very array it is compared with: Python compares that element by identity
    "same_array": "assert row == [0, grid, 'x']\nassert row[1] is grid",
    # The test seeds NumPy before each of two calls, and draws with the same seed itself
    "reseeded": "np.random.seed(42)\na = mc_mean(500)\nnp.random.seed(42)\nb = mc_mean(500)\n"
    "assert a == b, 'use np.random so that the seed makes it reproducible'\n"
    "np.random.seed(0)\nx = np.random.uniform(0, 1, 10)\nnp.random.seed(0)\nassert np.isclose(mc_mean(10), x.mean())",
}

WRONG = [
    SOLUTION[0],
    "def squares(n):\n    return [i ** 2 for i in range(n)]",
    "def sum_of_squares(n):\n    return sum(i * i for i in range(n))",
    "def fiberator():\n    x, y = 0, 1\n    while True:\n        yield y\n        x, y = y, x + y",
    "def check_square(a):\n    return a.shape[0] == a.shape[1]",
    "class Account:\n    def __init__(self):\n        self.balance, self.log = 0, []\n"
    "    def deposit(self, x):\n        self.balance = x\n        return self\n"
    "    def __enter__(self):\n        return self\n    def __exit__(self, *exc):\n        return True",
    "data = pd.DataFrame({'flavor': ['mint', 'vanilla', 'mint', 'lime', 'fig'], 'price': [4.0, 1.5, 5.0, 2.0, 1.0]})\n"
    "price_by_flavor = data.groupby('flavor')['price'].sum()",
    "def greet(name):\n    print('Hi', name)",
    "def fill_corners(a, items):\n    a = a.copy()\n    a[0, 0], a[-1, -1] = 1, -1\n    items = items + [len(items)]",
    "import random\ndef mc_mean(n):\n    return sum(random.random() for _ in range(n)) / n",
    "import math\nOPS = {'sqrt': lambda x: math.sqrt(x), 'sq': squares}",
    "grid = np.arange(3)\nrow = [0, grid + 1, 'x']",
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("idioms")
    (root / "solutions/hw").mkdir(parents=True)
    notebook_with(SOLUTION, root / "solutions/hw/hw.ipynb")
    questions = [{"id": name, "points": 1, "checks": [{"test": test}]} for name, test in TESTS.items()]
    import yaml

    (root / "config.yaml").write_text(
        yaml.safe_dump(
            {"course": {"name": "idioms"}, "assignments": {"hw": {"variants": {"count": 0}, "questions": questions}}}
        )
    )
    course = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    return root, course, Grader(course)


def grade(setup, name, cells):
    root, course, grader = setup
    card = grader.grade(course.assignment("hw"), notebook_with(cells, root / f"{name}.ipynb"))
    return {q.id: q for q in card.questions}


def test_every_idiom_passes_on_the_solution(setup):
    qs = grade(setup, "solution", SOLUTION)
    assert {k: (q.score, q.lines) for k, q in qs.items()} == {k: (1, ["Correct."]) for k in TESTS}


def test_every_idiom_fails_on_a_wrong_notebook(setup):
    qs = grade(setup, "wrong", WRONG)
    assert {k: q.score for k, q in qs.items()} == {k: 0 for k in TESTS} | {"prints": 1}
    # The test's own message, from the statement that raised it (not the ``finally`` that ran after).
    assert qs["raises"].lines == ["did not raise"]
    assert qs["uses"].lines == ["sum_of_squares does not use squares"]
    assert qs["subclass"].lines == ["accepts a non-square array"]
    assert qs["helper"].lines == ["`fn(n)` is 0, which is not what the test expects."]
    assert qs["generator"].lines == ["`next(f)` should be 0; it is 1."]
    assert qs["with"].lines == ["`a.balance` should be 7; it is 4."]
    assert qs["inputs_from_values"].lines == ["`squares(n + 1)[-1]` should be 16; it is 9."]
    assert qs["pandas"].lines == ["`len(data['flavor'].unique())` should be 3; it is 4."]


def test_a_print_only_test_fails_when_the_code_it_calls_raises(setup):
    qs = grade(setup, "prints_raises", [SOLUTION[0], "def squares(n):\n    raise RuntimeError('boom')"])
    assert qs["prints"].score == 0
    assert qs["prints"].lines == ["`squares(2)` raised RuntimeError: boom"]


CHEATS = {
    # Patching the test's world in the student's process: only the student's own run of the test sees it.
    "builtins": "import builtins\nbuiltins.AssertionError = type('Quiet', (Exception,), {})\n"
    "builtins.isinstance = lambda *a: True\nbuiltins.next = lambda *a: 0",
    "settrace": "import sys\ndef tracer(frame, event, arg):\n    if frame.f_code.co_filename == '<check>':\n"
    "        frame.f_globals['AssertionError'] = type('Quiet', (Exception,), {})\n    return tracer\n"
    "sys.settrace(tracer)",
    "frames": "import sys\n_real = squares\ndef squares(n):\n"
    "    sys._getframe(1).f_globals['squares'] = lambda n: [i * i for i in range(1, n + 1)]\n"
    "    return []",
    "always_equal": "class Yes:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n"
    "    def __bool__(self):\n        return True\n    def __len__(self):\n        return 3\n"
    "def squares(n):\n    return Yes()\ndef sum_of_squares(n):\n    return Yes()\n"
    "def check_square(a):\n    return Yes()",
    "ndarray_subclass": "class Liar(np.ndarray):\n    def __eq__(self, other):\n        return np.ones(np.shape(other), bool)\n"
    "    def __array_ufunc__(self, *a, **k):\n        return np.ones((), bool)\n"
    "def squares(n):\n    return np.zeros(n, int).view(Liar)",
    "nose_and_numpy": "np.isclose = lambda *a, **k: True\nnp.allclose = lambda *a, **k: True",
    # Writing the records directly: a record that is not plain data ends the run; one that is says
    # only what the student's code could have returned anyway.
    "records": "import gc\n_wrong = squares\ndef squares(n):\n    for o in gc.get_objects():\n"
    "        if type(o).__name__ == 'Recorder':\n"
    "            o.records.append({'t': 'tuple', 'items': [{'t': 'str', 'v': 'v'}, {'t': 'str', 'v': '/9.0'}, "
    "{'t': 'forged'}]})\n    return _wrong(n)",
}


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_cheats_in_the_students_process_earn_nothing(setup, cheat):
    qs = grade(setup, f"cheat_{cheat}", [*WRONG, CHEATS[cheat]])
    assert {k: q.score for k, q in qs.items() if k != "prints"} == {k: 0 for k in TESTS if k != "prints"}


def test_nbgrader_partial_credit_is_the_value_a_test_cell_ends_with(tmp_path):
    # nbgrader reads a test cell's output as the points it earns; `grader import` writes that value
    # as `partial_credit(...)`.
    from grader.authoring.nbgrader.importer import test_checks

    cell = "n = len(squares(4))\nn / 4 * 2"
    checks, problem = test_checks(cell, "q")
    assert problem is None and checks == [
        {"test": "n = len(squares(4))\npartial_credit(n / 4 * 2)", "stderr_fails": True}
    ]
    assert test_checks("print(squares(2))", "q")[0] == [{"test": "print(squares(2))", "stderr_fails": True}]
    (tmp_path / "solutions/hw").mkdir(parents=True)
    notebook_with(SOLUTION[:2], tmp_path / "solutions/hw/hw.ipynb")
    import yaml

    (tmp_path / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "course": {"name": "p"},
                "assignments": {
                    "hw": {
                        "variants": {"count": 0},
                        "questions": [
                            {"id": "half", "points": 2, "checks": [{"test": "partial_credit(len(squares(2)) / 2)"}]},
                            {"id": "text", "points": 2, "checks": [{"test": "partial_credit('not a number')"}]},
                        ],
                    }
                },
            }
        )
    )
    course = dataclasses.replace(config.load(tmp_path / "config.yaml"), cache_dir=tmp_path / "cache")
    card = Grader(course).grade(course.assignment("hw"), tmp_path / "solutions/hw/hw.ipynb")
    assert {q.id: (q.score, q.status) for q in card.questions} == {"half": (1, "partial"), "text": (2, "passed")}


def test_a_test_stopped_in_the_students_process_says_where_and_why(setup):
    # The student's builtins break the test's own loop in the student's run of it; the grader's run
    # goes on and finds no record for the call it makes next.
    qs = grade(setup, "stopped", [*SOLUTION, "import builtins\nbuiltins.range = None"])
    assert qs["helper"].score == 0
    assert qs["helper"].lines == [
        "`sum_of_squares` was not reached when the test ran in your notebook: the test stopped first with TypeError."
    ]


def test_a_chain_that_draws_is_taken_where_the_notebooks_figures_are():
    """``ax = prices.plot()`` on a series the test holds as data: pandas draws on pyplot's current
    figure, the state of the process it runs in, so the site is the student's process's, never
    computed in the grader's (where its lines piled up from notebook to notebook)."""
    from grader.judge.testrewrite import program

    prog = program("prices = squares(3)\nax = prices.plot()\nm = prices.mean()\nassert len(ax.lines) == 1")
    sites = {site.source: site.local for site in prog.sites}
    assert sites["prices.plot()"] is False
    assert sites["prices.mean()"] is True  # computed where the grader holds the data, as before


def test_what_a_call_prints_is_kept_to_its_first_characters():
    """A student's function that prints forever in a call from the test costs the run no memory:
    the record keeps the first characters only."""
    from grader.run.test_recorder import MAX_PRINTED, _FirstText

    out = _FirstText(MAX_PRINTED)
    for _ in range(1000):
        assert out.write("x" * 1000) == 1000
    assert out.getvalue() == "x" * MAX_PRINTED


def test_an_array_compared_as_one_value_is_named_as_such_for_the_student():
    """otter's stored output ``[1, 6, 2, 3]`` becomes ``assert (size_counts) == [1, 6, 2, 3]``; a
    student who gives an array meets NumPy's ambiguous truth value. The student reads what kind of
    value the test expects, not NumPy's advice to call ``a.any()``."""
    from grader.judge import verdicts as v
    from grader.judge import wording

    found = v.TestRaised(
        "ValueError",
        "The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()",
        "(size_counts) == [1, 6, 2, 3]",
    )
    text = wording.finding(found)
    assert text.startswith("the test compares `(size_counts) == [1, 6, 2, 3]` as one value, but yours is a NumPy array")
    assert "a.any()" not in text
    other = v.TestRaised("ValueError", "math domain error", "f(x) == 1")
    assert wording.finding(other) == "the test raised ValueError while checking `f(x) == 1`: math domain error"
