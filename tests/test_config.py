"""config.yaml: typed, frozen, and every mistake reported with file, line and key path."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from grader.course import config
from grader.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent

MINIMAL = """\
course:
  name: test course
assignments:
  a1:
    solution: sol.ipynb
    questions:
      - id: q1
        title: First
        points: 2
        checks:
          - value: x
"""


@pytest.fixture
def course_dir(tmp_path):
    (tmp_path / "sol.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    return tmp_path


def write(course_dir: Path, text: str) -> Path:
    path = course_dir / "config.yaml"
    path.write_text(text)
    return path


def error_of(course_dir: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        config.load(write(course_dir, text))
    return str(info.value)


def test_the_real_course_file_loads_into_frozen_objects():
    course = config.load(ROOT / "config.yaml")
    a = course.assignment("attention_numpy")
    assert a.max_score == 11
    assert a.question("weights").checks[0].properties == ("shape", "rows_sum_to_one")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.title = "changed"  # type: ignore[misc]


def test_defaults_flow_down_to_checks(course_dir):
    text = MINIMAL.replace("  name: test course\n", "  name: t\n  defaults:\n    rtol: 0.01\n")
    check = config.load(write(course_dir, text)).assignment("a1").questions[0].checks[0]
    assert (check.rtol, check.atol) == (0.01, 1e-8)


def test_unknown_key_names_line_and_path(course_dir):
    text = MINIMAL.replace("        points: 2\n", "        points: 2\n        pionts: 3\n")
    assert error_of(course_dir, text) == (
        f"{course_dir / 'config.yaml'}:10: assignments.a1.questions[0].pionts is not a known key here "
        "(known: carry_forward, checks, id, manual, points, rubric, skeleton_fails, skeleton_passes, title, unchanged_scores_zero, "
        "visible)"
    )


def test_wrong_type_names_line_and_path(course_dir):
    text = MINIMAL.replace("points: 2", "points: two")
    assert error_of(course_dir, text) == (
        f"{course_dir / 'config.yaml'}:9: assignments.a1.questions[0].points must be a number, got 'two'"
    )


def test_check_needs_exactly_one_target(course_dir):
    text = MINIMAL.replace("          - value: x\n", "          - value: x\n            expr: x + 1\n")
    assert (
        "assignments.a1.questions[0].checks[0] needs exactly one of 'value' (a variable), 'expr' (an expression) or 'test'"
        in error_of(course_dir, text)
    )


def test_bad_expression_and_bad_property(course_dir):
    assert "is not a Python expression" in error_of(course_dir, MINIMAL.replace("value: x", "expr: 'x +'"))
    text = MINIMAL.replace("          - value: x\n", "          - value: x\n            properties: [sums_to_one]\n")
    assert "checks[0].properties[0] must be one of shape, dtype_kind, finite, rows_sum_to_one, causal" in error_of(
        course_dir, text
    )


def test_split_points_must_add_up(course_dir):
    text = MINIMAL.replace(
        "          - value: x\n",
        "          - value: x\n            points: 1\n          - value: y\n            points: 0.5\n",
    )
    assert "questions[0].points is 2 but its checks' points add up to 1.5" in error_of(course_dir, text)


def test_missing_solution_and_invalid_yaml(course_dir):
    assert "names nope.ipynb, which does not exist" in error_of(course_dir, MINIMAL.replace("sol.ipynb", "nope.ipynb"))
    message = error_of(course_dir, "course: [unclosed\n")
    assert "is not valid YAML" in message and ":2:" in message


def test_duplicate_question_ids(course_dir):
    text = MINIMAL + "      - id: q1\n        points: 1\n        checks:\n          - value: y\n"
    assert "questions[1].id repeats the question id 'q1'" in error_of(course_dir, text)


def test_bad_config_exits_2_with_one_line_and_grades_nothing(course_dir, tmp_path):
    path = write(course_dir, MINIMAL.replace("points: 2", "points: [2]"))
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader.cli",
            "grade",
            str(course_dir / "sol.ipynb"),
            "--config",
            str(path),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"grader: {path}:9: assignments.a1.questions[0].points must be a number, got a list"
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_a_value_check_is_of_the_value_kind(course_dir):
    from grader.course import kinds

    check = config.load(write(course_dir, MINIMAL)).assignment("a1").checks[0]
    assert (check.kind, type(check.spec), check.variable) == ("value", kinds.ValueKind, "x")


def test_a_registered_check_kind_is_accepted_by_the_loader(course_dir, monkeypatch):
    """The loader, the capture plan and the feedback take a check's kind from ``kinds.KINDS`` alone."""
    from grader.course import kinds
    from grader.vocab import CaptureKind

    class Shape(kinds.Expr):
        key = "shape_of"
        what = "an expression whose shape is checked"

        def label(self, target: str) -> str:
            return f"the shape of `{target}`"

    monkeypatch.setitem(kinds.KINDS, "shape_of", Shape())
    course = config.load(write(course_dir, MINIMAL.replace("value: x", "shape_of: x.shape")))
    check = course.assignment("a1").checks[0]
    assert (check.kind, check.label, check.names, check.spec.capture) == (
        "shape_of",
        "the shape of `x.shape`",
        frozenset({"x"}),
        CaptureKind.EXPR,
    )
    assert "or 'shape_of' (an expression whose shape is checked)" in error_of(
        course_dir, MINIMAL.replace("value: x", "shape_of: x\n            value: x")
    )


def test_a_registered_property_is_accepted_by_the_loader_and_judged(course_dir, monkeypatch):
    import numpy as np

    from grader.capture import Value
    from grader.course import properties

    def positive(label, arr, exp, tol, actual):
        return None if (arr > 0).all() else f"{label} has values that are not positive."

    monkeypatch.setitem(properties.PROPERTIES, "positive", properties.Property("positive", "all > 0", positive))
    course = config.load(
        write(
            course_dir,
            MINIMAL.replace("          - value: x\n", "          - value: x\n            properties: [positive]\n"),
        )
    )
    assert course.assignment("a1").checks[0].properties == ("positive",)
    value = Value("array", np.array([1.0, -2.0]))
    assert properties.check_property("positive", "`x`", value, None, atol=0) == "`x` has values that are not positive."
    assert properties.check_property("positive", "`x`", Value("array", np.array([1.0])), None, atol=0) is None


def test_a_variant_rule_for_a_name_outside_given_is_an_error_with_its_fix(course_dir):
    text = MINIMAL.replace(
        "    questions:\n", "    given: [X]\n    variants:\n      inputs:\n        W: null\n    questions:\n"
    )
    message = error_of(course_dir, text)
    assert "assignments.a1.variants.inputs.W is not a given input of this assignment: add W to `given`" in message


def test_keep_is_the_rule_of_a_given_input_never_varied(course_dir):
    text = MINIMAL.replace(
        "    questions:\n", "    given: [X, W]\n    variants:\n      inputs:\n        W: keep\n    questions:\n"
    )
    assert config.load(write(course_dir, text)).assignment("a1").variants.inputs == (("W", "keep"),)


def test_preload_lists_module_names(course_dir):
    text = MINIMAL.replace("    solution: sol.ipynb\n", "    solution: sol.ipynb\n    preload: [scipy.linalg]\n")
    assert config.load(write(course_dir, text)).assignment("a1").preload == ("scipy.linalg",)
    bad = MINIMAL.replace("    solution: sol.ipynb\n", "    solution: sol.ipynb\n    preload: ['scipy linalg']\n")
    with pytest.raises(ConfigError, match=r"assignments\.a1\.preload\[0\] must be a module name"):
        config.load(write(course_dir, bad))


def test_the_switches_among_limits_and_variants_are_true_or_false(course_dir):
    text = MINIMAL.replace(
        "    questions:\n",
        "    limits: {memfd: true, grader_cpu: 5}\n    given: [X]\n"
        "    variants:\n      per_submission: false\n    questions:\n",
    )
    a = config.load(write(course_dir, text)).assignment("a1")
    assert (a.limits.memfd, a.limits.grader_cpu, a.variants.per_submission) == (True, 5.0, False)
    plain = config.load(write(course_dir, MINIMAL)).assignment("a1")
    assert (plain.limits.memfd, plain.limits.grader_cpu, plain.variants.per_submission) == (False, 60.0, True)
    bad = MINIMAL.replace("    questions:\n", "    limits:\n      memfd: 'yes'\n    questions:\n")
    assert error_of(course_dir, bad) == (
        f"{course_dir / 'config.yaml'}:7: assignments.a1.limits.memfd must be true or false, got 'yes'"
    )
    bad = MINIMAL.replace("    questions:\n", "    variants:\n      per_submission: 1\n    questions:\n")
    assert error_of(course_dir, bad).endswith("assignments.a1.variants.per_submission must be true or false, got 1")


LAYERED = """\
course:
  defaults:
    rtol: 0.1
    atol: 0.1
    strict_types: true
    carry_forward: 0.1
assignments:
  a1:
    solution: sol.ipynb
    rtol: 0.2
    atol: 0.2
    carry_forward: 0.2
    questions:
      - id: q1
        points: 2
        carry_forward: 0.3
        checks:
          - value: x
            rtol: 0.4
          - value: y
            strict_types: false
            carry_forward: none
      - id: q2
        points: 1
        checks:
          - value: z
"""


def test_inherited_settings_come_from_the_innermost_level_that_sets_them(course_dir):
    """check -> question (carry_forward only) -> assignment -> course defaults -> built-in default."""
    a = config.load(write(course_dir, LAYERED)).assignment("a1")
    settings = [(c.rtol, c.atol, c.strict_types, c.carry_forward) for c in a.checks]
    assert settings == [(0.4, 0.2, True, 0.3), (0.2, 0.2, False, 0.0), (0.2, 0.2, True, 0.2)]
    assert (a.rtol, a.atol, a.strict_types) == (0.2, 0.2, True)
    plain = config.load(write(course_dir, MINIMAL)).assignment("a1")
    assert (plain.rtol, plain.atol, plain.strict_types) == (1e-5, 1e-8, False)
    assert [(c.rtol, c.atol, c.strict_types, c.carry_forward) for c in plain.checks] == [(1e-5, 1e-8, False, 1.0)]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("    rtol: 0.1\n", "    rtol: tight\n", "3: course.defaults.rtol must be a number, got 'tight'"),
        ("    atol: 0.2\n", "    atol: -1\n", "11: assignments.a1.atol must be at least 0, got -1"),
        (
            "    strict_types: true\n",
            "    strict_types: 1\n",
            "5: course.defaults.strict_types must be true or false, got 1",
        ),
        (
            "        carry_forward: 0.3\n",
            "        carry_forward: 2\n",
            "16: assignments.a1.questions[0].carry_forward must be full, none or a share of the points from 0 to 1, got 2",
        ),
        (
            "            rtol: 0.4\n",
            "            rtol: [1]\n",
            "19: assignments.a1.questions[0].checks[0].rtol must be a number, got a list",
        ),
        (
            "            strict_types: false\n",
            "            strict_types: 'no'\n",
            "21: assignments.a1.questions[0].checks[1].strict_types must be true or false, got 'no'",
        ),
    ],
)
def test_a_bad_inherited_setting_is_named_with_its_level(course_dir, old, new, message):
    assert error_of(course_dir, LAYERED.replace(old, new, 1)) == f"{course_dir / 'config.yaml'}:{message}"


def test_tolerances_are_not_set_per_question(course_dir):
    text = LAYERED.replace("        carry_forward: 0.3\n", "        carry_forward: 0.3\n        rtol: 0.5\n")
    assert error_of(course_dir, text).endswith(
        "assignments.a1.questions[0].rtol is not a known key here (known: carry_forward, checks, id, manual, points, "
        "rubric, skeleton_fails, skeleton_passes, title, unchanged_scores_zero, visible)"
    )
    text = LAYERED.replace("    atol: 0.1\n", "    atol: 0.1\n    tolerance: 0.5\n")
    assert error_of(course_dir, text).endswith(
        "course.defaults.tolerance is not a known key here (known: atol, carry_forward, limits, rtol, strict_types, "
        "variants)"
    )
