"""The class report: one self-contained HTML page for an instructor who would rather look than read.

Per assignment:

- the score distribution (a histogram of percentages);
- the pass rate per question (a stacked bar per question: passed, partial, failed, error, unanswered);
- the most frequent hints, i.e. the misconceptions of the class (a table, and a chart once some
  mistake is shared by two submissions or more: a chart of bars all at 1 says nothing);
- the submissions that crashed, timed out, raised an error in a cell or could not be read, with
  the reason.

Plots are drawn with matplotlib (the object-oriented API, no pyplot state) and embedded as
base64 PNG, so the file can be mailed or attached anywhere. Like the feedback pages
(grader.outputs.pages), the page loads nothing from elsewhere (its Content-Security-Policy says so),
renders the math of question titles and hints with the bundled KaTeX when they have some, marks
statuses with inline SVG in the charts' colours, and shows the marks of hints and reasons (`code`,
*emphasis*) as HTML, made after escaping. Input is scorecards: the objects of a grading run, or
the scorecards' documents a run wrote (``<name>.json``, read by ``grader.judge.document``; ``grader
report DIR``). The typical mistakes are the checks' ``hint`` records in both cases.
"""

from __future__ import annotations

import base64
import html
import io
import json
import statistics
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from grader.course.model import Course
from grader.errors import DocumentError, UsageError
from grader.files import write_atomic
from grader.judge import document
from grader.judge.scorecard import Execution, Scorecard, points_text
from grader.outputs import pages
from grader.vocab import CellStatus

if TYPE_CHECKING:
    from matplotlib.axis import Axis

STATUS_ORDER = ("passed", "partial", "failed", "error", "unanswered", "manual", "graded")
COLOURS = {
    "passed": "#2e7d32",
    "partial": "#f9a825",
    "failed": "#c62828",
    "error": "#6a1b9a",
    "unanswered": "#9e9e9e",
    "manual": "#1565c0",
    "graded": "#00838f",
}
BY_PERSON = ("manual", "graded")  # a question graded by a person: waiting, or graded
TOP_HINTS = 10
BROKEN = ("crashed", "timeout", "invalid_notebook", "over_budget")


@dataclass
class Row:
    """One submission, as much of it as the report needs."""

    assignment: str
    submission: str
    student: str
    status: str
    reason: str
    score: float
    max_score: float
    questions: list[tuple[str, str, str]] = field(default_factory=list)  # (id, title, status)
    hints: list[tuple[str, str]] = field(default_factory=list)  # (question id, message)
    timed_out_cells: list[int] = field(default_factory=list)
    carried: list[str] = field(default_factory=list)  # questions right given an earlier mistake
    raised: list[str] = field(default_factory=list)  # "cell N: Error ..." for each cell that raised
    pending: float = 0.0  # the points of the questions still waiting for a person

    @property
    def full_marks(self) -> bool:
        """Every point it could have by now: a question waiting for a person is left out."""
        return self.max_score - self.pending > 0 and self.score >= self.max_score - self.pending - 1e-9

    @property
    def percent(self) -> float:
        return 100.0 * self.score / self.max_score if self.max_score else 0.0


def row_from_card(card: Scorecard) -> Row:
    """What the report needs of a card: the typical mistakes are its checks' ``hint`` records
    (hidden checks' too: the report is for the instructor), never read back from its sentences."""
    return Row(
        card.assignment,
        card.submission,
        card.student,
        card.status,
        card.reason,
        card.score,
        card.max_score,
        [(q.id, q.title, q.status) for q in card.questions],
        [(q.id, c.hint) for q in card.questions for c in q.checks if c.hint],
        _timeouts(card.execution),
        [q.id for q in card.questions if q.carried_forward],
        _raised(card.execution),
        sum(q.max_score for q in card.questions if q.status == "manual"),
    )


def _timeouts(execution: Execution) -> list[int]:
    return [e.cell for e in execution.cell_errors if e.status == CellStatus.TIMEOUT]


def _raised(execution: Execution) -> list[str]:
    return [
        f"cell {e.cell}: {e.error or e.status}" for e in execution.cell_errors if e.status == CellStatus.ERROR
    ]  # not a timeout (listed as such), nor a blank left unfilled


SCORECARD_KEYS = {"assignment", "submission", "status", "questions"}


def load_scorecards(paths: list[Path]) -> list[Row]:
    """The scorecards' documents (``<name>.json``, ``grader.judge.document``) in files and folders;
    other files are skipped. A scorecard of another format version is a UsageError that says how
    to grade again; so is a folder of YAML scorecards without their documents."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files += sorted(q for q in p.iterdir() if q.suffix in (".json", ".yaml", ".yml"))
        elif p.is_file():
            files.append(p)
        else:
            raise UsageError(f"{p} does not exist.")
    rows, renderings = [], []
    for f in files:
        if f.suffix != ".json":
            renderings.append(f)
            continue
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if not (isinstance(data, dict) and (document.VERSION in data or SCORECARD_KEYS <= set(data))):
            continue  # Gradescope's, Classroom's or another tool's file
        try:
            rows.append(row_from_card(document.load(data)))
        except DocumentError as exc:
            raise UsageError(f"{f}: {exc}.") from None
    if not rows:
        yaml_cards = [f for f in renderings if _is_yaml_scorecard(f)]
        if yaml_cards:
            raise UsageError(
                f"{yaml_cards[0].parent} holds YAML scorecards but not their JSON documents, which the report "
                "reads: grade again with json among the formats (`grader grade ... --formats yaml,json`, or "
                "`formats: [yaml, json]` in config.yaml's scorecard section), or have it write the report itself "
                "(`--formats ...,report`)."
            )
        raise UsageError("No scorecards found (the JSON scorecards written by grader grade --formats json).")
    return rows


def _is_yaml_scorecard(path: Path) -> bool:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and SCORECARD_KEYS <= set(data)


# --------------------------------------------------------------------------------------------
# Plots


def _png(fig: Any) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def plot_scores(rows: list[Row]) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.2))
    ax = fig.add_subplot()
    ax.hist(
        [r.percent for r in rows],
        bins=[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100.001],
        color="#1565c0",
        edgecolor="white",
    )
    ax.set_xlabel("score (% of the maximum)")
    ax.set_ylabel("submissions")
    ax.set_xlim(0, 100)
    _whole_numbers(ax.yaxis)
    ax.set_title(f"Score distribution ({len(rows)} submissions)")
    return _png(fig)


def _whole_numbers(axis: Axis) -> None:
    """Ticks at whole numbers only: the axis counts submissions."""
    from matplotlib.ticker import MaxNLocator

    locator = axis.get_major_locator()
    if isinstance(locator, MaxNLocator):  # matplotlib's default AutoLocator is one
        locator.set_params(integer=True)


def question_rates(rows: list[Row]) -> list[tuple[str, str, Counter[str]]]:
    order: dict[str, str] = {}
    counts: dict[str, Counter[str]] = {}
    for r in rows:
        for qid, title, status in r.questions:
            order.setdefault(qid, title)
            counts.setdefault(qid, Counter())[status] += 1
    return [(qid, title, counts[qid]) for qid, title in order.items()]


def plot_questions(rates: list[tuple[str, str, Counter[str]]]) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 0.45 * len(rates) + 1.2))
    ax = fig.add_subplot()
    labels = [qid for qid, _, _ in rates][::-1]
    left = [0.0] * len(rates)
    for status in STATUS_ORDER:
        widths = []
        for _, _, c in rates[::-1]:
            total = sum(c.values()) or 1
            widths.append(100.0 * c.get(status, 0) / total)
        ax.barh(labels, widths, left=left, color=COLOURS[status], label=status)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of submissions")
    ax.set_title("Result per question")
    ax.legend(ncol=5, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.25 if len(rates) > 2 else -0.4))
    return _png(fig)


def plot_hints(top: list[tuple[tuple[str, str], int]]) -> str:
    from matplotlib.figure import Figure

    # Labels wrapped on two lines at most, and a layout that makes room for them: the hint is the point.
    labels = [textwrap.fill(textwrap.shorten(f"{qid}: {msg}", 90, placeholder="…"), 48) for (qid, msg), _ in top][::-1]
    fig = Figure(figsize=(9.0, 0.75 * len(top) + 1.2), layout="constrained")
    ax = fig.add_subplot()
    ax.barh(labels, [n for _, n in top][::-1], color="#ef6c00")
    ax.set_xlabel("submissions")
    _whole_numbers(ax.xaxis)
    ax.set_title("Most frequent mistakes (hints)")
    return _png(fig)


# --------------------------------------------------------------------------------------------
# The page

STYLE = """<style>
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0 1.4em 0; }
td, th { border: 1px solid #ccc; padding: 3px 9px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.n { text-align: right; }
img { max-width: 100%; }
.muted { color: #666; }
code { background: #eceff1; border-radius: 3px; padding: 0 3px; }
.grader-mark { vertical-align: -0.125em; margin-right: 0.3em; }
</style>"""
# Where math is rendered: titles, hints and headings, never submission names or reasons (students').
MATH_SELECTOR = ".grader-title, .grader-hint, h1, h2"


def _img(b64: str, alt: str) -> str:
    return f'<p><img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}"></p>'


def section(name: str, rows: list[Row], title: str = "") -> str:
    e = html.escape
    pct = [r.percent for r in rows]
    out = [f"<h2>{e(name)}{': ' + e(title) if title and title != name else ''}</h2>"]
    out.append(
        f"<p>{len(rows)} submission{'s' if len(rows) != 1 else ''} · mean {statistics.mean(pct):.1f}% · "
        f"median {statistics.median(pct):.1f}% · full marks: {sum(1 for r in rows if r.full_marks)} · "
        f"zero: {sum(1 for p in pct if p <= 1e-9)}</p>"
    )
    waiting = sum(1 for r in rows if r.pending)
    if waiting:
        out.append(
            f'<p class="muted">{waiting} submission{"s" if waiting != 1 else ""} still wait for a person on '
            "questions graded by a person: their scores may still rise, and full marks counts the points "
            "graded so far.</p>"
        )
    out.append("<h3>Score distribution</h3>")
    out.append(_img(plot_scores(rows), f"Histogram of scores for {name}"))

    rates = question_rates(rows)
    out.append("<h3>Pass rate per question</h3>")
    out.append(_img(plot_questions(rates), f"Result per question for {name}"))
    head = "".join(f"<th>{pages.status_mark(s, COLOURS[s])}{s}</th>" for s in STATUS_ORDER)
    carried = Counter(q for r in rows for q in r.carried)
    body = ""
    for qid, qtitle, c in rates:
        total = sum(c.values()) or 1
        cells = "".join(f'<td class="n">{c.get(s, 0)}</td>' for s in STATUS_ORDER)
        rate = f"{100.0 * c.get('passed', 0) / total:.0f}%"
        if sum(c.get(s, 0) for s in BY_PERSON) == sum(c.values()):  # graded by a person: no pass rate
            rate = f"by a person: {c.get('graded', 0)} of {sum(c.values())} graded"
        body += (
            f'<tr><td>{e(qid)}: <span class="grader-title">{e(qtitle)}</span></td><td class="n">{rate}</td>'
            f'{cells}<td class="n">{carried.get(qid, 0)}</td></tr>'
        )
    out.append(f"<table><tr><th>question</th><th>pass rate</th>{head}<th>carried forward</th></tr>{body}</table>")
    out.append(
        '<p class="muted">Carried forward: right given the student\'s own mistake in an earlier question. '
        "Mistakes are counted once, where they were made: a hint is never counted for a value that an "
        "earlier mistake explains.</p>"
    )

    counts = Counter(h for r in rows for h in dict.fromkeys(r.hints))  # once per submission
    out.append("<h3>Most frequent mistakes</h3>")
    if counts:
        top = counts.most_common(TOP_HINTS)
        if top[0][1] > 1:  # some mistake is shared; otherwise the table says it all
            out.append(_img(plot_hints(top), f"Most frequent hints for {name}"))
        out.append(
            "<table><tr><th>submissions</th><th>question</th><th>hint</th></tr>"
            + "".join(
                f'<tr><td class="n">{n}</td><td>{e(qid)}</td><td class="grader-hint">{pages.rich_text(msg)}</td></tr>'
                for (qid, msg), n in top
            )
            + "</table>"
        )
    else:
        out.append('<p class="muted">No submission matched a declared mistake.</p>')

    broken = [r for r in rows if r.status in BROKEN or r.timed_out_cells or r.raised]
    out.append("<h3>Submissions that crashed, timed out, raised an error or could not be read</h3>")
    if broken:
        trs = ""
        for r in broken:
            who = e(r.student)
            what = r.reason or (
                f"cell(s) {', '.join(map(str, r.timed_out_cells))} timed out"
                if r.timed_out_cells
                else "; ".join(r.raised)
            )
            trs += (
                f"<tr><td>{who}</td><td>{e(r.submission)}</td><td>{e(r.status)}</td>"
                f'<td class="n">{points_text(r.score)}/{points_text(r.max_score)}</td><td>{pages.rich_text(what)}</td></tr>'
            )
        out.append(
            "<table><tr><th>student</th><th>submission</th><th>status</th><th>score</th><th>reason</th></tr>"
            f"{trs}</table>"
        )
    else:
        out.append('<p class="muted">None: every notebook ran to the end without an error.</p>')
    return "\n".join(out)


def render(rows: list[Row], *, course: Course | None = None) -> str:
    if not rows:
        raise UsageError("No scorecards to report on.")
    groups: dict[str, list[Row]] = {}
    for r in rows:
        groups.setdefault(r.assignment, []).append(r)
    name = course.name if course is not None else "Class report"
    parts = []
    for assignment, group in groups.items():
        title = ""
        if course is not None and assignment in course.assignments:
            title = course.assignments[assignment].title
        parts.append(section(assignment, group, title))
    texts = [name, *(t for r in rows for _, t, _ in r.questions), *(m for r in rows for _, m in r.hints)]
    if course is not None:
        texts += [a.title for a in course.assignments.values()]
    head, tail, csp = "", "", pages.csp()
    if any(pages.has_math(t) for t in texts):
        head, tail = pages.math_head(), pages.math_tail(MATH_SELECTOR)
        csp = pages.csp(script=pages.katex_script(MATH_SELECTOR))
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}"><title>{html.escape(name)}: class report</title>'
        f"{STYLE}{head}</head><body><h1>{html.escape(name)}: class report</h1>\n"
        + "\n".join(parts)
        + f"{tail}</body></html>\n"
    )


def write_report(cards: list[Scorecard] | list[Row], path: Path, *, course: Course | None = None) -> Path:
    rows = [c if isinstance(c, Row) else row_from_card(c) for c in cards]
    return write_atomic(path, render(rows, course=course))
