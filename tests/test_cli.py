"""The grader command, as a user runs it."""

from __future__ import annotations

import argparse
import subprocess
import sys

import yaml
from conftest import ROOT

EXAMPLES = ROOT / "examples/attention_numpy"


def grader(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


def test_grade_folder_prints_table_and_writes_scorecards(tmp_path):
    proc = grader("grade", str(EXAMPLES), "--assignment", "attention_numpy", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == 'attention_numpy: Self-attention by hand in NumPy ("I am Batman")'
    assert lines[1].split() == ["submission", "score", "status"]
    rows = {line.split()[0]: line.split()[1:3] for line in lines[2:10]}
    assert rows["bob_correct"] == ["11/11", "graded"]
    # Error carried forward: carol loses only `scaled`, the step without sqrt(d_k) (issue 13).
    assert rows["carol_no_sqrt"] == ["9/11", "graded"]
    assert rows["henry_not_a_notebook"] == ["0/11", "invalid_notebook"]
    cards = sorted(p.name for p in tmp_path.glob("*.yaml"))
    assert len(cards) == 8
    card = yaml.safe_load((tmp_path / "frank_raises.yaml").read_text())
    assert set(card) >= {
        "assignment",
        "submission",
        "sha256",
        "status",
        "score",
        "max_score",
        "questions",
        "execution",
        "grader_version",
    }
    q = card["questions"][1]
    assert set(q) == {"id", "title", "score", "max_score", "status", "feedback"}
    assert card["execution"]["errors"][0]["cell"] == 12  # the 12th cell of the file (7th code cell)


def test_missing_path_and_unknown_assignment_exit_2(tmp_path):
    proc = grader("grade", str(tmp_path / "nope.ipynb"), "--out", str(tmp_path))
    assert (proc.returncode, proc.stderr.strip()) == (2, f"grader: {tmp_path / 'nope.ipynb'} does not exist.")
    proc = grader("grade", str(EXAMPLES), "-a", "nope", "--out", str(tmp_path))
    assert proc.returncode == 2 and "Unknown assignment 'nope'" in proc.stderr and "Traceback" not in proc.stderr


def test_assignment_is_inferred_from_the_file_name(tmp_path):
    sub = tmp_path / "attention_numpy.ipynb"
    sub.write_bytes((ROOT / "assignments/attention_numpy/attention_numpy.ipynb").read_bytes())
    proc = grader("grade", str(sub), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "0/11" in proc.stdout


def test_every_option_of_every_command_has_help():
    """``grader X --help`` says what each of X's arguments is for (common ones are declared once, in cli.py)."""
    from grader import cli

    commands = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert len(commands) == 14
    for name, command in commands.items():
        proc = grader(name, "--help")
        assert proc.returncode == 0, proc.stderr
        shown = "".join(proc.stdout.split())  # argparse wraps lines, at hyphens too
        for action in command._actions:
            assert action.help, f"grader {name}: {action.option_strings or action.dest} has no help"
            assert "".join(action.help.split()) in shown, f"grader {name} --help does not show {action.help!r}"


def test_a_reader_that_stops_early_loses_no_scorecard_and_sees_no_traceback(tmp_path):
    # ``grader grade ... | head -1``: the table's reader goes away after its first line.
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader.cli", "grade", str(EXAMPLES), "-a", "attention_numpy", "--out", str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().startswith("attention_numpy:")
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert len(list(tmp_path.glob("*.yaml"))) == 8
