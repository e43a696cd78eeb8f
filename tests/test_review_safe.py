"""Nothing a person entered in the review app is lost or put on the wrong student: edits made on an
older version are refused and merged, limits are said, unsaved text is asked about, the database
is never silently reset, and the outputs never silently lag the grades.

The class is ``test_review``'s (``graded``): ada, bob and cy, two questions graded by a person.
"""

from __future__ import annotations

import csv
import io
import os
import re
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import test_review
from test_review import _browser_missing, _page, card, grader, question, review

from grader.review.store import GradeStore

graded, run = (
    test_review.graded,
    test_review.run,
)  # this module's copy of the class (graded once per worker); a copy of its outputs

BROWSER = pytest.mark.skipif(bool(_browser_missing()), reason=_browser_missing() or "browser present")


def _digest(store: GradeStore, sid: str, qid: str) -> str:
    answer = next(q for q in store.card(sid).questions if q.id == qid).answer
    return answer.digest if answer is not None else ""


# --------------------------------------------------------------------------------------------
# In the page


@BROWSER
def test_a_save_over_a_newer_edit_is_refused_and_both_are_shown_to_merge(chromium, graded, run):
    """ada's comment edited in two tabs: the later save, made on the version the tab read, is
    refused (409) and the tab shows both comments; the grader keeps the merged text."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from test_review import Page

    store = GradeStore.in_folder(run)
    with _page(chromium, graded, run, "two-tabs") as (driver, base, _):
        page = Page(driver)
        driver.get(base + "/grade/explain/ada?token=two-tabs")
        page.loaded("ada")
        first = driver.current_window_handle
        page.keys("c")  # this tab reads version 0 and waits, its comment box open
        # A second tab on the same answer saves its comment first.
        driver.switch_to.new_window("tab")
        driver.get(base + "/grade/explain/ada?token=two-tabs")
        page.loaded("ada")
        page.comment("Tab two: says why the mean is 2.")
        assert store.grade("ada", "explain").comment == "Tab two: says why the mean is 2."
        driver.switch_to.window(first)
        active = driver.switch_to.active_element
        assert active.get_attribute("id") == "comment"
        active.send_keys("Tab one: symmetry around 2.")  # saved as typed, on the version this tab read
        page.wait.until(lambda d: d.find_element(By.ID, "conflict").is_displayed())
        assert page.text("theirs-comment") == "Tab two: says why the mean is 2."
        assert page.text("mine-comment") == "Tab one: symmetry around 2."
        assert "changed elsewhere" in page.text("saved")
        assert store.grade("ada", "explain").comment == "Tab two: says why the mean is 2."  # nothing overwritten
        # Merged by hand in the box, then saved over theirs, knowingly.
        box = driver.find_element(By.ID, "comment")
        box.send_keys(Keys.END, " Tab two: says why the mean is 2.")
        driver.find_element(By.ID, "keep-mine").click()
        page.wait.until(lambda d: page.text("saved") == "saved")
        assert not driver.find_element(By.ID, "conflict").is_displayed()
    assert store.grade("ada", "explain").comment == "Tab one: symmetry around 2. Tab two: says why the mean is 2."
    actions = [
        a for (a,) in sqlite3.connect(store.path).execute("SELECT action FROM log WHERE submission = 'ada' ORDER BY id")
    ]
    assert actions == ["comment", "comment"]  # the refused save left no trace


def test_a_stale_save_is_refused_through_the_interface(graded, run):
    from grader.course import config
    from grader.review.app import MAX_COMMENT, Review, make_app

    course = config.load(graded / "config.yaml")
    http = make_app(Review(GradeStore.in_folder(run), course, course.assignment("rv"), "Tess", "t")).test_client()
    auth = {"X-Review-Token": "t"}
    state = http.get("/api/state/explain/bob", headers=auth).json
    assert state["version"] == 0
    first = http.post("/api/grade/explain/bob", json={"comment": "One.", "base": 0}, headers=auth)
    assert first.status_code == 200 and first.json["version"] == 1
    late = http.post("/api/grade/explain/bob", json={"adjustment": 1, "base": 0}, headers=auth)
    assert late.status_code == 409
    assert late.json["theirs"]["comment"] == "One." and late.json["mine"] == {"adjustment": 1, "base": 0}
    assert http.get("/api/state/explain/bob", headers=auth).json["adjustment"] == 0  # not laid over
    # A comment over the limit is refused whole with the limit named, never cut.
    long = "x" * (MAX_COMMENT + 1)
    refused = http.post("/api/grade/explain/bob", json={"comment": long, "base": 1}, headers=auth)
    assert refused.status_code == 413 and "at most 10,000" in refused.json["error"]
    assert http.get("/api/state/explain/bob", headers=auth).json["comment"] == "One."
    kept = http.post("/api/grade/explain/bob", json={"comment": long[:-1], "base": 1}, headers=auth)
    assert kept.status_code == 200 and kept.json["comment"] == long[:-1]
    item = http.post("/api/rubric/explain", json={"text": "y" * 501, "points": 1}, headers=auth)
    assert item.status_code == 413 and "at most 500" in item.json["error"]


@BROWSER
def test_the_page_states_the_comment_limit_and_asks_before_leaving_unsaved_text(chromium, graded, run):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from test_review import Page

    store = GradeStore.in_folder(run)
    with _page(chromium, graded, run, "limits") as (driver, base, _):
        page = Page(driver)
        driver.get(base + "/grade/explain/bob?token=limits")
        page.loaded("bob")
        assert "up to 10,000 characters" in driver.find_element(By.CSS_SELECTOR, "label").parent.page_source
        page.keys("c")
        box = driver.switch_to.active_element
        driver.execute_script(
            "arguments[0].value = 'y'.repeat(10000); arguments[0].dispatchEvent(new Event('input'))", box
        )
        box.send_keys("z")  # typed: 10,001 characters
        page.wait.until(lambda d: page.text("comment-count") == "10,001 of 10,000 characters")
        box.send_keys(Keys.ESCAPE)
        page.wait.until(lambda d: "over 10,000 characters" in page.text("saved"))
        assert store.grade("bob", "explain") is None  # nothing saved, nothing cut
        # Leaving with text not saved: the page stops the unload, so the browser asks. (WebDriver
        # accepts a beforeunload prompt by itself, so the page's answer to the event is what is read.)
        assert driver.execute_script(LEAVE) is True
        # Shortened, it is saved, and leaving asks nothing.
        page.keys("c")
        driver.switch_to.active_element.send_keys(Keys.BACKSPACE * 20, Keys.ESCAPE)
        page.wait.until(lambda d: page.text("saved") == "saved")
        assert driver.execute_script(LEAVE) is False
        page.keys("c")
        driver.switch_to.active_element.send_keys(" and more")  # typed, the save not back yet
        assert driver.execute_script(LEAVE) is True
        page.wait.until(lambda d: page.text("saved") == "saved" and d.execute_script(LEAVE) is False)
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        page.keys("j")
        page.loaded("cy")
    assert store.grade("bob", "explain").comment == "y" * 9_981 + " and more"


# Would the page ask before leaving? A cancelable beforeunload event, as the browser sends one.
LEAVE = "const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented;"


@BROWSER
def test_a_failed_write_of_the_outputs_is_shown_in_the_page_and_tried_again(chromium, graded, run, monkeypatch):
    import errno

    from test_review import Page

    from grader import outputs
    from grader.review.app import Writer

    monkeypatch.setattr(Writer, "RETRY", 0.5)
    real = outputs.write_submission

    def full(*args, **kw):
        raise OSError(errno.ENOSPC, "No space left on device", str(run / "ada.yaml"))

    store = GradeStore.in_folder(run)
    store.add_item("explain", "Names the symmetry", 2)
    with _page(chromium, graded, run, "full-disk") as (driver, base, writer):
        page = Page(driver)
        driver.get(base + "/grade/explain/ada?token=full-disk")
        page.loaded("ada")
        monkeypatch.setattr(outputs, "write_submission", full)
        page.keys("1")
        page.saved("Graded: 2 / 3 points")
        page.wait.until(lambda d: "No space left on device" in page.text("outputs-problem"))
        assert "Not written yet" in page.text("outputs-problem")
        assert question(card(run, "ada"), "explain")["status"] == "manual"  # as it was: never reported as done
        monkeypatch.setattr(outputs, "write_submission", real)  # space again: the next try writes them
        page.wait.until(lambda d: question(card(run, "ada"), "explain")["status"] == "graded")
        page.wait.until(lambda d: not page.text("outputs-problem"))
        assert writer.problem == ""


# --------------------------------------------------------------------------------------------
# On the command line


def _serve(graded: Path, out: Path) -> tuple[subprocess.Popen[str], str, str]:
    """``grader review rv --out OUT`` in its own process: (the process, its base URL, its token, its
    first lines)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader.cli", "review", "rv", "--out", str(out), "--grader", "Tess"],
        cwd=graded,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        found = re.search(r"open (http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
        if found:
            return proc, found[1], found[2] + "\n" + "".join(lines)
    raise AssertionError(proc.stderr.read() if proc.stderr else "no URL")


def test_outputs_left_behind_by_a_killed_server_are_written_on_the_next_start(graded, run):
    proc, base, said = _serve(graded, run)
    token = said.split("\n")[0]
    request = urllib.request.Request(
        base + "/api/grade/explain/ada",
        data=b'{"comment": "Saved just before the kill.", "base": 0}',
        headers={"X-Review-Token": token, "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request) as resp:
        assert resp.status == 200
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)  # its pipes closed with it
    # Whether its writer got there first or not, a save it committed and never wrote out (done
    # here as the server does it, in the store) leaves the outputs behind the database.
    store = GradeStore.in_folder(run)
    store.set_comment(
        "bob", "explain", "Committed, never written.", grader="Tess", digest=_digest(store, "bob", "explain")
    )
    assert "graded_by" not in question(card(run, "bob"), "explain")
    assert store.grade("ada", "explain").comment == "Saved just before the kill."
    proc, _, said = _serve(graded, run)
    try:
        assert "older than the grades: written again" in said
        assert question(card(run, "ada"), "explain")["graded_by"]["comment"] == "Saved just before the kill."
        assert question(card(run, "bob"), "explain")["graded_by"]["comment"] == "Committed, never written."
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "written with the grades" in out
    proc, _, said = _serve(graded, run)  # up to date now: nothing to write
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert "older than the grades" not in said


def test_a_grade_typed_into_a_scorecard_is_taken_once_and_kept_by_a_later_import(graded, run, tmp_path):
    store = GradeStore.in_folder(run)
    edited = (run / "cy.yaml").read_text()
    at = edited.index("id: weights")
    edited = edited[:at] + edited[at:].replace("score: 0\n", "score: 1.5\n", 1)
    (run / "cy.yaml").write_text(edited)
    sheet = tmp_path / "ada.csv"
    sheet.write_text("student,question,points,comment\nada,explain,2,Fine.\n")  # a sheet about ada only
    proc = review(graded, run, "--import", str(sheet))
    assert proc.returncode == 0, proc.stderr
    weights = question(card(run, "cy"), "weights")
    assert weights["status"] == "graded" and weights["score"] == 1.5
    assert weights["graded_by"]["grader"] == "edited in cy.yaml"
    book = {r["student"]: r for r in csv.DictReader(io.StringIO((run / "gradebook.csv").read_text()))}
    assert book["cy"]["weights"] == "1.5" and book["ada"]["explain"] == "2"
    # Taken once: a person's later grade stands, and importing again does not bring the typed points back.
    store.set_many([("cy", "weights", 0.5, "Half a point.", _digest(store, "cy", "weights"))], grader="Tess")
    assert review(graded, run, "--import", str(sheet)).returncode == 0
    assert question(card(run, "cy"), "weights")["score"] == 0.5
    log = sqlite3.connect(store.path).execute("SELECT grader FROM log WHERE submission = 'cy'").fetchall()
    assert log == [("edited in cy.yaml",), ("Tess",)]


def test_a_damaged_database_is_a_message_naming_what_to_do_and_is_left_as_it_is(graded, run, tmp_path):
    db = run / "grades.sqlite"
    GradeStore.in_folder(run).set_comment("ada", "explain", "Kept.", grader="Tess", digest="d")
    sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = bytearray(db.read_bytes())
    page = 4096
    data[2 * page + 8 : 2 * page + 400] = os.urandom(392)  # a page of a table scribbled over
    db.write_bytes(bytes(data))
    for args in (("--export", str(tmp_path / "x.csv")), ()):
        proc = review(graded, run, *args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"{db} is not a grades database this grader can read" in proc.stderr
        assert "Nothing was changed" in proc.stderr and f"mv {db} {db}.damaged" in proc.stderr
    graded_again = grader("grade", "subs", "--out", str(run), "--formats", "yaml", cwd=graded)
    assert graded_again.returncode == 2 and "Traceback" not in graded_again.stderr
    assert "is not a grades database" in graded_again.stderr
    assert db.read_bytes() == bytes(data)  # never reset


def test_a_missing_database_is_said_and_its_grades_rebuilt_from_the_scorecards(graded, run):
    store = GradeStore.in_folder(run)
    item = store.add_item("explain", "Names the symmetry", 2)
    store.mark("ada", "explain", item.id, True, grader="Tess", digest=_digest(store, "ada", "explain"))
    store.set_comment("ada", "explain", "Well put.", grader="Tess", digest=_digest(store, "ada", "explain"))
    store.set_many([("bob", "weights", 1.0, "Short.", _digest(store, "bob", "weights"))], grader="Uma")
    from grader.course import config
    from grader.review import merge

    course = config.load(graded / "config.yaml")
    merge.rewrite(store, course, course.assignment("rv"), run, ("yaml", "gradebook"))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.path}{suffix}").unlink(missing_ok=True)
    proc = grader("grade", "subs", "--out", str(run), "--formats", "yaml,gradebook", cwd=graded)
    assert proc.returncode == 0, proc.stderr
    assert f"{run / 'grades.sqlite'} is missing; the 2 grade(s) given by a person" in proc.stderr
    rebuilt = GradeStore.in_folder(run)
    ada = rebuilt.grade("ada", "explain")
    assert ada is not None and ada.comment == "Well put." and ada.grader == "Tess"
    assert [(i.text, i.points) for i in rebuilt.rubric("explain")] == [("Names the symmetry", 2.0)]
    assert question(card(run, "ada"), "explain")["score"] == 2
    bob = question(card(run, "bob"), "weights")
    assert bob["status"] == "graded" and bob["score"] == 1 and bob["graded_by"]["comment"] == "Short."
    book = {r["student"]: r for r in csv.DictReader(io.StringIO((run / "gradebook.csv").read_text()))}
    assert (book["ada"]["explain"], book["bob"]["weights"], book["cy"]["explain"]) == ("2", "1", "pending")


# --------------------------------------------------------------------------------------------
# Files: the grader's own


def test_every_file_the_grader_writes_is_closed_to_other_users_the_database_included(graded, tmp_path):
    out = tmp_path / "made" / "by" / "grader"
    proc = subprocess.run(
        [sys.executable, "-m", "grader.cli", "grade", "subs", "--out", str(out), "--formats", "yaml,md,html,gradebook"],
        cwd=graded,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.umask(0o022),  # a usual umask: it would leave files readable by all
    )
    assert proc.returncode == 0, proc.stderr
    for folder in (tmp_path / "made", tmp_path / "made" / "by", out):
        assert oct(folder.stat().st_mode & 0o777) == oct(0o750), folder
    written = sorted(out.iterdir())
    assert {p.name for p in written} >= {"grades.sqlite", "ada.yaml", "ada.html", "gradebook.csv"}
    for path in written:
        assert oct(path.stat().st_mode & 0o777) == oct(0o640), path
    # While the database is open its WAL and shared-memory files exist: they are 0640 too.
    con = sqlite3.connect(out / "grades.sqlite")
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO meta VALUES ('probe', '1')")
        for suffix in ("-wal", "-shm"):
            companion = out / f"grades.sqlite{suffix}"
            assert companion.exists() and oct(companion.stat().st_mode & 0o777) == oct(0o640), suffix
        con.rollback()
    finally:
        con.close()
    # A database made readable by all (by an older grader) is closed when it is opened again.
    os.chmod(out / "grades.sqlite", 0o644)
    GradeStore.in_folder(out)
    assert oct((out / "grades.sqlite").stat().st_mode & 0o777) == oct(0o640)


# --------------------------------------------------------------------------------------------
# The answer, always


def text_of(driver) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.TAG_NAME, "body").text)


def restructured(skeleton: Path, out: Path) -> Path:
    """dee's notebook: the question's text and its answer cell deleted, the answer written at the end
    under a heading of dee's own, which names no question."""
    import nbformat

    nb = nbformat.read(str(skeleton), as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "why the mean is 2" in c.source)
    del nb.cells[at : at + 2]
    nb.cells += [
        nbformat.v4.new_markdown_cell("## My own notes"),
        nbformat.v4.new_markdown_cell("The values 0, 1, 2, 3, 4 sit **symmetrically** around 2, so the mean is 2."),
    ]
    for cell in nb.cells:
        if cell.cell_type == "code" and "m = ?" in cell.source:
            cell.source = cell.source.replace("m = ?", "m = x.mean()")
    nbformat.write(nb, str(out))
    return out


@BROWSER
def test_an_answer_no_cell_was_found_for_is_read_in_the_whole_notebook_and_its_cells_picked(
    chromium, graded, run, tmp_path
):
    from selenium.webdriver.common.by import By
    from test_review import Page

    subs = tmp_path / "subs"
    subs.mkdir()
    restructured(graded / "assignments/rv/rv.ipynb", subs / "dee.ipynb")
    proc = grader("grade", str(subs), "--out", str(run), "--formats", "yaml,md,html,gradebook", cwd=graded)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    explain = question(card(run, "dee"), "explain")
    assert explain["status"] == "manual" and "answer" not in explain
    # The feedback: waiting for a person, never the autograder's "not found".
    page = (run / "dee.html").read_text()
    assert "not found" not in page and "Questions a person grades from your whole notebook" in page
    assert "waiting for a person" in (run / "dee.md").read_text() and "not found" not in (run / "dee.md").read_text()
    store = GradeStore.in_folder(run)
    store.add_item("explain", "Names the symmetry", 3)
    with _page(chromium, graded, run, "whole") as (driver, base, _):
        page_ = Page(driver)
        driver.get(base + "/grade/explain/dee?token=whole")
        page_.loaded("dee")
        assert "no cell found: the whole notebook" in driver.find_element(By.CSS_SELECTOR, "section.answer h2").text
        page_.wait.until(lambda d: d.find_element(By.ID, "pick").is_displayed())
        rows = {" ".join(li.text.split()) for li in driver.find_elements(By.CSS_SELECTOR, "#pick-cells li")}
        answer_row = next(r for r in rows if "symmetrically" in r)
        assert answer_row.startswith("cell 9 (markdown) unclaimed")
        assert next(r for r in rows if r.startswith("cell 1 ")) == "cell 1 (markdown) # Reading a mean"  # given
        # The frame: every cell under its number, dee's own marked, markdown rendered.
        driver.switch_to.frame(driver.find_element(By.ID, "answer"))
        text = driver.find_element(By.TAG_NAME, "body").text
        assert "cell 9 · not claimed by any question" in text and "cell 1 ·" not in text
        assert "Cells no question claims: 8, 9." in text
        assert driver.find_elements(By.XPATH, "//strong[text()='symmetrically']")  # rendered, not source
        driver.switch_to.default_content()
        driver.find_element(By.ID, "pick-9").click()
        driver.find_element(By.ID, "pick-8").click()
        driver.find_element(By.ID, "pick-save").click()
        page_.wait.until(lambda d: page_.text("pick-said") == "kept: cells 8, 9")
        driver.switch_to.frame(driver.find_element(By.ID, "answer"))
        page_.wait.until(
            lambda d: (
                "cells picked as the answer (8, 9), then the whole notebook" in d.find_element(By.TAG_NAME, "body").text
            )
        )
        assert "cell 9 · picked as the answer · not claimed by any question" in text_of(driver)
        driver.switch_to.default_content()
        page_.keys("1")
        page_.saved("Graded: 3 / 3 points")
        page_.comment("Found it at the end: right.")
    assert store.picked("dee", "explain") == (8, 9)
    explain = question(card(run, "dee"), "explain")
    assert explain["status"] == "graded" and explain["score"] == 3
    assert explain["answer"]["found_by"] == "person" and explain["answer"]["cells"] == [8, 9]
    assert explain["answer"]["text"].startswith("## My own notes\n\nThe values 0, 1, 2, 3, 4 sit **symmetrically**")
    # Graded again, unchanged: the pick and the grade stay.
    proc = grader("grade", str(subs), "--out", str(run), "--formats", "yaml", cwd=graded)
    assert proc.returncode == 0, proc.stderr
    again = question(card(run, "dee"), "explain")
    assert (again["status"], again["score"], again["answer"]["cells"]) == ("graded", 3, [8, 9])


# --------------------------------------------------------------------------------------------
# Attachments: a pasted image in a written answer


def pasted_png() -> str:
    """A small drawing of the five values and their mean, as Jupyter keeps a pasted image (base64 PNG)."""
    import base64

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 1.5), dpi=80)
    ax.plot([0, 1, 2, 3, 4], [0] * 5, "o")
    ax.axvline(2, color="red")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


SVG_SCRIPT = "<svg xmlns='http://www.w3.org/2000/svg' onload='top.document.title=\"pwned-svg\"'><script>top.document.title='pwned-svg2'</script></svg>"


def with_pasted_image(skeleton: Path, out: Path) -> Path:
    """eve's notebook: the written answer is a sentence and a pasted image (a Jupyter attachment),
    with a hostile attachment beside it (an SVG with a script), a link to an HTML attachment and a
    reference to one that is not there."""
    import base64

    import nbformat

    nb = nbformat.read(str(skeleton), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "m = ?" in cell.source:
            cell.source = cell.source.replace("m = ?", "m = x.mean()")
    answer = next(c for c in nb.cells if "answer" in c.metadata.get("tags", []))
    answer.source = (
        "Symmetric around 2, as my sketch shows:\n\n![sketch](attachment:image.png)\n\n"
        "![evil](attachment:evil.svg) [page](attachment:page.html) ![gone](attachment:gone.png)"
    )
    answer["attachments"] = {
        "image.png": {"image/png": pasted_png()},
        "evil.svg": {"image/svg+xml": base64.b64encode(SVG_SCRIPT.encode()).decode()},
        "page.html": {"text/html": base64.b64encode(b"<script>top.document.title='pwned-html'</script>").decode()},
    }
    nbformat.write(nb, str(out))
    return out


def test_an_attachment_renders_in_the_answer_frame_and_nothing_of_it_runs(graded, run, tmp_path):
    from grader.course import config
    from grader.review.app import Review, make_app

    subs = tmp_path / "subs"
    subs.mkdir()
    with_pasted_image(graded / "assignments/rv/rv.ipynb", subs / "eve.ipynb")
    proc = grader("grade", str(subs), "--out", str(run), "--formats", "yaml", cwd=graded)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    course = config.load(graded / "config.yaml")
    http = make_app(Review(GradeStore.in_folder(run), course, course.assignment("rv"), "Tess", "t")).test_client()
    resp = http.get("/answer/explain/eve?token=t")
    assert resp.status_code == 200  # was 500: nbconvert fails on the attachment the frame dropped
    images = re.findall(r'<img[^>]*src="([^"]*)"', resp.text)
    assert [src[:22] for src in images if src.startswith("data:")] == ["data:image/png;base64,"]
    assert "svg" not in resp.text.split("</style>")[-1].lower() and "pwned" not in resp.text.split("<body")[1]
    assert "data:text/html" not in resp.text and "#attachment-not-shown" in resp.text
    assert "script-src" not in resp.headers["Content-Security-Policy"]


@BROWSER
def test_a_pasted_image_is_seen_in_the_page_and_stays_inert(chromium, graded, run, tmp_path):
    from selenium.webdriver.common.by import By
    from test_review import Page

    subs = tmp_path / "subs"
    subs.mkdir()
    with_pasted_image(graded / "assignments/rv/rv.ipynb", subs / "eve.ipynb")
    assert grader("grade", str(subs), "--out", str(run), "--formats", "yaml", cwd=graded).returncode == 0
    with _page(chromium, graded, run, "pasted") as (driver, base, _):
        page = Page(driver)
        driver.get(base + "/grade/explain/eve?token=pasted")
        page.loaded("eve")
        driver.switch_to.frame(driver.find_element(By.ID, "answer"))
        page.wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "img[alt=sketch]"))
        sketch = driver.find_element(By.CSS_SELECTOR, "img[alt=sketch]")
        page.wait.until(lambda d: d.execute_script("return arguments[0].complete", sketch))
        assert driver.execute_script("return arguments[0].naturalWidth", sketch) == 240  # drawn, 3 in at 80 dpi
        assert "Symmetric around 2, as my sketch shows:" in text_of(driver)
        driver.switch_to.default_content()
        assert "pwned" not in driver.title


# --------------------------------------------------------------------------------------------
# Names that could fool the eye


@BROWSER
def test_names_are_shown_in_one_unicode_form_and_look_alikes_are_marked(chromium, graded, run):
    import dataclasses
    import unicodedata

    from selenium.webdriver.common.by import By
    from test_review import Page

    store = GradeStore.in_folder(run)
    ada = store.submission("ada")
    cyrillic = "D\u0435\u0435"  # two Cyrillic "е"
    nfd = unicodedata.normalize("NFD", "Zoë")
    for sid, name in (("dee", "Dee"), ("dee-cyrillic", cyrillic), ("zoe", "Zoë"), ("zoe-nfd", nfd)):
        store.put_card(sid, name, ada.path, dataclasses.replace(store.card("ada"), id=sid, student=name))
    with _page(chromium, graded, run, "names") as (driver, base, _):
        page = Page(driver)

        def marks(sid: str, who: str) -> list[str]:
            driver.get(f"{base}/grade/explain/{sid}?token=names")
            page.loaded(who)
            return [m.text for m in driver.find_elements(By.CSS_SELECTOR, ".name-mark")]

        assert marks("dee-cyrillic", cyrillic) == [
            "⚠ mixes Latin and Cyrillic letters",
            "⚠ looks like 'Dee', another submission's name",
        ]
        assert marks("dee", "Dee") == [f"⚠ looks like '{cyrillic}', another submission's name"]
        # Two forms of one name: both shown as the same letters (NFC), each marked.
        assert marks("zoe-nfd", "Zoë") == ["⚠ another submission has this name in another Unicode form (U+00EB)"]
        assert page.text("who").endswith(": Zoë") and unicodedata.is_normalized("NFC", page.text("who"))
        assert marks("zoe", "Zoë") == ["⚠ another submission has this name in another Unicode form (U+0308)"]
        assert marks("ada", "ada") == []


# --------------------------------------------------------------------------------------------
# The reference answer: the solution's code, never its markers


def test_the_reference_answer_shows_no_solution_markers(tmp_path):
    import nbformat

    from grader.review import cells

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("## Question 4: plot the squares\nPlot `x**2` against `x`."),
        nbformat.v4.new_code_cell(
            "import matplotlib.pyplot as plt\n### BEGIN SOLUTION\nplt.plot(x, x ** 2)  # SOLUTION\n"
            "plt.title('squares')\n    # END SOLUTION\nplt.show()"
        ),
        nbformat.v4.new_markdown_cell("<!-- BEGIN SOLUTION -->\nThe squares grow fast.\n<!-- END SOLUTION -->"),
    ]
    nb.cells[1].metadata["tags"] = ["answer"]
    solution = tmp_path / "plot.ipynb"
    nbformat.write(nb, str(solution))
    page = cells.reference_page(solution, (2, 3))
    text = re.sub(r"<[^>]+>", "", page.html)
    assert "SOLUTION" not in text and "SOLUTION" not in page.html
    for kept in ("Plot", "plt", "plot", "squares", "The squares grow fast."):
        assert kept in text, kept
    assert "Reference answer" in text


def test_a_database_gone_while_the_page_is_open_is_said_and_not_made_again_empty(graded, run):
    from grader.course import config
    from grader.review.app import Review, make_app

    course = config.load(graded / "config.yaml")
    store = GradeStore.in_folder(run)
    http = make_app(Review(store, course, course.assignment("rv"), "Tess", "t")).test_client()
    auth = {"X-Review-Token": "t"}
    assert http.post("/api/grade/explain/ada", json={"comment": "Kept.", "base": 0}, headers=auth).status_code == 200
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.path}{suffix}").unlink(missing_ok=True)
    saved = http.post("/api/grade/explain/ada", json={"comment": "Lost?", "base": 1}, headers=auth)
    assert saved.status_code == 503 and "grades.sqlite is gone: nothing more can be saved" in saved.json["error"]
    page = http.get("/grade/explain/ada?token=t")
    assert page.status_code == 503 and "Restore it from a backup" in page.text and "Traceback" not in page.text
    assert not store.path.exists()  # not made again, empty, in its place
