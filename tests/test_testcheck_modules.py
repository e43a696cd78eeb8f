"""``test`` checks over a module the assignment ships: the test's import gives the grader's own copy
of the module's code, carrying the plain-data values the notebook set on it at the test's point, as
a test cell run in the student's kernel sees them; its functions stay the grader's."""

from __future__ import annotations

import dataclasses
import os
import sys

import pytest
from conftest import notebook_with

from grader.capture import decode, to_python
from grader.course import config
from grader.judge.grading import Grader
from grader.judge.testmodules import CourseModules
from grader.run import test_recorder

HELPER = '''"""The assignment's own helper module."""
import numpy as np

LIMIT = 5
NAME = "foo"
WEIGHTS = [1, 2]
TABLE = np.zeros(3)


def doubled():
    return LIMIT * 2


def check(value):
    return value == 42
'''
PACKAGE_INIT = "from . import mod\nfrom .mod import SCALE as DEFAULT\n"
PACKAGE_MOD = "SCALE = 1.0\n\ndef scaled(x):\n    return SCALE * x\n"
UNTOUCHED = "VALUE = 7\n"

CONFIG = """
course:
  name: tests
assignments:
  hw:
    variants: {count: 0}
    data: [helper.py, untouched.py, pkg/__init__.py, pkg/mod.py]
    questions:
      - id: plain
        points: 1
        checks:
          - test: |
              import helper
              assert helper.LIMIT == 10
              assert helper.doubled() == 20
            after_line: done = 1
      - id: alias
        points: 1
        checks:
          - test: |
              import helper as h
              assert h.NAME == "baz"
              assert np.allclose(h.TABLE, [0.0, 1.0, 0.0])
            after_line: done = 1
      - id: from
        points: 1
        checks:
          - test: |
              from helper import WEIGHTS
              assert WEIGHTS == [1, 2, 3]
            after_line: done = 1
      - id: package
        points: 1
        checks:
          - test: |
              import pkg.mod
              from pkg import mod
              assert mod.SCALE == 2.5 and pkg.mod is mod
              assert pkg.mod.scaled(2) == 5.0
            after_line: done = 1
      - id: shipped
        points: 1
        checks:
          - test: |
              import untouched
              assert untouched.VALUE == 7
            after_line: done = 1
      - id: answer
        points: 1
        checks:
          - test: |
              import helper
              assert helper.check(answer)
            after_line: done = 1
"""

SOLUTION = [
    "import helper\nhelper.LIMIT = 10\nhelper.NAME = 'baz'\nhelper.WEIGHTS.append(3)\nhelper.TABLE[1] = 1.0",
    "import pkg.mod\npkg.mod.SCALE = 2.5",
    "answer = 42",
    "done = 1",
    "helper.LIMIT = 99  # a later cell: the test judges the value at its point",
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("testcheck_modules")
    folder = root / "solutions/hw"
    (folder / "pkg").mkdir(parents=True)
    notebook_with(SOLUTION, folder / "hw.ipynb")
    (folder / "helper.py").write_text(HELPER)
    (folder / "untouched.py").write_text(UNTOUCHED)
    (folder / "pkg/__init__.py").write_text(PACKAGE_INIT)
    (folder / "pkg/mod.py").write_text(PACKAGE_MOD)
    (root / "config.yaml").write_text(CONFIG)
    course = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    return root, course, Grader(course)  # the process's warm executor, shared with other tests


def grade(setup, name, cells):
    root, course, grader = setup
    card = grader.grade(course.assignment("hw"), notebook_with(cells, root / f"{name}.ipynb"))
    return {q.id: q for q in card.questions}


def test_the_solution_passes_with_the_values_it_set_on_the_course_modules(setup):
    qs = grade(setup, "solution", SOLUTION)
    assert {k: q.score for k, q in qs.items()} == dict.fromkeys(qs, 1)


def test_a_notebook_that_leaves_the_modules_as_shipped_fails_what_asks_for_a_change(setup):
    qs = grade(setup, "untouched", ["answer = 41", "done = 1"])
    assert {k: q.score for k, q in qs.items()} == {**dict.fromkeys(qs, 0), "shipped": 1}
    assert qs["plain"].lines == ["`helper.LIMIT` should be 10; it is 5."]


def test_replacing_the_modules_functions_earns_nothing(setup):
    cheat = [
        "import helper, pkg.mod\nhelper.check = lambda *a: True\nhelper.doubled = lambda: 20\n"
        "pkg.mod.scaled = lambda x: 5.0\nhelper.LIMIT = 7\npkg.mod.SCALE = 2.5",
        "answer = 41",
        "done = 1",
    ]
    qs = grade(setup, "cheat", cheat)
    assert qs["answer"].score == 0 and qs["plain"].score == 0
    assert qs["package"].score == 1  # SCALE, a value, crossed; scaled() is the grader's own, and right


def test_only_the_courses_modules_are_recorded_and_only_as_plain_data(tmp_path, monkeypatch):
    (tmp_path / "helper.py").write_text(HELPER)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "helper", raising=False)
    import numpy

    source = "__grader_modules__(('helper', 'numpy', 'numpy.linalg', 'helper.LIMIT'))"
    try:
        import helper  # as the notebook left it: values that are not data, and one too large to send

        helper.OBJECT, helper.LONG, helper.LIMIT = object(), [None] * 31_000, 10
        got = test_recorder.record_test(source, {}, 0, [10**7], workdir=os.getcwd())
    finally:
        sys.modules.pop("helper", None)
    records = [r.data for r in decode(got).data]  # each a tuple of values: kind, key, payload
    modules = [tuple(p.data for p in r) for r in records if r[0].data == "m"]
    assert modules == [("m", "helper", "helper.py")]  # numpy is a library: never recorded
    values = {r[2].data: r[3] for r in records if r[0].data == "ma"}
    assert set(values) == {"LIMIT", "NAME", "WEIGHTS", "TABLE"}  # no function, no module, no object
    assert to_python(values["LIMIT"]) == 10
    assert numpy.__name__ == "numpy"


def test_the_graders_copy_never_enters_sys_modules_and_a_library_is_imported_as_usual(tmp_path):
    (tmp_path / "helper.py").write_text(HELPER)
    modules = CourseModules(tmp_path, {})
    load = modules.importer(__import__)
    helper = load("helper")
    assert helper.LIMIT == 5 and "helper" not in sys.modules
    assert load("numpy") is sys.modules["numpy"]
    with pytest.raises(ModuleNotFoundError):
        load("not_shipped_here")
