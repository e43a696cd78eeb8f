"""The pytest plugin, driven through real pytest runs, and the JUnit writer measured against it."""

from __future__ import annotations

import copy
import sys
import time
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from _pytest.junitxml import shorten_message
from conftest import IN_ORDER, ROOT

from grader.course import config
from grader.errors import SolutionError
from grader.files import sha256_file
from grader.judge.grading import Grader
from grader.outputs.junit import shorten, write_junit

SKELETON = ROOT / "assignments/attention_numpy/attention_numpy.ipynb"
EXAMPLES = ROOT / "examples/attention_numpy"
NAMES = sorted(p.stem for p in EXAMPLES.glob("*.ipynb"))  # the order pytest collects them in
QUESTIONS = ("qkv", "scores", "scaled", "softmax", "weights", "output")
COUNTER = """
from pathlib import Path
from grader.judge.grading import Grader

_grade = Grader.grade

def _counted(self, assignment, path, **kwargs):
    with open(Path(__file__).parent / "graded.log", "a") as log:
        log.write(Path(path).stem + "\\n")
    return _grade(self, assignment, path, **kwargs)

Grader.grade = _counted
"""


def run(pytester, *args):
    return pytester.runpytest_subprocess(
        *IN_ORDER, "--grader-config", str(ROOT / "config.yaml"), "--scorecard-dir", str(pytester.path / "cards"), *args
    )


@pytest.fixture(scope="module", autouse=True)
def graded_once():
    """Each notebook graded once in this process for the whole module: the in-process runs here are
    about the plugin (which items run, their outcomes, the scorecards written), and an example's
    scorecard is the same in each of them. Every call still goes through Grader.grade (``graded``
    records them all); the subprocess runs grade for themselves."""
    cards: dict[tuple[str, str, str, str], object] = {}
    original = Grader.grade

    def grade(self, assignment, path, **kwargs):
        key = (assignment.name, assignment.config_digest, sha256_file(Path(path)), repr(sorted(kwargs.items())))
        if key not in cards:
            cards[key] = original(self, assignment, path, **kwargs)
        return copy.deepcopy(cards[key])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Grader, "grade", grade)
        yield


@pytest.fixture
def graded(monkeypatch):
    """Records every notebook the Grader grades in this process, with its scorecard."""
    calls: list[tuple[Path, object]] = []
    original = Grader.grade

    def grade(self, assignment, path, **kwargs):
        card = original(self, assignment, path, **kwargs)
        calls.append((Path(path), card))
        return card

    monkeypatch.setattr(Grader, "grade", grade)
    return calls


def failures(result) -> str:
    """The report's FAILURES section alone: the short summary after it repeats each message in full
    when pytest runs under CI (``CI`` set), and cut to the terminal's width elsewhere."""
    return result.stdout.str().split("short test summary info")[0]


def run_here(pytester, *args):
    """A pytest run in this process, so the ``graded`` fixture sees what it grades."""
    return pytester.runpytest_inprocess(
        *IN_ORDER,
        "--grader-config",
        str(ROOT / "config.yaml"),
        "--scorecard-dir",
        str(pytester.path / "cards"),
        "-p",
        "no:cacheprovider",
        *args,
    )


def cards_written(pytester) -> list[str]:
    folder = pytester.path / "cards"
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def test_one_item_per_question_and_feedback_as_failure_text(pytester):
    result = run(
        pytester, "--submission", str(EXAMPLES / "carol_no_sqrt.ipynb"), "--assignment", "attention_numpy", "-v"
    )
    result.assert_outcomes(passed=5, failed=1)  # weights and output pass: her one mistake is carried forward
    result.stdout.fnmatch_lines(
        [
            "grader: *config.yaml · assignment attention_numpy · 1 submission(s) · executor *",
            "*carol_no_sqrt.ipynb::scaled FAILED*",
            "*_ question scaled: Scaled scores _*",
            "Scaled scores: failed, 0/2 points",
            "  - Likely mistake: The scores are not divided by sqrt(d_k).",
        ]
    )
    card = yaml.safe_load((pytester.path / "cards/carol_no_sqrt.yaml").read_text())
    assert (card["score"], card["max_score"], card["status"]) == (9, 11, "graded")


def test_collect_only_lists_every_item_and_runs_no_notebook(pytester, graded):
    result = run_here(pytester, "--submission", str(EXAMPLES), "--collect-only", "-q")
    assert result.ret == 0
    listed = [line.split("::") for line in result.outlines if "::" in line]
    assert [(Path(p).stem, q) for p, q in listed] == [(n, q) for n in NAMES for q in QUESTIONS]
    assert graded == [] and cards_written(pytester) == []


def test_folder_of_submissions_and_keyword_selection(pytester):
    result = run(pytester, "--submission", str(EXAMPLES), "-k", "qkv")
    # 8 submissions, one qkv item each; alice, bob, carol, dave, frank, grace pass qkv
    result.assert_outcomes(passed=6, failed=2)
    assert len(list((pytester.path / "cards").glob("*.yaml"))) == 8


def test_keyword_selection_grades_only_the_selected_submissions(pytester, graded):
    result = run_here(pytester, "--submission", str(EXAMPLES), "-k", "carol_no_sqrt and scaled")
    result.assert_outcomes(failed=1, deselected=47)
    assert [p.stem for p, _ in graded] == ["carol_no_sqrt"]
    assert cards_written(pytester) == ["carol_no_sqrt"]
    card = yaml.safe_load((pytester.path / "cards/carol_no_sqrt.yaml").read_text())
    assert [q["id"] for q in card["questions"]] == list(QUESTIONS)  # the whole notebook was graded


def test_exitfirst_stops_grading_at_the_first_failure(pytester, graded):
    result = run_here(pytester, "--submission", str(EXAMPLES), "-x")
    # alice and bob earn everything; carol's third question is the first failure
    result.assert_outcomes(passed=14, failed=1)
    assert [p.stem for p, _ in graded] == ["alice_torch", "bob_correct", "carol_no_sqrt"]
    assert cards_written(pytester) == ["alice_torch", "bob_correct", "carol_no_sqrt"]


def test_each_submission_is_graded_once_for_all_its_items(pytester, graded):
    result = run_here(
        pytester,
        "--submission",
        str(EXAMPLES / "dave_wrong_axis.ipynb"),
        "--submission",
        str(EXAMPLES / "grace_half_done.ipynb"),
    )
    result.assert_outcomes(passed=7, failed=5)  # dave's output is right given his weights (carried forward)
    assert [p.stem for p, _ in graded] == ["dave_wrong_axis", "grace_half_done"]


def start_pytest(pytester, name: str, *args: str):
    """A pytest run in a subprocess, started and not waited for (``pytester.runpytest_subprocess``
    waits, and keeps its output in files of one name): ``finish`` waits for it."""
    out, err = (open(pytester.path / f"{name}.{stream}", "w+", encoding="utf-8") for stream in ("out", "err"))  # noqa: SIM115
    proc = pytester.popen(
        [sys.executable, "-m", "pytest", *IN_ORDER, f"--basetemp={pytester.path / f'{name}-tmp'}", *args],
        stdout=out,
        stderr=err,
    )
    return proc, out, err, time.monotonic()


def finish(started) -> pytest.RunResult:
    proc, out, err, began = started
    try:
        ret = proc.wait(timeout=600)
    finally:
        proc.kill()  # a run that overstayed its time (a no-op on a run that ended)
    lines = []
    for f in (out, err):
        f.seek(0)
        lines.append(f.read().splitlines())
        f.close()
    return pytest.RunResult(ret, lines[0], lines[1], time.monotonic() - began)


def test_xdist_gives_the_serial_outcomes_and_grades_each_submission_once(pytester):
    outcomes, cards, runs = {}, {}, {}
    # Both runs at once: each mostly waits on its notebooks' processes.
    for mode, extra in (("serial", []), ("parallel", ["-n", "2"])):
        pytester.makepyfile(**{f"count_{mode}": COUNTER.replace("graded.log", f"{mode}.log")})
        runs[mode] = start_pytest(
            pytester,
            mode,
            "--grader-config",
            str(ROOT / "config.yaml"),
            "--scorecard-dir",
            str(pytester.path / mode),
            "--submission",
            str(EXAMPLES),
            "-p",
            f"count_{mode}",
            "-p",
            "no:cacheprovider",
            f"--junitxml={pytester.path / f'{mode}.xml'}",
            *extra,
        )
    results = {mode: finish(started) for mode, started in runs.items()}
    for mode, result in results.items():
        xml = pytester.path / f"{mode}.xml"
        # 7 more than before carry-forward: carol's weights and output, dave's output, erin's four later steps
        result.assert_outcomes(passed=31, failed=17)
        log = pytester.path / f"{mode}.log"
        assert sorted(log.read_text().split()) == NAMES  # each notebook graded once, by one worker
        outcomes[mode] = sorted(
            (
                c.get("classname"),
                c.get("name"),
                c.findtext("failure"),
                tuple((p.get("name"), p.get("value")) for p in c.iter("property")),
            )
            for c in ET.parse(xml).getroot().iter("testcase")
        )
        cards[mode] = {}
        for path in sorted((pytester.path / mode).glob("*.yaml")):
            card = yaml.safe_load(path.read_text())
            card["execution"].pop("time")
            cards[mode][path.stem] = card
    result.stdout.fnmatch_lines(["grader: distributed with --dist loadfile"])
    assert len(outcomes["serial"]) == 48 and outcomes["parallel"] == outcomes["serial"]
    assert sorted(cards["serial"]) == NAMES and cards["parallel"] == cards["serial"]


def test_invalid_notebook_still_gets_items_and_a_scorecard(pytester):
    result = run(pytester, "--submission", str(EXAMPLES / "henry_not_a_notebook.ipynb"))
    result.assert_outcomes(failed=6)  # and no collection error
    reason = "The file is not JSON, so not a notebook (line 1: Expecting value)."
    assert failures(result).count(f"(notebook invalid_notebook: {reason})") == 6
    card = yaml.safe_load((pytester.path / "cards/henry_not_a_notebook.yaml").read_text())
    assert card["status"] == "invalid_notebook"
    assert card["reason"] == reason


def test_a_grading_error_fails_the_items_with_one_line(pytester, monkeypatch):
    calls = []

    def broken(self, assignment, path, **kwargs):
        calls.append(path)
        raise SolutionError("The solution notebook raised ValueError in cell 3.\nFix the solution first.")

    monkeypatch.setattr(Grader, "grade", broken)
    result = run_here(pytester, "--submission", str(EXAMPLES / "bob_correct.ipynb"), "--tb=long")
    result.assert_outcomes(failed=6)  # each item fails; nothing is a collection error
    line = (
        "bob_correct.ipynb could not be graded: The solution notebook raised ValueError in cell 3. "
        "Fix the solution first."
    )
    assert failures(result).count(f"\n{line}\n") == 6
    assert "Traceback" not in result.stdout.str() and "raise SolutionError" not in result.stdout.str()
    assert len(calls) == 1  # the failure is remembered for the submission's other items
    assert cards_written(pytester) == []


def test_unknown_assignment_is_a_usage_error(pytester):
    result = run(pytester, "--submission", str(SKELETON), "--assignment", "nope")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["ERROR: Unknown assignment 'nope'; *config.yaml defines: attention_numpy*"])


def test_junit_xml_comes_from_pytest(pytester):
    xml = pytester.path / "junit.xml"
    run(pytester, "--submission", str(EXAMPLES / "dave_wrong_axis.ipynb"), f"--junitxml={xml}")
    text = xml.read_text()
    assert 'name="weights"' in text and "softmax is taken over columns" in text


def test_the_junit_writer_matches_a_pytest_run(pytester, graded):
    theirs_file = pytester.path / "pytest.xml"
    run_here(
        pytester,
        "--submission",
        str(EXAMPLES),
        "--rootdir",
        str(EXAMPLES),
        f"--junitxml={theirs_file}",
        "-o",
        "junit_suite_name=attention_numpy",
    )
    course = config.load(ROOT / "config.yaml")
    ours_file = write_junit(graded, course, course.assignment("attention_numpy"), pytester.path / "out/junit.xml")
    theirs, ours = ET.parse(theirs_file).getroot(), ET.parse(ours_file).getroot()

    assert (ours.tag, ours.attrib) == (theirs.tag, theirs.attrib) == ("testsuites", {"name": "pytest tests"})
    [suite], [their_suite] = list(ours), list(theirs)
    assert list(suite.attrib) == list(their_suite.attrib)
    for key in ("name", "errors", "failures", "skipped", "tests", "hostname"):
        assert suite.get(key) == their_suite.get(key), key
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("attention_numpy", "48", "17")
    assert datetime.fromisoformat(suite.get("timestamp")).tzinfo is not None and float(suite.get("time")) > 0

    def described(case: ET.Element):
        failure = case.find("failure")
        return (
            case.tag,
            case.get("classname"),
            case.get("name"),
            list(case.attrib),
            [(p.get("name"), p.get("value")) for p in case.iter("property")],
            None if failure is None else (failure.get("message"), failure.text),
        )

    assert [described(c) for c in suite] == [described(c) for c in their_suite]
    # The points: suite properties, two per case in the order of the cases, the same in both files
    points = [(p.get("name"), p.get("value")) for p in suite.find("properties")]
    assert points == [(p.get("name"), p.get("value")) for p in their_suite.find("properties")]
    assert [n for n, _ in points[:2]] == [
        f"score:{NAMES[0]}.ipynb::{QUESTIONS[0]}",
        f"max_score:{NAMES[0]}.ipynb::{QUESTIONS[0]}",
    ]
    assert len(points) == 2 * 48 and not any(c.find("properties") is not None for c in suite.iter("testcase"))
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    assert list(cases) == [(f"{n}.ipynb", q) for n in NAMES for q in QUESTIONS]
    scaled = cases[("carol_no_sqrt.ipynb", "scaled")].find("failure")
    assert scaled.get("message").startswith("Scaled scores: failed, 0/2 points\n")
    assert scaled.text.endswith("\n  - Likely mistake: The scores are not divided by sqrt(d_k).")
    assert cases[("bob_correct.ipynb", "qkv")].find("failure") is None
    for q in QUESTIONS:
        assert "(notebook invalid_notebook: The file is not JSON" in cases[("henry_not_a_notebook.ipynb", q)].find(
            "failure"
        ).get("message")


@pytest.mark.parametrize(
    "text",
    [
        "short",
        "",
        "head\n  - " + "x" * 600,
        "y" * 700,
        "head\n" + "\n".join(f"  - line {i} " + "z" * 60 for i in range(20)),
    ],
)
def test_failure_messages_are_shortened_as_pytest_shortens_them(text):
    assert shorten(text) == shorten_message(text)
