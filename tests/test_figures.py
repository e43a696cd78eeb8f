"""A plot question graded by a person: its figure comes from the grader's own run of the student's
code, never from what the student saved; the reference figure from the solution's run.

One small course (a value question and a heat map graded by a person) and five submissions, graded
once for the module: never run, shown and closed in the cell, a figure drawn before the answer, the
plot cell left blank with an image pasted under it, an answer cell that draws nothing, and the
plot cell left blank.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from review_course import _browser_missing

from grader.course.config import load
from grader.judge import document
from grader.judge.plots import reference_figures
from grader.judge.reference import References
from grader.notebook import answers
from grader.review import cells
from grader.run.forking import default_executor
from grader.selfcheck import check_notebook, format_report
from grader.selfcheck import load as load_checks

V4 = nbformat.v4
PNG = b"\x89PNG\r\n\x1a\n"

CONFIG = """course:
  name: Plots
assignments:
  pl:
    title: Drawing
    questions:
      - id: mean
        title: The mean
        points: 1
        checks:
          - value: m
      - id: heat
        title: "A heat map of the weights $W_{ij}$"
        points: 2
        manual: true
"""

# The answers the students write in place of the plot cell's blank.
STUDENTS = {
    "never_run": "plt.imshow(w)\nplt.colorbar()",
    "shown_and_closed": "fig, ax = plt.subplots()\nax.imshow(w.T)\nplt.show()\nplt.close(fig)",
    "drawn_before": "plt.figure()\nplt.plot(w[0])",
    "pasted": "?",
    "draws_nothing": "print(w.max())",
    "blank": "?",
}


def _solution() -> nbformat.NotebookNode:
    nb = V4.new_notebook()
    plot = V4.new_code_cell(
        "### BEGIN SOLUTION\nplt.imshow(w, cmap='viridis')\nplt.colorbar()\nplt.title('weights')\n### END SOLUTION"
    )
    plot.metadata["tags"] = ["answer"]
    nb.cells = [
        V4.new_markdown_cell("# Plots"),
        V4.new_code_cell("import numpy as np\nimport matplotlib.pyplot as plt\nw = np.arange(6.0).reshape(2, 3)"),
        V4.new_markdown_cell("## Question 1: the mean"),
        V4.new_code_cell("m = w.mean()  # SOLUTION"),
        V4.new_markdown_cell("## Question 2: a heat map of the weights"),
        plot,
        V4.new_markdown_cell("The end."),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _student(skeleton: Path, out: Path, answer: str, name: str) -> Path:
    nb = nbformat.read(str(skeleton), as_version=4)
    for cell in nb.cells:
        if cell.source == "m = ?":
            cell.source = "m = w.mean()"
        elif cell.source == "?":
            cell.source = answer
    if name == "drawn_before":  # a histogram of the student's own, in a cell before the question
        nb.cells.insert(2, V4.new_code_cell("plt.figure()\nplt.hist(w.ravel())"))
    if name == "pasted":  # an image pasted in a markdown cell under the blank plot cell
        at = next(i for i, c in enumerate(nb.cells) if c.source == "?")
        pasted = V4.new_markdown_cell("![plot.png](attachment:plot.png)")
        pasted["attachments"] = {"plot.png": {"image/png": base64.b64encode(PNG + b"\0" * 16).decode()}}
        nb.cells.insert(at + 1, pasted)
    nbformat.write(nb, str(out))
    return out


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("plots")
    (root / "solutions" / "pl").mkdir(parents=True)
    (root / "config.yaml").write_text(CONFIG, encoding="utf-8")
    nbformat.write(_solution(), str(root / "solutions" / "pl" / "pl.ipynb"))
    done = subprocess.run([sys.executable, "-m", "grader.cli", "assign"], cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return root, load(root / "config.yaml")


@pytest.fixture(scope="module")
def graded(course):
    """Each student's notebook and the plot question's result, graded as a class into ``out/``."""
    root, c = course
    a = c.assignment("pl")
    subs = root / "subs"
    subs.mkdir()
    paths = {name: _student(a.skeleton, subs / f"{name}.ipynb", answer, name) for name, answer in STUDENTS.items()}
    done = subprocess.run(
        [sys.executable, "-m", "grader.cli", "grade", "subs", "--out", "out", "--formats", "json,html"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = {}
    for name, path in paths.items():
        card = document.load(json.loads((root / "out" / f"{name}.json").read_text()))
        out[name] = (path, next(q for q in card.questions if q.id == "heat"))
    return out


def _images(figures: tuple[str, ...] | None) -> list[bytes]:
    return [base64.b64decode(f) for f in figures or ()]


def test_a_notebook_never_run_shows_the_figure_its_code_draws(graded):
    path, q = graded["never_run"]
    saved = json.loads(path.read_text())
    assert not any(c.get("outputs") for c in saved["cells"] if c["cell_type"] == "code")  # nothing saved
    images = _images(q.answer.figures)
    assert len(images) == 1 and images[0].startswith(PNG), q.answer
    page = cells.answer_page(path, q.answer.cells, q.answer.text, q.answer.figures, q.answer.figures_left_out)
    assert "data:image/png;base64," in page.html
    assert "The notebook was saved without it (never run, or its outputs cleared)" in page.html
    # The student's feedback page shows it too, under the answer's cell.
    feedback = (path.parent.parent / "out" / "never_run.html").read_text()
    assert f"data:image/png;base64,{q.answer.figures[0]}" in feedback


def test_a_figure_shown_and_closed_in_its_cell_is_kept(graded):
    _, q = graded["shown_and_closed"]
    assert len(_images(q.answer.figures)) == 1


def test_a_figure_drawn_before_the_answer_is_not_the_answer_s(graded):
    # The histogram of an earlier cell is closed before the answer's cells run, as Jupyter closes
    # a cell's figures; the answer's own line plot is its only figure.
    _, q = graded["drawn_before"]
    assert len(_images(q.answer.figures)) == 1
    _, never_run = graded["never_run"]
    assert q.answer.figures != never_run.answer.figures


def test_a_pasted_image_under_a_blank_plot_cell_is_no_plot(graded):
    path, q = graded["pasted"]
    assert q.answer.figures == ()  # a person still sees the pasted image, as the student saved it
    page = cells.answer_page(path, q.answer.cells, q.answer.text, q.answer.figures, q.answer.figures_left_out)
    assert "This answer's code is still the blank: it draws nothing." in page.html


def test_code_that_draws_nothing_is_said_so(graded):
    path, q = graded["draws_nothing"]
    assert q.answer.figures == () and not q.answer.untouched
    page = cells.answer_page(path, q.answer.cells, q.answer.text, q.answer.figures, q.answer.figures_left_out)
    assert "In the grader's run of this notebook, this code draws no figure." in page.html


def test_an_answer_graded_before_figures_were_taken_shows_no_claim_about_them(graded):
    path, q = graded["never_run"]
    page = cells.answer_page(path, q.answer.cells, q.answer.text)  # figures None: the run took none
    assert "grader's run" not in page.html


def test_the_reference_figure_comes_from_the_solution_s_run_without_its_markers(course):
    root, c = course
    a = c.assignment("pl")
    figures = reference_figures(References(c, default_executor()), a)
    assert list(figures) == ["heat"] and all(f.startswith(PNG) for f in _images(figures["heat"]))
    assert reference_figures(References(c, default_executor()), a) == figures  # kept beside the references
    found = answers.locate(cells.solution_cells(a.solution), cells.solution_cells(a.solution), [("heat", "")])
    page = cells.reference_page(a.solution, found["heat"].cells, figures["heat"])
    assert "The reference figure, from the solution" in page.html and "data:image/png;base64," in page.html
    assert "BEGIN SOLUTION" not in page.html


def test_the_self_check_says_a_blank_plot_cell_is_not_answered(graded, course):
    root, _ = course
    public = load_checks(root / "assignments" / "pl" / "public_checks.json")

    def said(name: str) -> str:
        return format_report(public, check_notebook(graded[name][0], public, executor=default_executor()))

    assert "heat  A heat map of the weights $W_{ij}$: not answered" in said("blank")
    assert "heat  A heat map of the weights $W_{ij}$: answered; a person grades it" in said("never_run")


def test_the_review_page_shows_the_run_s_figure_and_typesets_the_title(course, graded, monkeypatch):
    from grader.review.app import Review, make_app
    from grader.review.store import GradeStore

    root, c = course
    monkeypatch.chdir(root)  # where the class was graded from, as `grader review` runs
    review = Review(GradeStore.in_folder(root / "out"), c, c.assignment("pl"), "Tess", "tok")
    http = make_app(review, figures={"heat": ("iVBORw0KGgo=",)}).test_client()
    page = http.get("/grade/heat/never_run?token=tok").get_data(as_text=True)
    assert '<span class="math">A heat map of the weights $W_{ij}$</span>' in page and "/katex.js?token=tok" in page
    script = http.get("/katex.js?token=tok")
    assert script.status_code == 200 and "renderMathInElement" in script.get_data(as_text=True)
    assert http.get("/katex.js").status_code != 200  # the token, as everywhere
    frame = http.get("/answer/heat/never_run?token=tok").get_data(as_text=True)
    assert "from the grader's run of the notebook" in frame and "data:image/png;base64," in frame
    reference = http.get("/reference/heat?token=tok").get_data(as_text=True)
    assert "data:image/png;base64,iVBORw0KGgo=" in reference


@pytest.mark.skipif(bool(_browser_missing()), reason=_browser_missing() or "browser present")
def test_a_ta_sees_the_figure_of_a_notebook_never_run_and_the_reference_figure_in_chromium(
    chromium, course, graded, monkeypatch
):
    import threading

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    from werkzeug.serving import make_server

    from grader.review.app import Review, make_app
    from grader.review.store import GradeStore

    root, c = course
    monkeypatch.chdir(root)
    a = c.assignment("pl")
    review = Review(GradeStore.in_folder(root / "out"), c, a, "Tess", "tok")
    app = make_app(review, figures=reference_figures(References(c, default_executor()), a))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    driver = chromium.get()  # the worker's browser (tests/conftest.py), put back after the page
    wait = WebDriverWait(driver, 20, poll_frequency=0.05)

    def drawn(frame: str) -> list[int]:
        """The widths of the images in a frame, once each has loaded."""
        driver.switch_to.frame(driver.find_element(By.ID, frame))
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".celltag_grader-figure img"))
        images = driver.find_elements(By.CSS_SELECTOR, ".celltag_grader-figure img")
        wait.until(lambda d: all(d.execute_script("return arguments[0].complete", i) for i in images))
        widths = [int(driver.execute_script("return arguments[0].naturalWidth", i)) for i in images]
        driver.switch_to.default_content()
        return widths

    try:
        driver.get(f"http://127.0.0.1:{server.server_port}/grade/heat/never_run?token=tok")
        assert len(drawn("answer")) == 1 and drawn("answer")[0] > 100  # the heat map its code draws
        assert len(drawn("reference")) == 1 and drawn("reference")[0] > 100  # the solution's
        title = driver.find_element(By.CSS_SELECTOR, "h1 .math")
        wait.until(lambda d: title.find_elements(By.CSS_SELECTOR, ".katex"))  # the title's math typeset
    finally:
        chromium.reset()
        server.shutdown()
        server.server_close()


def test_only_png_images_sent_by_the_student_process_are_kept():
    # The student's process could send any text as a figure; a page puts it in a data: URL.
    from grader import capture
    from grader.judge import manual
    from grader.names import figures_id
    from grader.run.job import Captured

    png = base64.b64encode(PNG + b"\0" * 24).decode()
    sent = {"t": "list", "items": [{"t": "str", "v": v} for v in (png, '" onerror="x', "PHN2Zz4=", "1")]}
    kept = manual.figures_of("heat", {figures_id("heat"): Captured(value=capture.decode(sent))})
    assert kept == ((png,), 3)  # the forged two counted as left out, with the one the run left out
