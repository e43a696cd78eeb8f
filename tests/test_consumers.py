"""Every output read the way its consumer reads it, with validators written from the published specs.

- Classroom 50's ``result.json``: tests/schemas/classroom50-result-v1.schema.json (its
  ``classroom50/result/v1`` contract) with jsonschema, plus the cross-field rules its runner checks
  in code (a score never above its maximum);
- Gradescope's ``results.json``: tests/schemas/gradescope-results.schema.json (the autograder
  specification);
- JUnit XML, ours and the plugin's ``--junitxml``: the Jenkins xUnit plugin's ``junit-10.xsd``
  with xmlschema, then read by junitparser and by a reader that follows GitLab's documented rules.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import xmlschema
import yaml
from conftest import IN_ORDER, ROOT
from junitparser import Error, Failure, JUnitXml, Skipped

from grader.judge.scorecard import QuestionResult, Scorecard
from grader.outputs import gradescope, render_one

SCHEMAS = Path(__file__).parent / "schemas"
EXAMPLES = ROOT / "examples/attention_numpy"
PICKED = ["bob_correct", "carol_no_sqrt", "frank_raises", "grace_half_done", "henry_not_a_notebook"]
CLASSROOM50 = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "classroom50-result-v1.schema.json").read_text()))
GRADESCOPE = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "gradescope-results.schema.json").read_text()))
JUNIT = xmlschema.XMLSchema(SCHEMAS / "junit-10.xsd")
RUNNER_ENV = {
    "CLASSROOM": "nlp-2026",
    "ASSIGNMENT": "attention-numpy",
    "OWNER": "carol",
    "SUBMISSION_TAG": "submit/2026-11-23T10-00-00Z-abc1234",
    "COMMIT_URL": "https://github.com/nlp-2026/nlp-2026-attention-numpy-carol/commit/abc1234",
    "RELEASE_URL": "https://github.com/nlp-2026/nlp-2026-attention-numpy-carol/releases/tag/submit%2F2026",
    "REVIEW_URL": "https://github.com/nlp-2026/nlp-2026-attention-numpy-carol/compare/0000000...abc1234",
}


def grader_cli(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd, env=env)


def valid_classroom50(data: dict) -> None:
    """The schema, and what Classroom 50's runner checks in code besides."""
    CLASSROOM50.validate(data)
    assert data["score"] <= data["max-score"]
    for t in data["tests"]:
        assert t["score"] <= t["max-score"], t


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One real run of `grader grade` over five example submissions, in the consumers' formats."""
    base = tmp_path_factory.mktemp("consumers")
    subs = base / "subs"
    subs.mkdir()
    for name in PICKED:
        shutil.copyfile(EXAMPLES / f"{name}.ipynb", subs / f"{name}.ipynb")
    env = {**os.environ, **RUNNER_ENV}
    proc = grader_cli(
        "grade",
        str(subs),
        "-a",
        "attention_numpy",
        "--config",
        str(ROOT / "config.yaml"),
        "--formats",
        "yaml,gradescope,classroom50,junit",
        "--out",
        str(base / "out"),
        cwd=base,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    cards = {n: yaml.safe_load((base / "out" / f"{n}.yaml").read_text()) for n in PICKED}
    return base / "out", cards


# --------------------------------------------------------------------------------------------
# Classroom 50


def test_classroom50_results_are_valid_and_add_up(run):
    out, cards = run
    for name, card in cards.items():
        data = json.loads((out / f"{name}.result.json").read_text())
        valid_classroom50(data)
        assert {k: data[k] for k in ("classroom", "owner", "submission", "commit", "release", "review")} == {
            "classroom": "nlp-2026",
            "owner": "carol",
            "submission": RUNNER_ENV["SUBMISSION_TAG"],
            "commit": RUNNER_ENV["COMMIT_URL"],
            "release": RUNNER_ENV["RELEASE_URL"],
            "review": RUNNER_ENV["REVIEW_URL"],
        }
        assert data["assignment"] == "attention-numpy" and data["assignment_type"] == "individual"
        # Whole-point questions: the integers are the points themselves
        assert data["score"] == card["score"] and data["max-score"] == card["max_score"]
        assert sum(t["score"] for t in data["tests"]) == data["score"]
        for t, q in zip(data["tests"], card["questions"], strict=True):
            assert t["test-name"] == f"{q['id']}: {q['title']}"
            assert (t["score"], t["max-score"], t["points"]) == (q["score"], q["max_score"], q["score"])
            assert t["passed"] == (q["status"] == "passed")
    carol = json.loads((out / "carol_no_sqrt.result.json").read_text())
    scaled = next(t for t in carol["tests"] if t["test-name"].startswith("scaled:"))
    assert "Likely mistake: The scores are not divided by sqrt(d_k)." in scaled["message"]
    body = (out / "carol_no_sqrt.release-body.md").read_text()
    # One mistake costs one question: her later steps are right given her scaled scores
    assert carol["score"] == 9
    assert body.startswith("### Autograder: 9/11\n\n# attention_numpy:")
    assert "- Likely mistake: The scores are not divided by sqrt(d_k)." in body
    henry = json.loads((out / "henry_not_a_notebook.result.json").read_text())
    assert (henry["score"], henry["max-score"], len(henry["tests"])) == (0, 11, 6)
    assert "not a readable notebook" in (out / "henry_not_a_notebook.release-body.md").read_text()


def card_with(points: list[tuple[float, float]]) -> Scorecard:
    qs = [
        QuestionResult(f"q{i}", f"Question {i}", s, m, "passed" if s == m else ("partial" if s else "failed"))
        for i, (s, m) in enumerate(points, 1)
    ]
    return Scorecard(
        assignment="attention_numpy",
        submission="x.ipynb",
        sha256="",
        status="graded",
        score=sum(s for s, _ in points),
        max_score=sum(m for _, m in points),
        questions=qs,
    )


@pytest.mark.parametrize(
    ("points", "scale"),
    [
        ([(1 / 3, 1), (1 / 3, 1), (1 / 3, 1)], 1),  # a third of each: 1 point in all, to the first largest fraction
        ([(1.5, 2), (1.5, 2), (0.5, 1)], 1),  # halves: whole points, the total 3.5 rounded down to 3
        ([(0.25, 0.5), (0.5, 0.5), (1.25, 1.5)], 2),  # half-point questions: every point counts twice
        ([(0.1, 0.1), (0.2, 0.2), (0.0, 0.3)], 10),  # tenths
        ([(2.99, 3), (0.01, 3)], 1),
    ],
)
def test_fractional_points_map_to_integers_that_keep_the_total_honest(
    points, scale, course, numpy_assignment, tmp_path
):
    card = card_with(points)
    data = json.loads(render_one("classroom50", tmp_path / "x.ipynb", card, course, numpy_assignment))
    valid_classroom50(data)
    assert data["max-score"] == round(card.max_score * scale)
    assert data["score"] == math.floor(card.score * scale + 1e-9)  # never more than earned
    assert sum(t["score"] for t in data["tests"]) == data["score"]
    for t, (s, m) in zip(data["tests"], points, strict=True):
        assert t["max-score"] == round(m * scale)
        assert abs(t["score"] - s * scale) < 1, (t, s)
        assert t["points"] == round(s, 2) and t["max-points"] == round(m, 2)


def test_classroom50_outside_a_classroom50_run_still_validates(course, numpy_assignment, tmp_path, monkeypatch):
    for key in (*RUNNER_ENV, "USERNAME", "ASSIGNMENT_TYPE", "MODE"):
        monkeypatch.delenv(key, raising=False)
    data = json.loads(render_one("classroom50", tmp_path / "dana.ipynb", card_with([(1, 1)]), course, numpy_assignment))
    valid_classroom50(data)
    assert (data["assignment"], data["owner"], data["submission"]) == ("attention_numpy", "dana", "submit/local")


# --------------------------------------------------------------------------------------------
# Gradescope


def test_gradescope_results_follow_the_specification(run, numpy_assignment):
    out, cards = run
    for name, card in cards.items():
        data = json.loads((out / f"{name}.gradescope.json").read_text())
        GRADESCOPE.validate(data)
        assert data["score"] == card["score"] == sum(t["score"] for t in data["tests"])
    GRADESCOPE.validate(gradescope.failure_results("No notebook.", numpy_assignment))
    GRADESCOPE.validate(gradescope.failure_results("No notebook."))


# --------------------------------------------------------------------------------------------
# JUnit: the xUnit schema, junitparser, and GitLab's reading of it


def gitlab_reading(path: Path) -> list[tuple[str, str, str, str]]:
    """(classname, name, status, the text shown) per test case, by GitLab's documented rules for
    JUnit reports: every ``testcase`` under ``testsuites/testsuite``; ``failure`` makes it failed,
    ``error`` error, ``skipped`` skipped, otherwise success; the failure's text is what is shown."""
    out = []
    for suite in ET.parse(path).getroot().iter("testsuite"):
        for case in suite.findall("testcase"):
            status, text = "success", ""
            for tag, word in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
                found = case.find(tag)
                if found is not None:
                    status, text = word, found.text or found.get("message") or ""
                    break
            out.append((case.get("classname") or "", case.get("name") or "", status, text))
    return out


def junitparser_reading(path: Path) -> list[tuple[str, str, str, str]]:
    out = []
    for suite in JUnitXml.fromfile(str(path)):
        for case in suite:
            status, text = "success", ""
            for result in case.result:
                word = {Failure: "failed", Error: "error", Skipped: "skipped"}[type(result)]
                status, text = word, result.text or result.message or ""
            out.append((case.classname, case.name, status, text))
    return out


def points_of(path: Path) -> dict[str, tuple[float, float]]:
    """``classname::name`` -> (score, max_score), from the suite's properties via junitparser."""
    found: dict[str, list[float]] = {}
    for suite in JUnitXml.fromfile(str(path)):
        for prop in suite.properties():
            kind, _, case = prop.name.partition(":")
            found.setdefault(case, [0.0, 0.0])[kind == "max_score"] = float(prop.value)
    return {k: (v[0], v[1]) for k, v in found.items()}


def test_junit_validates_against_the_xunit_schema_and_reads_the_same_everywhere(run):
    out, cards = run
    xml = out / "junit.xml"
    JUNIT.validate(str(xml))
    gitlab, parsed = gitlab_reading(xml), junitparser_reading(xml)
    assert gitlab == parsed and len(parsed) == 6 * len(PICKED)
    points = points_of(xml)
    for name, card in cards.items():
        for q in card["questions"]:
            key = f"{name}.ipynb::{q['id']}"
            assert points[key] == (q["score"], q["max_score"])
            status = next(s for c, n, s, _ in parsed if (c, n) == (f"{name}.ipynb", q["id"]))
            assert status == ("success" if q["status"] == "passed" else "failed")
    suite = next(iter(JUnitXml.fromfile(str(xml))))
    assert (suite.tests, suite.failures, suite.errors) == (30, sum(s == "failed" for *_, s, _ in parsed), 0)


def test_the_plugins_junitxml_validates_and_carries_the_same_points(run, pytester):
    out, _ = run
    direct = pytester.path / "direct.xml"
    result = pytester.runpytest_subprocess(
        *IN_ORDER,
        "--grader-config",
        str(ROOT / "config.yaml"),
        "--scorecard-dir",
        str(pytester.path / "cards"),
        "--submission",
        str(EXAMPLES / "carol_no_sqrt.ipynb"),
        f"--junitxml={direct}",
        "-W",
        "error::pytest.PytestWarning",
    )
    result.assert_outcomes(passed=5, failed=1)  # her later steps are carried forward
    JUNIT.validate(str(direct))
    ours = points_of(out / "junit.xml")
    theirs = points_of(direct)
    assert theirs and all(ours[f"carol_no_sqrt.ipynb::{k.split('::')[-1]}"] == v for k, v in theirs.items())
    assert [(n, s) for _, n, s, _ in junitparser_reading(direct)] == [
        (n, s) for c, n, s, _ in gitlab_reading(out / "junit.xml") if c == "carol_no_sqrt.ipynb"
    ]
    # Under pytest-xdist the points travel with each report to the controller, which writes the file
    spread = pytester.path / "spread.xml"
    result = pytester.runpytest_subprocess(
        *IN_ORDER,
        "--grader-config",
        str(ROOT / "config.yaml"),
        "--scorecard-dir",
        str(pytester.path / "cards2"),
        "--submission",
        str(EXAMPLES / "carol_no_sqrt.ipynb"),
        f"--junitxml={spread}",
        "-n",
        "2",
    )
    result.assert_outcomes(passed=5, failed=1)  # her later steps are carried forward
    JUNIT.validate(str(spread))
    assert points_of(spread) == theirs
