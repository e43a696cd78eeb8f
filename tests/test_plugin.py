"""The pytest plugin, driven through real pytest runs."""

from __future__ import annotations

import yaml
from conftest import ROOT

SKELETON = ROOT / "assignments/attention_numpy/attention_numpy.ipynb"
EXAMPLES = ROOT / "examples/attention_numpy"


def run(pytester, *args):
    return pytester.runpytest_subprocess(
        "--grader-config", str(ROOT / "config.yaml"), "--scorecard-dir", str(pytester.path / "cards"), *args
    )


def test_one_item_per_question_and_feedback_as_failure_text(pytester):
    result = run(pytester, "--submission", str(EXAMPLES / "carol_no_sqrt.ipynb"), "--assignment", "attention_numpy", "-v")
    result.assert_outcomes(passed=3, failed=3)
    result.stdout.fnmatch_lines([
        "grader: *config.yaml · assignment attention_numpy · 1 submission(s) · executor *",
        "*carol_no_sqrt.ipynb::scaled FAILED*",
        "Scaled scores: failed, 0/2 points",
        "  - Likely mistake: The scores are not divided by sqrt(d_k).",
    ])
    card = yaml.safe_load((pytester.path / "cards/carol_no_sqrt.yaml").read_text())
    assert (card["score"], card["max_score"], card["status"]) == (5, 11, "graded")


def test_folder_of_submissions_and_keyword_selection(pytester):
    result = run(pytester, "--submission", str(EXAMPLES), "-k", "qkv")
    # 8 submissions, one qkv item each; alice, bob, carol, dave, frank, grace pass qkv
    result.assert_outcomes(passed=6, failed=2)
    assert len(list((pytester.path / "cards").glob("*.yaml"))) == 8


def test_invalid_notebook_still_gets_items_and_a_scorecard(pytester):
    result = run(pytester, "--submission", str(EXAMPLES / "henry_not_a_notebook.ipynb"))
    result.assert_outcomes(failed=6)
    card = yaml.safe_load((pytester.path / "cards/henry_not_a_notebook.yaml").read_text())
    assert card["status"] == "invalid_notebook"
    assert card["reason"] == "The file is not JSON, so not a notebook (line 1: Expecting value)."


def test_unknown_assignment_is_a_usage_error(pytester):
    result = run(pytester, "--submission", str(SKELETON), "--assignment", "nope")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["ERROR: Unknown assignment 'nope'; *config.yaml defines: attention_numpy*"])


def test_junit_xml_comes_from_pytest(pytester):
    xml = pytester.path / "junit.xml"
    run(pytester, "--submission", str(EXAMPLES / "dave_wrong_axis.ipynb"), f"--junitxml={xml}")
    text = xml.read_text()
    assert 'name="weights"' in text and "softmax is taken over columns" in text
