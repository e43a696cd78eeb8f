"""The class report: one self-contained HTML page with real plots, from a run's scorecards."""

from __future__ import annotations

import base64
import dataclasses
import html
import json
import re
import subprocess
import sys
from collections import Counter

import pytest
from conftest import ROOT

from grader.files import write_atomic
from grader.judge import document
from grader.judge.scorecard import CellError, Execution, QuestionResult, Scorecard
from grader.outputs.json import to_json
from grader.outputs.report import load_scorecards, render, row_from_card, write_report
from grader.outputs.yaml import write_yaml

EXAMPLES = ROOT / "examples/attention_numpy"
NAMES = ["bob_correct", "carol_no_sqrt", "dave_wrong_axis", "frank_raises", "henry_not_a_notebook"]


@pytest.fixture(scope="module")
def cards(grader, numpy_assignment):
    out = [grader.grade(numpy_assignment, EXAMPLES / f"{n}.ipynb", student=n.split("_")[0]) for n in NAMES]
    # A notebook that hung: the report's input is scorecards, and this is one as the grader writes it.
    out.append(
        Scorecard(
            assignment="attention_numpy",
            submission="ivan_loops.ipynb",
            sha256="0" * 64,
            status="timeout",
            score=3,
            max_score=11,
            student="ivan",
            reason="cell 7 ran past the 30 s limit and was stopped",
            questions=[
                QuestionResult(
                    q.id, q.title, 3 if q.id == "qkv" else 0, q.points, "passed" if q.id == "qkv" else "error"
                )
                for q in numpy_assignment.questions
            ],
            execution=Execution(
                executor="forking", errors=(CellError(cell=7, status="timeout", error="TimeoutError"),)
            ),
        )
    )
    return out


@pytest.fixture(scope="module")
def report(cards, tmp_path_factory):
    """`grader report` run on the scorecards a grading run writes (their JSON documents, beside the
    YAML renderings), as an instructor would after a grading run."""
    base = tmp_path_factory.mktemp("report")
    for card in cards:
        write_yaml(card, base / "cards" / f"{card.student}.yaml")
        write_atomic(base / "cards" / f"{card.student}.json", to_json(card))
    (base / "cards/gradebook.csv").write_text("not a scorecard\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader.cli",
            "report",
            str(base / "cards"),
            "--out",
            str(base / "out"),
            "--config",
            str(ROOT / "config.yaml"),
        ],
        capture_output=True,
        text=True,
        cwd=base,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"Class report for 6 submission(s) written to {base / 'out/report.html'}\n"
    return (base / "out/report.html").read_text()


def test_the_page_is_self_contained(report):
    assert report.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", report)
    assert "<script" not in report.lower()
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', report)
    # No chart of mistakes: each is made by one submission here, and the table says that better
    assert len(images) == 2
    for b64 in images:
        png = base64.b64decode(b64)
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000  # a drawn plot, not an empty image


def test_summary_numbers_come_from_the_scorecards(report, cards):
    pct = sorted(100.0 * c.score / c.max_score for c in cards)
    mean, median = sum(pct) / len(pct), (pct[2] + pct[3]) / 2
    assert f"<p>6 submissions · mean {mean:.1f}% · median {median:.1f}% · full marks: 1 · zero: 1</p>" in report


def test_pass_rate_per_question(report, cards):
    for qid in ("qkv", "scaled", "weights"):
        statuses = Counter(next(q.status for q in c.questions if q.id == qid) for c in cards)
        title = next(q.title for q in cards[0].questions if q.id == qid)
        row = re.search(rf'<tr><td>{qid}: <span class="grader-title">{title}</span></td>(.*?)</tr>', report).group(1)
        cells = re.findall(r'<td class="n">([^<]*)</td>', row)
        assert cells[0] == f"{100.0 * statuses['passed'] / len(cards):.0f}%"
        assert [int(x) for x in cells[1:]] == [
            statuses[s] for s in ("passed", "partial", "failed", "error", "unanswered", "manual", "graded")
        ] + [sum(1 for c in cards if any(q.id == qid and q.carried_forward for q in c.questions))]


def test_mistakes_are_counted_once_where_they_were_made(report, cards):
    # carol's weights and output are right given her scaled scores: counted as carried forward, and her
    # one mistake (no sqrt) is the only hint counted for her; no "unscaled scores" hint on weights.
    carol = next(c for c in cards if c.submission.startswith("carol"))
    assert {q.id for q in carol.questions if q.carried_forward} == {"weights", "output"}
    row = re.search(
        r'<tr><td>weights: <span class="grader-title">Attention weights</span></td>(.*?)</tr>', report
    ).group(1)
    assert int(re.findall(r'<td class="n">([^<]*)</td>', row)[-1]) >= 1
    assert "The softmax is applied to the unscaled scores" not in report


def test_most_frequent_hints_are_the_misconceptions(report):
    table = report[report.index("<h3>Most frequent mistakes</h3>") :]
    assert (
        '<tr><td class="n">1</td><td>scaled</td><td class="grader-hint">The scores are not divided by sqrt(d_k).</td></tr>'
        in table
    )
    assert (
        '<td>weights</td><td class="grader-hint">The softmax is taken over columns (axis 0) instead of rows: each row of attention '
        "weights must sum to 1.</td>" in table
    )


def test_crashed_timed_out_raising_and_unreadable_submissions_are_listed(report, cards):
    table = report[report.index("<h3>Submissions that crashed, timed out, raised an error or could not be read</h3>") :]
    rows = re.findall(r"<tr><td>(\w+)</td><td>([\w.]+)</td><td>(\w+)</td>", table)
    # frank's notebook raised in a cell (it is still graded): listed, with the cell and the error
    assert rows == [
        ("frank", "frank_raises.ipynb", "graded"),
        ("henry", "henry_not_a_notebook.ipynb", "invalid_notebook"),
        ("ivan", "ivan_loops.ipynb", "timeout"),
    ]
    frank = next(c for c in cards if c.student == "frank")
    raised = [e for e in frank.execution.to_dict()["errors"] if e["status"] == "error"]
    assert raised and all(html.escape(f"cell {e['cell']}: {e['error']}") in table for e in raised)
    assert "None: every notebook" not in report
    assert "cell 7 ran past the 30 s limit and was stopped" in table
    assert "The file is not JSON, so not a notebook (line 1: Expecting value)." in table


def test_a_mistake_shared_by_several_submissions_gets_a_chart(cards, tmp_path):
    carol = next(c for c in cards if c.student == "carol")
    page = write_report(
        [carol, dataclasses.replace(carol, student="carla", submission="carla.ipynb"), cards[0]], tmp_path / "r.html"
    ).read_text()
    mistakes = page[page.index("<h3>Most frequent mistakes</h3>") : page.index("<h3>Submissions that")]
    assert len(re.findall(r'src="data:image/png;base64,', mistakes)) == 1
    assert (
        '<tr><td class="n">2</td><td>scaled</td><td class="grader-hint">The scores are not divided by sqrt(d_k).</td></tr>'
        in mistakes
    )
    assert "None: every notebook ran to the end without an error." in page


def test_hints_come_from_the_records_of_a_card_read_back(cards):
    for card in cards:
        back = document.load(json.loads(to_json(card)))
        assert row_from_card(back) == row_from_card(card)
    carol = row_from_card(cards[1])
    assert carol.hints == [("scaled", "The scores are not divided by sqrt(d_k).")]


def test_report_from_a_grading_run_equals_the_report_from_its_files(cards, tmp_path):
    for card in cards:
        write_atomic(tmp_path / f"{card.student}.json", to_json(card))
        write_yaml(card, tmp_path / f"{card.student}.yaml")  # a rendering: not read
    direct = write_report(cards, tmp_path / "a.html").read_text()
    from_files = write_report(load_scorecards([tmp_path]), tmp_path / "b.html").read_text()
    strip = re.compile(r"base64,[A-Za-z0-9+/=]+")
    assert strip.sub("", direct) == strip.sub("", from_files)


def test_report_errors_are_usage_errors(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "grader.cli", "report", str(tmp_path)], capture_output=True, text=True, cwd=tmp_path
    )
    assert (proc.returncode, proc.stderr) == (
        2,
        "grader: No scorecards found (the JSON scorecards written by grader grade --formats json).\n",
    )
    with pytest.raises(Exception, match="No scorecards to report on"):
        render([])
