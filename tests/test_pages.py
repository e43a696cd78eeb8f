"""HTML pages render what notebooks render: math (bundled KaTeX, allowed by the page's CSP and
nothing else), the feedback's own marks, status marks without an emoji font; checked in Chromium."""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
import unicodedata

import pages_notebook
import pytest

from grader.course.model import ScorecardSettings
from grader.outputs import pages, report
from grader.outputs.html import to_html
from grader.outputs.view import student_view

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def test_feedback_marks_become_html_only_after_escaping():
    assert pages.rich_text("the mistake is upstream, in *Design matrix*: see `X @ w`.") == (
        "the mistake is upstream, in <em>Design matrix</em>: see <code>X @ w</code>."
    )
    # What a student wrote stays text: tags are escaped, and no mark opens inside code
    assert pages.rich_text("`<img src=x onerror=alert(1)>` and *<b>bold</b>*") == (
        "<code>&lt;img src=x onerror=alert(1)&gt;</code> and <em>&lt;b&gt;bold&lt;/b&gt;</em>"
    )
    assert pages.rich_text("`a * b * c` raised TypeError: unsupported operand type(s) for *: 'int'") == (
        "<code>a * b * c</code> raised TypeError: unsupported operand type(s) for *: 'int'"
    )
    assert pages.rich_text("2 * 3 * 4, an `unmatched tick") == "2 * 3 * 4, an `unmatched tick"


def test_status_marks_are_svg_beside_words():
    for status in ("passed", "partial", "failed", "error", "unanswered", "withheld", "manual"):
        mark = pages.status_mark(status)
        assert mark.startswith('<svg class="grader-mark" aria-hidden="true"') and mark.endswith("</svg>")
    assert pages.status_mark("passed", "#123456").count('fill="#123456"') == 1
    assert pages.status_mark("passed", "red;x") == pages.status_mark("passed")  # a colour, or its own
    assert pages.status_mark("no such status") == ""


def emoji(text: str) -> list[str]:
    return sorted({ch for ch in text if ord(ch) > 0x2000 and unicodedata.category(ch) == "So"})


@pytest.fixture(scope="module")
def feedback_page(tmp_path_factory, grader, numpy_assignment):
    """The feedback page of a submission with math, a saved image and a long output."""
    base = tmp_path_factory.mktemp("pages")
    path = pages_notebook.write(base / "attention_numpy.ipynb")
    card = grader.grade(numpy_assignment, path)
    page = to_html(student_view(card, numpy_assignment, ScorecardSettings()), numpy_assignment, path)
    (base / "feedback.html").write_text(page, encoding="utf-8")
    return base / "feedback.html", page


def test_a_page_with_math_carries_katex_and_allows_that_script_alone(feedback_page):
    _, page = feedback_page
    [script] = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    [csp] = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert f"script-src 'sha256-{digest}';" in csp and csp.startswith("default-src 'none';")
    assert "katex" in script and "renderMathInElement" in script
    assert "http://" not in csp and "https://" not in csp  # nothing from elsewhere
    assert page.count("data:font/woff2;base64,") == 20 and "url(fonts/" not in page  # fonts from the page itself
    # Student markup stays out, marks and statuses are there, and no character needs an emoji font
    body = page[page.index("<body") : page.index("<script>")].lower()  # the student's notebook, rendered
    assert "<script" not in body and "onerror=" not in body
    assert "in <em>Scaled scores</em>: this step keeps its points" in page
    assert page.count('<svg class="grader-mark"') == 12  # the summary's six and the six boxes'
    assert emoji(page) == []
    # (a page without math has no script at all: tests/test_render.py's hostile notebook)


def test_the_class_report_renders_marks_and_the_math_of_titles():
    rows = [
        report.Row(
            "hw",
            "a.ipynb",
            "ann",
            "graded",
            "",
            1,
            2,
            [("q1", r"Mean $\bar x$", "passed")],
            [("q1", "Divide by `n`, not *n - 1*.")],
            raised=["cell 3: TypeError: `<b>`"],
        )
    ]
    page = report.render(rows)
    assert '<td class="grader-hint">Divide by <code>n</code>, not <em>n - 1</em>.</td>' in page
    assert "cell 3: TypeError: <code>&lt;b&gt;</code>" in page
    assert page.count('<svg class="grader-mark"') == len(report.STATUS_ORDER)
    [script] = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    assert pages.script_source(script) in page and emoji(page) == []
    plain = report.render([report.Row("hw", "a.ipynb", "ann", "graded", "", 1, 2, [("q1", "Mean", "passed")])])
    assert "<script" not in plain and "default-src 'none'" in plain


def dump_dom(path, tmp_path) -> str:
    """The document as Chromium has it once the page's scripts ran (offline: a file, no network)."""
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=5000",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "</html>" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian: apt-get install chromium)")
def test_chromium_renders_the_math_under_the_pages_policy(feedback_page, tmp_path):
    """The page as a browser runs it, offline, under its own CSP: a script the policy refused
    would leave the formulas as text. --dump-dom prints the document after the scripts ran."""
    path, _ = feedback_page
    dom = dump_dom(path, tmp_path)
    markdown = re.search(r"The scaled scores are (.*?)My notes:", dom, flags=re.S)
    assert markdown is not None
    math = markdown.group(1)
    # inline, display and align: each a KaTeX tree (with MathML for screen readers), none an error
    assert math.count('<span class="katex">') == 3 and math.count('<span class="katex-display">') == 2
    assert math.count("<math xmlns=") == 3 and 'class="katex-error"' not in dom
    assert "\\frac" not in dom.split("<annotation", 1)[0]  # no formula left as its source before the first


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian: apt-get install chromium)")
def test_chromium_renders_the_class_reports_math(tmp_path):
    rows = [
        report.Row(
            "hw", "a.ipynb", "ann", "graded", "", 1, 2, [("q1", r"Mean $\bar x = \frac{1}{n}\sum_i x_i$", "passed")]
        )
    ]
    path = tmp_path / "report.html"
    path.write_text(report.render(rows), encoding="utf-8")
    dom = dump_dom(path, tmp_path)
    title = re.search(r'<span class="grader-title">Mean (.*?)</span></td>', dom, flags=re.S)
    assert title is not None and title.group(1).count('<span class="katex">') == 1
    assert 'class="katex-error"' not in dom
