"""Classes across the process boundary, and tests that compare printed output.

A course's test compares types (``type(imdb) == tables.Table``, ``isinstance(x, np.ndarray)``,
``type(n) is int``): a class crosses as the names that identify it (``grader.capture.classes``),
compared as Python compares the classes, so a class a student makes and names like the library's
is not the library's. And an otter test whose expected output is what it prints is checked as
otter's doctest checks it (``doctest_match(printed_text(), want)``). Each idiom in a small otter
course of our own, graded here and by otter's rule (``otter_course.otter_points``).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from otter_course import otter_points

from grader.authoring import importing
from grader.authoring.otter import importer as otter_import
from grader.authoring.otter import ok as otter_ok
from grader.capture import ClassRef, decode, encode, to_python, to_wire
from grader.course import config
from grader.judge.grading import Grader
from grader.judge.testruntime import doctest_match

# A library of the course's, shipped beside the notebook, standing in for datascience's ``tables``:
# its tables are no data the grader carries (they stay in the student's process).
TABLES = """
class Table:
    def __init__(self, labels, rows=()):
        self.labels, self.rows = tuple(labels), [tuple(r) for r in rows]

    def select(self, *labels):
        idx = [self.labels.index(x) for x in labels]
        return Table(labels, [[r[i] for i in idx] for r in self.rows])

    def __str__(self):
        lines = [" | ".join(self.labels)] + [" | ".join(str(v) for v in r) for r in self.rows]
        return "\\n".join(lines)
"""

V4 = nbformat.v4


def _code(src: str, value: str | None = None, printed: str | None = None) -> nbformat.NotebookNode:
    cell = V4.new_code_cell(src)
    if printed is not None:
        cell.outputs.append(V4.new_output("stream", name="stdout", text=printed))
    if value is not None:
        cell.outputs.append(V4.new_output("execute_result", {"text/plain": value}, execution_count=1))
    return cell


def _question(name: str, solution: str, *tests: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [
        V4.new_raw_cell(f"# BEGIN QUESTION\nname: {name}\npoints: 1"),
        _code(solution),
        V4.new_raw_cell("# BEGIN TESTS"),
        *tests,
        V4.new_raw_cell("# END TESTS"),
        V4.new_raw_cell("# END QUESTION"),
    ]


MOVIES = "tables.Table(['Title', 'Rating'], [['Up', 8.2], ['Heat', 8.3]])"
ANSWERS = {  # the solution's answer to each question
    "q_table": f"movies = {MOVIES} # SOLUTION",
    "q_isinstance": "top = movies.select('Title') # SOLUTION",
    "q_array": "ratings = np.array([8.2, 8.3]) # SOLUTION",
    "q_int": "count = len(movies.rows) # SOLUTION",
    "q_name": "label = 'Title' # SOLUTION",
    "q_print": "chosen = movies.select('Rating', 'Title') # SOLUTION",
}


def master(folder: Path) -> Path:
    cells = [
        V4.new_raw_cell("# ASSIGNMENT CONFIG\nname: lab\nfiles:\n    - tables.py\n"),
        _code("import numpy as np\nimport tables"),
        *_question("q_table", ANSWERS["q_table"], _code("type(movies) == tables.Table", "True")),
        *_question("q_isinstance", ANSWERS["q_isinstance"], _code("isinstance(top, tables.Table)", "True")),
        *_question("q_array", ANSWERS["q_array"], _code("type(ratings) == np.ndarray", "True")),
        *_question(
            "q_int",
            ANSWERS["q_int"],
            _code("type(count) is int", "True"),
            _code("type(count).__name__ != 'str' and type(count) is not float", "True"),
        ),
        *_question("q_name", ANSWERS["q_name"], _code("type(label) == str", "True")),
        *_question(
            "q_print",
            ANSWERS["q_print"],
            _code("len(chosen.labels)", "2"),
            _code("print(chosen)", printed="Rating | Title\n8.2 | Up\n8.3 | Heat\n"),
        ),
    ]
    nb = V4.new_notebook()
    nb.cells = cells
    folder.mkdir(parents=True)
    (folder / "tables.py").write_text(TABLES)
    nbformat.write(nb, str(folder / "lab.ipynb"))
    return folder / "lab.ipynb"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("classes")
    path = master(root / "master")
    (item,) = otter_import.read(path)
    importing.write([item], root / "config.yaml", course_name="c")
    course = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    return root, path, item, course, Grader(course)


FEEDBACK: dict[str, dict[str, list[str]]] = {}  # each graded submission's feedback, by question


def _submission(lab, name: str, **answers: str) -> tuple[dict[str, float], dict[str, float]]:
    """The points here and by otter's rule of a submission answering as the solution does but for ``answers``."""
    root, path, _, course, grader = lab
    cells = ["import numpy as np\nimport tables"]
    cells += [answers.get(q, a.replace(" # SOLUTION", "")) for q, a in ANSWERS.items()]
    nb = V4.new_notebook()
    nb.cells = [V4.new_code_cell(c) for c in cells]
    out = root / f"{name}.ipynb"
    nbformat.write(nb, str(out))
    card = grader.grade(course.assignment("lab"), out)
    here = {q.id: q.score for q in card.questions}
    FEEDBACK[name] = {q.id: list(q.lines) for q in card.questions}
    sys.path.insert(0, str(path.parent))  # otter runs the notebook beside its files
    try:
        theirs = otter_points(path, nb)
    finally:
        sys.path.remove(str(path.parent))
        sys.modules.pop("tables", None)
    return here, theirs


def test_every_test_of_the_course_imports_with_nothing_left_out(lab):
    _, _, item, _, _ = lab
    assert item.notes == []
    tests = [c["test"] for q in item.questions for c in q.get("checks", [])]
    assert "print(chosen)\nassert doctest_match(printed_text(), 'Rating | Title\\n8.2 | Up\\n8.3 | Heat\\n')" in tests


def test_the_solution_scores_full_marks_as_otter_gives_it(lab):
    here, theirs = _submission(lab, "right")
    assert here == theirs == dict.fromkeys(ANSWERS, 1.0)


def test_a_value_of_another_type_fails_its_type_test_as_in_otter(lab):
    wrong = {
        "q_table": "movies = [['Up', 8.2], ['Heat', 8.3]]",
        "q_array": "ratings = [8.2, 8.3]",
        "q_int": "count = 2.0",
        "q_name": "label = ['Title']",
    }
    here, theirs = _submission(lab, "wrong", **wrong)
    assert here == theirs
    assert here["q_table"] == here["q_array"] == here["q_int"] == here["q_name"] == 0.0


def test_a_class_the_student_makes_and_names_like_the_librarys_is_not_the_librarys(lab):
    """The cheat: a class of the notebook named ``Table`` in a module named ``tables`` (and a
    subclass of ``int`` named ``int``): Python says it is not the library's, and so does the grader.
    Its instance's own ``__class__`` lie is not believed either."""
    fake = (
        "class Table:\n    __module__ = 'tables'\n    __qualname__ = 'Table'\n"
        "    __class__ = property(lambda self: tables.Table)\n"
        "movies = Table()"
    )
    subclass = "class Table(tables.Table):\n    pass\ntop = Table(['Title'])"
    fake_int = "class int(int):\n    __module__ = 'builtins'\ncount = int(2)"
    here, _ = _submission(lab, "cheat", q_table=fake, q_isinstance=subclass, q_int=fake_int)
    assert here["q_table"] == 0.0  # not the library's Table, whatever it says
    assert "`type(movies)` is <class 'tables.Table'>, not the class importable under that name" in " ".join(
        FEEDBACK["cheat"]["q_table"]
    )
    assert here["q_isinstance"] == 1.0  # a subclass is an instance, as isinstance says
    # ``type(count) is int`` fails; ``type(count).__name__ != 'str' and ...`` holds, as Python says
    assert here["q_int"] == 0.5


def test_printed_output_is_compared_as_otters_doctest_compares_it(lab):
    """Printed text: the columns in another order fail as in otter; the same text passes whatever
    printed it (a string holding the table's text)."""
    swapped = "chosen = movies.select('Title', 'Rating')"
    here, theirs = _submission(lab, "swapped", q_print=swapped)
    assert here["q_print"] == theirs["q_print"] == 0.5
    said = " ".join(FEEDBACK["swapped"]["q_print"])  # what the student printed, never the expected text
    assert "`printed_text()` is 'Title | Rating" in said and "Rating | Title" not in said
    text = "chosen = 'Rating | Title\\n8.2 | Up\\n8.3 | Heat'"
    here, theirs = _submission(lab, "text", q_print=text)
    assert here["q_print"] == theirs["q_print"] == 0.5  # ``len(chosen.labels)`` fails on a string


def test_a_class_is_carried_as_the_names_that_identify_it():
    import collections.abc

    class Mine:
        pass

    for kind in (int, np.ndarray, collections.abc.Sequence, Mine, type):
        wire = encode(kind, budget=[1 << 20])
        value = decode(wire)
        assert value.kind == "scalar" and value.origin == "type"
        assert to_wire(value) == wire
        ref = to_python(value)
        assert ref == kind and not ref != kind and hash(ref) == hash(to_python(decode(wire)))
    assert to_python(decode(encode(np.ndarray, budget=[1 << 20]))).__name__ == "ndarray"
    assert decode(encode(Mine, budget=[1 << 20])).describe().startswith("the class ")
    with pytest.raises(Exception, match="malformed"):
        decode({"t": "class", "mro": [["builtins", "int", True, "1"]], "plain": True, "process": "x"})


def test_classes_of_another_process_are_the_same_when_importable_at_the_same_path():
    """The student's classes come from another process: an importable class is the grader's when
    module and name agree; a class named like one but made elsewhere is not."""
    code = (
        "import json, sys, numpy as np\n"
        "from grader.capture import encode\n"
        "class Fake: pass\n"
        "Fake.__module__, Fake.__qualname__ = 'numpy', 'ndarray'\n"
        "class Sub(np.ndarray): pass\n"
        "print(json.dumps([encode(k, budget=[1 << 20]) for k in (np.ndarray, Fake, int, Sub, str)]))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    import json

    nd, fake, integer, sub, text = (to_python(decode(w)) for w in json.loads(run.stdout))
    assert nd == np.ndarray and fake != np.ndarray and nd != fake and fake.importable is False
    assert integer == int and integer != float and text == str  # noqa: E721 - records compared with classes
    assert sub != np.ndarray and sub.subclass_of(ClassRef.of(np.ndarray)) is True
    assert integer.subclass_of(ClassRef.of(str)) is False


@pytest.mark.parametrize(
    ("got", "want", "same"),
    [
        ("a  b\n", "a  b\n", True),
        ("a b\n", "a  b\n", False),  # doctest does not normalise spaces unless asked
        ("True\n", "1\n", True),  # doctest's own rule: ``True`` printed where ``1`` is expected
        ("x\n   \n", "x\n\n", True),  # a line of blanks printed is a blank line
        ("x\n", "x", True),  # the expected output ends in a newline, as doctest reads it
    ],
)
def test_printed_text_is_compared_as_doctest_compares_it(got, want, same):
    assert doctest_match(got, want) is same


def test_the_expected_output_of_a_printing_test_is_read_as_doctest_reads_it():
    assert otter_ok.doctest_want("  a\nb\n") == "  a\nb\n"
    assert otter_ok.doctest_want("a\n\nb\n") == "a\n"  # a blank line ends it
    assert otter_ok.doctest_want("a\tb") == "a       b\n"


def test_an_ok_format_case_that_prints_is_a_test_of_what_it_prints():
    source, problem = otter_ok.case_source(
        ">>> for w in words:\n...     print(w)\na\nb\n>>> print(len(words))\n2\n", None, otter_import.expected_assert
    )
    assert problem is None
    assert source == (
        "for w in words:\n    print(w)\nassert doctest_match(printed_text(), 'a\\nb\\n')\n"
        "print(len(words))\nassert doctest_match(printed_text(), '2\\n')"
    )
