"""Questions graded by a person: pending in every output, then graded through the review app's
store, its HTTP interface, its CSV import and export, and in a real browser (Chromium, if here).

One class of three submissions is graded once per worker (``review_class``, tests/conftest.py) and
copied for the module (``graded``); tests that change grades work on a copy of its output folder.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import re
import shutil
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import review_course
import yaml
from review_course import CHROMEDRIVER, CHROMIUM, Chromium, _browser_missing

from grader.outputs import pages

HERE = Path(__file__).resolve().parent


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def graded(review_class: Path, tmp_path_factory) -> Path:
    """The class of ``review_course.graded_class`` (ada answered both questions, bob one with tags
    dropped, a cell added and hostile HTML, cy none), graded once per worker: this module's own copy,
    so nothing a test here writes into it reaches another module's tests."""
    return review_course.copy_class(review_class, tmp_path_factory.mktemp("review") / "class")


def card(out: Path, name: str) -> dict:
    return yaml.safe_load((out / f"{name}.yaml").read_text())


def question(data: dict, qid: str) -> dict:
    return next(q for q in data["questions"] if q["id"] == qid)


def test_the_skeleton_keeps_the_answer_tag(graded):
    nb = json.loads((graded / "assignments/rv/rv.ipynb").read_text())
    prompts = [c for c in nb["cells"] if "answer" in c.get("metadata", {}).get("tags", [])]
    assert ["".join(c["source"]) for c in prompts] == ["YOUR ANSWER HERE"] * 2
    public = json.loads((graded / "assignments/rv/public_checks.json").read_text())
    assert [q.get("manual", False) for q in public["questions"]] == [False, True, True]


def test_self_check_says_an_untouched_answer_is_not_answered(graded, tmp_path):
    shutil.copy(graded / "subs/cy.ipynb", graded / "assignments/rv/cy.ipynb")
    proc = grader("check", "assignments/rv/cy.ipynb", cwd=graded)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 1  # not answered yet
    assert any(line.startswith("⬜ explain") and line.endswith("not answered") for line in lines), proc.stdout
    assert "passes the public checks" not in next(line for line in lines if "weights" in line)
    assert "1 of 1 question passes the public checks. 0 of 2 graded by a person are answered." in proc.stdout
    shutil.copy(graded / "subs/ada.ipynb", graded / "assignments/rv/ada.ipynb")
    proc = grader("check", "assignments/rv/ada.ipynb", cwd=graded)
    assert proc.returncode == 0, proc.stdout
    assert "⏳ explain  Why the mean is 2: answered; a person grades it" in proc.stdout


def test_pending_in_every_output(graded):
    out = graded / "out"
    bob = card(out, "bob")
    explain = question(bob, "explain")
    assert explain["status"] == "manual" and explain["score"] == 0
    # The answer, found although bob's editor dropped the tag, with the cells bob added after it.
    assert explain["answer"]["found_by"] == "skeleton"
    assert explain["answer"]["text"].startswith("Because 10/5 = 2.\n\nAnd a second thought.")
    assert len(explain["answer"]["cells"]) == 4
    assert question(card(out, "ada"), "explain")["answer"]["found_by"] == "tag"
    untouched = question(card(out, "cy"), "weights")
    assert untouched["answer"]["text"] == "YOUR ANSWER HERE" and "not answered yet" in untouched["feedback"][0]
    # Markdown and HTML: waiting, placed after the answer (not "not found in the notebook").
    assert "| explain: Why the mean is 2 | ⏳ waiting for a person to grade it | 0/3 |" in (out / "bob.md").read_text()
    page = (out / "bob.html").read_text()
    assert "answers were not found" not in page
    assert page.index('id="question-explain"') > page.index("And a second thought.")
    assert 'class="grader-box grader-manual"' in page
    # Gradescope: a neutral test, no score, no failed status.
    tests = json.loads((out / "bob.gradescope.json").read_text())["tests"]
    pending = next(t for t in tests if t["name"].startswith("explain"))
    assert "status" not in pending and "score" not in pending and "waiting for a person" in pending["output"]
    # The gradebook marks it; the report leaves it out of pass rates and full marks.
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((out / "gradebook.csv").read_text()))}
    assert rows["bob"]["explain"] == "pending" and rows["bob"]["mean"] == "2"
    report = (out / "report.html").read_text()
    assert "full marks: 2 ·" in report and "by a person: 0 of 3 graded" in report


@pytest.fixture
def run(graded, tmp_path):
    """A copy of the graded class's output folder, to change grades in."""
    out = tmp_path / "out"
    shutil.copytree(graded / "out", out)
    return out


def review(graded: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``grader review rv --out OUT ARGS`` run in this process (its modules are loaded already)."""
    import contextlib
    import os

    from grader.cli import main

    stdout, stderr, here = io.StringIO(), io.StringIO(), os.getcwd()
    os.chdir(graded)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(["review", "rv", "--out", str(out), "--grader", "Tess", *args])
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["grader", "review"], code, stdout.getvalue(), stderr.getvalue())


def test_grades_come_in_through_a_spreadsheet_and_reach_every_output(graded, run, tmp_path):
    from grader.review.store import GradeStore

    # The outputs the import writes again (the HTML page's are tested with the review page's grades).
    GradeStore.in_folder(run).set_meta("formats", ["yaml", "md", "gradescope", "gradebook", "report"])
    sheet = tmp_path / "grades.csv"
    proc = review(graded, run, "--export", str(sheet))
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(sheet.read_text())))
    assert [(r["student"], r["question"], r["points"]) for r in rows] == [
        (s, q, "") for s in ("ada", "bob", "cy") for q in ("explain", "weights")
    ]
    assert rows[0]["answer"] == "Symmetric values around 2." and rows[0]["max_points"] == "3"
    rows[0].update(points="2.5", comment="Right idea; say why symmetry gives the mean.")
    rows[2].update(points="1", comment="")
    with sheet.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    proc = review(graded, run, "--import", str(sheet))
    assert proc.returncode == 0, proc.stderr
    assert "imported 2 grade(s)" in proc.stdout
    ada = card(run, "ada")
    explain = question(ada, "explain")
    assert explain["status"] == "graded" and explain["score"] == 2.5 and ada["score"] == 4.5
    assert explain["graded_by"]["grader"] == "Tess" and explain["graded_by"]["comment"].startswith("Right idea")
    assert "Comment: Right idea; say why symmetry gives the mean." in explain["feedback"]
    assert "| explain: Why the mean is 2 | ✍ graded by a person | 2.5/3 |" in (run / "ada.md").read_text()
    book = {r["student"]: r for r in csv.DictReader(io.StringIO((run / "gradebook.csv").read_text()))}
    assert book["ada"]["explain"] == "2.5" and book["ada"]["score"] == "4.5" and book["ada"]["weights"] == "pending"
    assert book["bob"]["explain"] == "1"
    test = next(
        t for t in json.loads((run / "ada.gradescope.json").read_text())["tests"] if t["name"].startswith("explain")
    )
    assert test["score"] == 2.5 and test["max_score"] == 3 and test["status"] == "failed"
    assert "by a person: 2 of 3 graded" in (run / "report.html").read_text()


def test_a_rubric_written_in_config_yaml_is_there_when_grading_starts(graded, run, tmp_path):
    from grader.course.config import load
    from grader.errors import ConfigError
    from grader.review.store import GradeStore

    rubric = (
        "        manual: true\n        rubric:\n          - text: Names the symmetry\n            points: 2\n"
        "          - {text: 'Shows the sum, 10 / 5', points: 1}\n          - {text: Off topic, points: -1}\n"
    )
    text = (graded / "config.yaml").read_text()
    config = graded / f"{tmp_path.name}.yaml"  # beside the course's own: the same folders, a rubric added
    config.write_text(text.replace("        manual: true\n", rubric, 1))
    explain = next(q for q in load(config).assignment("rv").questions if q.id == "explain")
    assert [(i.text, i.points) for i in explain.rubric] == [
        ("Names the symmetry", 2.0),
        ("Shows the sum, 10 / 5", 1.0),
        ("Off topic", -1.0),
    ]
    assert review(graded, run, "--config", str(config), "--export", str(tmp_path / "sheet.csv")).returncode == 0
    store = GradeStore.in_folder(run)
    assert [(i.text, i.points) for i in store.rubric("explain")] == [(i.text, i.points) for i in explain.rubric]
    assert store.rubric("weights") == []
    # The page's edits stay: a re-pointed item keeps its points, and one removed from the page's
    # text is not added again; a new item in config.yaml is.
    first = store.rubric("explain")[0]
    store.update_item(first.id, text="Names the symmetry around 2", points=1.5, grader="Tess")
    config.write_text(
        config.read_text().replace(
            "{text: Off topic, points: -1}", "{text: Off topic, points: -1}\n          - {text: Uses n, points: 1}"
        )
    )
    assert review(graded, run, "--config", str(config), "--export", str(tmp_path / "sheet.csv")).returncode == 0
    assert [(i.text, i.points) for i in store.rubric("explain")] == [
        ("Names the symmetry around 2", 1.5),
        ("Shows the sum, 10 / 5", 1.0),
        ("Off topic", -1.0),
        ("Uses n", 1.0),
    ]
    # A rubric belongs to a question a person grades, and says each item once.
    for bad, message in (
        (
            text.replace("          - value: m\n", "          - value: m\n        rubric: [{text: x, points: 1}]\n"),
            "only a question graded by a person ('manual: true') has a rubric",
        ),
        (
            text.replace(
                "        manual: true\n",
                "        manual: true\n        rubric: [{text: x, points: 1}, {text: x, points: 2}]\n",
                1,
            ),
            "repeats the item 'x'",
        ),
        (
            text.replace("        manual: true\n", "        manual: true\n        rubric: [{text: x}]\n", 1),
            "rubric[0].points is required",
        ),
    ):
        config.write_text(bad)
        with pytest.raises(ConfigError, match=re.escape(message)):
            load(config)


def test_a_bad_sheet_is_refused_row_by_row_and_nothing_is_applied(graded, run, tmp_path):
    sheet = tmp_path / "bad.csv"
    sheet.write_text(
        "student,question,points,comment\n"
        "ada,explain,3,fine\n"  # good, but not applied: other rows are bad
        "zed,explain,1,\n"  # no such student
        "ada,mean,1,\n"  # graded by the autograder
        "bob,explain,4,\n"  # over the question's points
        "bob,weights,lots,\n"  # not a number
        "ada,explain,2,\n"
    )  # twice
    proc = review(graded, run, "--import", str(sheet))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "nothing imported; 5 row(s) refused" in proc.stderr
    for expected in (
        "row 3: no submission or student 'zed' in this run",
        "row 4: question 'mean' is graded by the autograder, not by a person",
        "row 5: 4 points is outside 0 to 3 for question 'explain'",
        "row 6: points 'lots' is not a number",
        "row 7: 'ada', question 'explain' is graded already in row 2",
    ):
        assert expected in proc.stderr
    assert question(card(run, "ada"), "explain")["status"] == "manual"
    from grader.review.store import GradeStore

    assert GradeStore.in_folder(run).grade("ada", "explain") is None


def test_two_graders_at_once_lose_nothing(run):
    import threading

    from grader.review.store import GradeStore

    item = GradeStore.in_folder(run).add_item("explain", "Mentions symmetry", 2)
    errors = []

    def grade(who: str, name: str) -> None:
        try:
            store = GradeStore.in_folder(run)  # each its own connection, as two servers would
            for i in range(8):
                store.set_comment(name, "explain", f"{who} {i}", grader=who, digest="d")
                store.mark(name, "explain", item.id, i % 2 == 0, grader=who, digest="d")
                store.set_adjustment("ada", "weights", 0.5, grader=who, digest="d")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=grade, args=(w, n)) for w, n in (("Tess", "ada"), ("Uma", "bob"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = GradeStore.in_folder(run)
    for who, name in (("Tess", "ada"), ("Uma", "bob")):
        g = store.grade(name, "explain")
        assert g is not None and g.comment == f"{who} 7" and g.items == () and g.grader == who
    # Changing an item's points changes every answer it is applied to.
    store.mark("ada", "explain", item.id, True, grader="Tess", digest="d")
    store.mark("bob", "explain", item.id, True, grader="Uma", digest="d")
    store.update_item(item.id, points=1.5)
    from grader.review import merge

    assert {merge.person_grade(store, store.grade(n, "explain"), 3).points for n in ("ada", "bob")} == {1.5}


def test_grading_again_keeps_grades_of_unchanged_answers_and_flags_changed_ones(graded, run, tmp_path):
    from grader.review.store import GradeStore

    store = GradeStore.in_folder(run)
    for name in ("ada", "bob"):
        store.set_many([(name, "explain", 2.0, "ok", _digest(store, name))], grader="Tess")
    # Points typed into a scorecard by hand, for a question still waiting, are kept as a grade.
    edited = (
        (run / "cy.yaml")
        .read_text()
        .replace("score: 0\n  max_score: 2\n  status: manual", "score: 1.5\n  max_score: 2\n  status: manual")
    )
    (run / "cy.yaml").write_text(edited)
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(graded / "subs/ada.ipynb", subs)
    shutil.copy(graded / "subs/cy.ipynb", subs)
    review_course.student(
        graded / "assignments/rv/rv.ipynb",
        subs / "bob.ipynb",
        mean="2.0",
        explain="Because the sum is 10 and there are 5 values.",
    )
    proc = grader("grade", str(subs), "--out", str(run), "--formats", "yaml,gradebook", cwd=graded)
    assert proc.returncode == 0, proc.stderr
    assert question(card(run, "ada"), "explain")["status"] == "graded"
    assert question(card(run, "ada"), "explain")["score"] == 2
    bob = question(card(run, "bob"), "explain")
    assert bob["status"] == "manual" and bob["score"] == 0 and "changed since it was graded" in bob["feedback"][0]
    cy = question(card(run, "cy"), "weights")
    assert cy["status"] == "graded" and cy["score"] == 1.5 and cy["graded_by"]["grader"] == "edited in cy.yaml"


def _digest(store, name: str) -> str:
    answer = next(q for q in store.card(name).questions if q.id == "explain").answer
    return answer.digest


@pytest.fixture
def client(graded, run):
    """The review app over HTTP (Flask's test client), on a copy of the class's outputs."""
    from grader.course import config
    from grader.review.app import Review, make_app
    from grader.review.store import GradeStore

    course = config.load(graded / "config.yaml")
    review = Review(GradeStore.in_folder(run), course, course.assignment("rv"), "Tess", "s3cret-token")
    app = make_app(review)
    return app.test_client(), review


def test_every_request_without_the_token_is_refused(client):
    http, _ = client
    for path in (
        "/",
        "/grade/explain",
        "/grade/explain/ada",
        "/next/explain/ada",
        "/answer/explain/bob",
        "/reference/explain",
        "/api/state/explain/ada",
        "/static/review.js",
    ):
        assert http.get(path).status_code == 403, path
        assert http.get(path + "?token=wrong").status_code == 403, path
    assert http.post("/api/grade/explain/ada", json={"adjustment": 1}).status_code == 403
    assert (
        http.post("/api/grade/explain/ada", json={"adjustment": 1}, headers={"X-Review-Token": "nope"}).status_code
        == 403
    )
    page = http.get("/?token=s3cret-token")
    assert page.status_code == 200 and "0 of 3 graded" in page.text
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]


def test_grading_through_the_page_interface(client):
    http, review = client
    auth = {"X-Review-Token": "s3cret-token"}
    items = http.post("/api/rubric/explain", json={"text": "Mentions symmetry", "points": 2}, headers=auth).json
    items = http.post("/api/rubric/explain", json={"text": "Explains why", "points": 1}, headers=auth).json["items"]
    first, second = items[0]["id"], items[1]["id"]
    state = http.post("/api/grade/explain/ada", json={"item": first, "on": True}, headers=auth).json
    assert state["status"] == "graded" and state["points"] == 2 and state["graded"] == 1
    assert state["submission"] == "ada"
    state = http.post("/api/grade/explain/ada", json={"adjustment": -0.5, "comment": "Close."}, headers=auth).json
    assert state["points"] == 1.5 and state["comment"] == "Close."
    http.post("/api/grade/explain/bob", json={"item": first, "on": True}, headers=auth)
    http.post("/api/grade/explain/bob", json={"item": second, "on": True}, headers=auth)
    # One item's points changed: every answer it is applied to changes.
    http.post("/api/rubric/explain", json={"id": first, "text": "Mentions symmetry", "points": 1.5}, headers=auth)
    assert http.get("/api/state/explain/ada", headers=auth).json["points"] == 1.0
    assert http.get("/api/state/explain/bob", headers=auth).json["points"] == 2.5
    assert http.get("/api/state/explain/bob", headers=auth).json["graded"] == 2
    # Free points within bounds only; a bad body is refused; a submission is named by its id only.
    assert http.post("/api/grade/explain/ada", json={"adjustment": 9}, headers=auth).status_code == 400
    assert http.post("/api/grade/explain/ada", json={"adjustment": "x"}, headers=auth).status_code == 400
    for unknown in ("zed", "0", "1"):
        assert http.post(f"/api/grade/explain/{unknown}", json={"adjustment": 1}, headers=auth).status_code == 404
    assert http.post("/api/grade/mean/ada", json={"adjustment": 1}, headers=auth).status_code == 404  # autograded
    # The scorecards, once written again, say who graded it, with the items and the comment.
    from grader.review import merge

    store = review.store
    merge.rewrite(store, review.course, review.assignment, store.path.parent, ("yaml", "md", "html", "gradebook"))
    explain = question(card(store.path.parent, "ada"), "explain")
    assert explain["score"] == 1 and explain["graded_by"]["rubric"] == [{"text": "Mentions symmetry", "points": 1.5}]
    assert explain["feedback"][1:] == [
        "Mentions symmetry (+1.5)",
        "Points adjusted by the grader (-0.5)",
        "Comment: Close.",
    ]
    page = (store.path.parent / "ada.html").read_text()
    assert "Mentions symmetry (+1.5)" in page and 'class="grader-box grader-graded"' in page


def test_hostile_answers_are_inert_in_the_page(client):
    http, _ = client
    resp = http.get("/answer/explain/bob?token=s3cret-token")  # bob's: <script>, onerror=, javascript:
    assert resp.status_code == 200 and "And a second thought." in resp.text
    # Its markdown has math: the policy allows the bundled KaTeX's one script (by its hash), nothing else.
    csp = resp.headers["Content-Security-Policy"]
    [script] = re.findall(r"<script>(.*?)</script>", resp.text, flags=re.S)
    assert (
        csp.startswith(f"default-src 'none'; script-src {pages.script_source(script)};")
        and "renderMathInElement" in script
    )
    assert f'content="{csp}"' in resp.text  # the same policy in the page itself
    student = resp.text[: resp.text.index("<script>")]  # the answer as rendered, before the one script
    assert "<script" not in student and "onerror" not in student and "onmouseover" not in student
    assert 'href="javascript:' not in resp.text
    page = http.get("/grade/explain/bob?token=s3cret-token").text
    assert '<iframe id="answer" title="the student\'s answer" sandbox="allow-scripts"' in page  # no origin of its own
    plain = http.get("/answer/explain/ada?token=s3cret-token")  # ada's: no math, so no script at all
    assert "<script" not in plain.text and "script-src" not in plain.headers["Content-Security-Policy"]


def test_every_link_and_call_of_the_page_names_the_submission_by_its_id(client):
    """An id with a folder in it and escaped letters (``Zo%C3%AB%20Ng/hw``: the notebook hw.ipynb of
    two graded from the folder ``Zoë Ng/``) goes through every link the page makes and back."""
    import html as html_module

    http, review = client
    store = review.store
    sid = "Zo%C3%AB%20Ng/hw"
    ada = store.submission("ada")
    store.put_card(sid, "Zoë Ng-hw", ada.path, dataclasses.replace(store.card("ada"), id=sid, student="Zoë Ng"))
    page = http.get(f"/grade/explain/{urllib.parse.quote(sid)}?token=s3cret-token")
    assert page.status_code == 200 and "<b>Zoë Ng-hw (Zoë Ng)</b>" in page.text
    links = {k: html_module.unescape(v) for k, v in re.findall(r'data-([a-z-]+)-url="([^"]*)"', page.text)}
    assert links["state"] == "/api/state/explain/Zo%25C3%25AB%2520Ng/hw"  # url_for's quoting of the id
    auth = {"X-Review-Token": "s3cret-token"}
    state = http.post(links["grade"], json={"comment": "Zoë's own."}, headers=auth).json
    assert state["submission"] == sid and state["comment"] == "Zoë's own."
    assert store.grade(sid, "explain").comment == "Zoë's own." and store.grade("ada", "explain") is None
    assert http.get(links["state"], headers=auth).json["comment"] == "Zoë's own."
    # Every address on the page came from url_for: none is built from a place in the class.
    hrefs = re.findall(r'(?:href|src)="([^"]+)"', page.text)
    assert all(
        h.startswith(("/static/", "/next/", "/previous/", "/grade/", "/answer/", "/reference/", "/?")) for h in hrefs
    )
    nxt = http.get(html_module.unescape(links["next"]))  # Zoë Ng-hw sorts after cy: next is ada again
    assert nxt.status_code == 302 and "/grade/explain/ada?" in nxt.headers["Location"]
    prev = http.get(html_module.unescape(links["previous"]))
    assert prev.status_code == 302 and "/grade/explain/cy?" in prev.headers["Location"]


def test_anonymous_grading_hides_names(graded, run):
    from grader.course import config
    from grader.review.app import Review, make_app
    from grader.review.store import GradeStore

    course = config.load(graded / "config.yaml")
    review = Review(GradeStore.in_folder(run), course, course.assignment("rv"), "Tess", "t", anonymous=True)
    http = make_app(review).test_client()
    key = review.key("bob")
    assert key != "bob" and len(key) == 20  # the address names no one either
    page = http.get(f"/grade/weights/{key}?token=t").text
    assert "Submission 2 of 3: <b>Submission 2</b>" in page and "bob" not in page
    for named in ("bob", "Zoë"):
        assert http.get(f"/grade/weights/{named}?token=t").status_code == 404  # by a pseudonym only
    nxt = http.get(f"/next/weights/{key}?token=t")
    assert (
        nxt.status_code == 302 and review.key("cy") in nxt.headers["Location"] and "cy" not in nxt.headers["Location"]
    )


ROSTER = (
    "name,email,github,lms_id,sis_user_id,sis_login_id,section,submission\n"
    "Ada Lovelace,ada@uni.edu,ada-l,101,S-1,alove,Tue,ada\n"
    "Bob Moses,bob@uni.edu,bob,102,S-2,bmoses,Wed,\n"
    "=Cy Young,cy@uni.edu,cy,103,S-3,cyoung,Wed,\n"
    "Dee Absent,dee@uni.edu,dee,104,S-4,dabsent,Tue,\n"
)


def test_canvas_and_moodle_gradebooks_follow_their_import_formats(graded, run, tmp_path):
    from grader.course import config
    from grader.outputs.canvas import HEADER
    from grader.review import merge
    from grader.review.store import GradeStore

    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    store = GradeStore.in_folder(run)
    store.set_meta("roster", str(roster))
    store.set_many(
        [("ada", q, 1.0, "Short but right.", _digest_of(store, "ada", q)) for q in ("explain", "weights")],
        grader="Tess",
    )
    course = config.load(graded / "config.yaml")
    merge.rewrite(store, course, course.assignment("rv"), run, ("canvas", "moodle"))
    rows = list(csv.reader(io.StringIO((run / "canvas.csv").read_text())))
    # Canvas: the five student columns, one column per assignment, then the Points Possible row.
    assert tuple(rows[0][:5]) == HEADER == ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
    assert rows[0][5:] == ["Reading a mean"] and rows[1] == ["Points Possible", "", "", "", "", "7"]
    body = {r[0]: r for r in rows[2:]}
    assert body["Ada Lovelace"] == ["Ada Lovelace", "101", "S-1", "alove", "Tue", "4"]  # 2 + 1 + 1
    assert body["Bob Moses"][5] == ""  # still waiting for a person: no change in Canvas
    assert "'=Cy Young" in body and body["Dee Absent"][5] == ""
    # Moodle: an identifier column mapped to the e-mail, the grade item, and its feedback.
    moodle = list(csv.DictReader(io.StringIO((run / "moodle.csv").read_text())))
    assert list(moodle[0]) == ["Email address", "Reading a mean", "Reading a mean feedback"]
    ada = next(r for r in moodle if r["Email address"] == "ada@uni.edu")
    assert ada["Reading a mean"] == "4"
    assert ada["Reading a mean feedback"].splitlines() == [
        "mean: 2/2",
        "explain: 1/3 (Short but right.)",
        "weights: 1/2 (Short but right.)",
    ]
    bob = next(r for r in moodle if r["Email address"] == "bob@uni.edu")
    assert bob["Reading a mean"] == "" and "explain: waiting for a person (3 points)" in bob["Reading a mean feedback"]


def test_an_lms_format_without_a_roster_is_refused_before_grading(graded):
    proc = grader("grade", "subs/ada.ipynb", "--out", "unused", "--formats", "canvas", cwd=graded)
    assert proc.returncode == 2 and "--formats canvas needs a roster" in proc.stderr
    assert not (graded / "unused").exists()


def _digest_of(store, name: str, qid: str) -> str:
    answer = next(q for q in store.card(name).questions if q.id == qid).answer
    return answer.digest


# --------------------------------------------------------------------------------------------
# In a real browser: Debian's Chromium driven through chromedriver (Selenium), one per worker
# (``chromium``, tests/conftest.py), put back to a blank tab with no cookie or storage after each page.

__all__ = ["CHROMEDRIVER", "CHROMIUM", "Chromium", "_browser_missing"]  # for the other modules of the review page


@contextlib.contextmanager
def _page(chromium: Chromium, graded: Path, run: Path, token: str) -> Iterator[tuple[Any, str, Any]]:
    """The review app served on a free port (its outputs written again as grades change), and the
    headless Chromium: (driver, base URL, the app's writer). Stops the app and puts the browser back
    (``Chromium.reset``) on the way out."""
    import threading

    from werkzeug.serving import make_server

    from grader.course import config
    from grader.review import cells
    from grader.review.app import Review, Writer, make_app
    from grader.review.store import GradeStore

    course = config.load(graded / "config.yaml")
    assignment = course.assignment("rv")
    store = GradeStore.in_folder(run)
    review = Review(store, course, assignment, "Tess", token)
    writer = Writer(store, course, assignment, run, ("yaml", "gradebook"))
    server = make_server("127.0.0.1", 0, make_app(review, writer), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Thread(target=cells.render, args=([],), daemon=True).start()  # nbconvert loads while Chromium starts
    try:
        driver = chromium.get()
        try:
            yield driver, f"http://127.0.0.1:{server.server_port}", writer
        finally:
            chromium.reset()
    finally:
        server.shutdown()
        server.server_close()
        writer.stop()


class Page:
    """What a grader does on the grading page, each step waited for as a person would see it."""

    def __init__(self, driver: Any):
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver = driver
        self.wait = WebDriverWait(driver, 20, poll_frequency=0.05)

    def text(self, element_id: str) -> str:
        from selenium.webdriver.common.by import By

        return str(self.driver.find_element(By.ID, element_id).text)

    def loaded(self, who: str) -> None:
        self.wait.until(lambda d: f": {who}" in self.text("who") and self.text("progress"))

    def keys(self, *pressed: str) -> None:
        from selenium.webdriver.common.by import By

        self.driver.find_element(By.TAG_NAME, "body").send_keys(*pressed)

    def saved(self, result: str) -> None:
        self.wait.until(lambda d: self.text("saved") == "saved" and result in self.text("result"))

    def comment(self, text: str) -> None:
        from selenium.webdriver.common.keys import Keys

        self.keys("c")
        self.driver.switch_to.active_element.send_keys(text)
        self.driver.switch_to.active_element.send_keys(Keys.ESCAPE)  # leaving the field saves it
        self.wait.until(lambda d: self.text("saved") == "saved")


@pytest.mark.skipif(bool(_browser_missing()), reason=_browser_missing() or "browser present")
def test_a_grader_grades_two_questions_of_three_submissions_in_a_browser(chromium, graded, run):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from grader.review.store import GradeStore

    store = GradeStore.in_folder(run)
    store.add_item("explain", "Explains why symmetry gives the mean", 1)
    store.add_item("weights", "A weighted mean", 2)
    with _page(chromium, graded, run, "browser-token") as (driver, base, _):
        page = Page(driver)
        wait, text, loaded, keys, saved = page.wait, page.text, page.loaded, page.keys, page.saved
        assert driver.get(base + "/grade/explain/ada") is None and "Forbidden" in driver.page_source  # no token
        driver.get(base + "/grade/explain?token=browser-token")  # the question's first submission
        loaded("ada")
        # A rubric item added by the page, then applied by its key.
        driver.find_element(By.ID, "new-text").send_keys("Mentions symmetry")
        driver.find_element(By.ID, "new-points").send_keys("2")
        driver.find_element(By.CSS_SELECTOR, "#new-item button").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#rubric li")) == 2)
        keys("2")
        saved("Graded: 2 / 3 points")
        keys(Keys.ARROW_RIGHT)
        loaded("bob")
        # bob's answer carries <script>, onerror= and a javascript: link: nothing of it ran.
        assert "pwned" not in driver.title
        driver.switch_to.frame(driver.find_element(By.ID, "answer"))
        assert "And a second thought." in driver.find_element(By.TAG_NAME, "body").text
        assert "pwned" not in driver.execute_script("return document.title")
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".katex"))  # its formula typeset by the bundled KaTeX
        driver.switch_to.default_content()
        driver.find_elements(By.CSS_SELECTOR, "#rubric li")[0].click()  # by a click this time
        saved("Graded: 1 / 3 points")
        keys("c")
        driver.switch_to.active_element.send_keys("Say why symmetry gives the mean.")
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait.until(lambda d: text("saved") == "saved")
        keys("j")
        loaded("cy")
        keys("0")  # graded as it stands: 0 points
        saved("Graded: 0 / 3 points")
        assert text("progress") == "3 of 3 graded"
        keys("n")
        loaded("ada")
        assert "weights" in driver.find_element(By.TAG_NAME, "h1").text
        keys("1")
        saved("Graded: 2 / 2 points")
        for who in ("bob", "cy"):
            keys(Keys.ARROW_RIGHT)
            loaded(who)
            keys("0")
            saved("Graded: 0 / 2 points")
        assert "pwned" not in driver.title
    book = {r["student"]: r for r in csv.DictReader(io.StringIO((run / "gradebook.csv").read_text()))}
    assert [(book[s]["explain"], book[s]["weights"], book[s]["score"]) for s in ("ada", "bob", "cy")] == [
        ("2", "2", "6"),
        ("1", "0", "3"),
        ("0", "0", "0"),
    ]
    bob = question(card(run, "bob"), "explain")
    assert bob["graded_by"]["comment"] == "Say why symmetry gives the mean." and bob["graded_by"]["grader"] == "Tess"


@pytest.mark.skipif(bool(_browser_missing()), reason=_browser_missing() or "browser present")
def test_a_submission_graded_into_the_class_while_the_page_is_open_leaves_every_grade_on_its_student(
    chromium, graded, run, tmp_path
):
    """The page names a submission by its id: aaron, graded into the same folder while bob's page
    is open (and sorting before everyone), moves no grade or comment onto another student."""
    from selenium.webdriver.common.keys import Keys

    from grader.review import merge
    from grader.review.store import GradeStore

    subs = tmp_path / "subs"
    shutil.copytree(graded / "subs", subs)
    store = GradeStore.in_folder(run)
    item = store.add_item("explain", "Names the symmetry", 2)
    with _page(chromium, graded, run, "late-token") as (driver, base, writer):
        page = Page(driver)
        driver.get(base + "/grade/explain?token=late-token")
        page.loaded("ada")
        page.keys("1")
        page.saved("Graded: 2 / 3 points")
        page.comment("ada: symmetry, well put.")
        page.keys(Keys.ARROW_RIGHT)
        page.loaded("bob")
        assert page.text("who") == "Submission 2 of 3: bob"
        # A late submission, graded into the same output folder while bob's page is open.
        review_course.student(
            graded / "assignments/rv/rv.ipynb", subs / "aaron.ipynb", explain="Late, but symmetric around 2."
        )
        proc = grader("grade", str(subs), "--out", str(run), "--formats", "yaml,gradebook", cwd=graded)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert [s.id for s in store.submissions()] == ["aaron", "ada", "bob", "cy"]
        # The page goes on grading bob, as it still says; the class has moved under it.
        page.keys("1")
        page.saved("Graded: 2 / 3 points")
        page.comment("bob: a second thought is welcome.")
        assert page.text("who") == "Submission 2 of 3: bob"
        page.keys(Keys.ARROW_RIGHT)  # next as the class is now: cy, then round to aaron
        page.loaded("cy")
        assert page.text("who") == "Submission 4 of 4: cy"
        page.keys("0")
        page.saved("Graded: 0 / 3 points")
        page.comment("cy: no answer yet.")
        page.keys(Keys.ARROW_RIGHT)
        page.loaded("aaron")
        page.keys("1")
        page.saved("Graded: 2 / 3 points")
        page.comment("aaron: late but right.")
        page.wait.until(lambda d: page.text("progress") == "4 of 4 graded")
    expected = {
        "aaron": (2.0, "aaron: late but right.", (item.id,)),
        "ada": (2.0, "ada: symmetry, well put.", (item.id,)),
        "bob": (2.0, "bob: a second thought is welcome.", (item.id,)),
        "cy": (0.0, "cy: no answer yet.", ()),
    }
    # Read back from the store, as every output is written from it ...
    for sid, (points, comment, items) in expected.items():
        grade = store.grade(sid, "explain")
        assert grade is not None and (grade.comment, grade.items) == (comment, items), sid
        assert merge.person_grade(store, grade, 3).points == points, sid
    # ... and from the outputs the page wrote again: each scorecard, and the gradebook's rows.
    for sid, (points, comment, _) in expected.items():
        explain = question(card(run, sid), "explain")
        assert (explain["score"], explain["graded_by"]["comment"]) == (points, comment), sid
    book = {r["student"]: r for r in csv.DictReader(io.StringIO((run / "gradebook.csv").read_text()))}
    assert {s: book[s]["explain"] for s in expected} == {"aaron": "2", "ada": "2", "bob": "2", "cy": "0"}


# --------------------------------------------------------------------------------------------
# The grades database's schema: versioned, and migrated from the one before ids.

LEGACY = HERE / "data" / "grades-v0.sqlite"  # written by the grader before ids (schema version 0):
# rv graded from subs/ (ada.ipynb, bob/rv.ipynb, cy.ipynb, dee/a.ipynb, dee/b.ipynb), then graded
# by a person through GradeStore: a rubric item on ada's explain with a comment, free points on
# bob's explain, a comment on bob's weights, and 2.5 points imported for dee-b's explain.


def _rows(db: Path) -> dict[str, list[tuple]]:
    import sqlite3

    con = sqlite3.connect(db)
    try:
        columns = {"grades": "submission, question, adjustment, comment, grader, at, digest"}  # version 0's
        return {
            table: sorted(con.execute(f"SELECT {columns.get(table, '*')} FROM {table}").fetchall())  # named here
            for table in ("rubric", "grades", "marks", "answers", "log")
        }
    finally:
        con.close()


def test_a_database_written_before_ids_is_migrated_and_keeps_every_grade(graded, tmp_path):
    import sqlite3

    from grader.errors import DocumentError, UsageError
    from grader.review import merge
    from grader.review.store import VERSION, GradeStore

    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(LEGACY, out / "grades.sqlite")
    con = sqlite3.connect(out / "grades.sqlite")
    assert con.execute("PRAGMA user_version").fetchone() == (0,)
    old = {n: (p, json.loads(c)) for n, p, c in con.execute("SELECT name, path, card FROM submissions")}
    con.close()
    before = _rows(out / "grades.sqlite")
    assert len(before["grades"]) == 4 and len(before["log"]) == 6 and len(old) == 5

    store = GradeStore.in_folder(out)
    con = sqlite3.connect(out / "grades.sqlite")
    assert con.execute("PRAGMA user_version").fetchone() == (VERSION,)
    con.close()
    # Every submission keeps its name as its id, and its card (now carrying that id); nothing else changed.
    assert [(s.id, s.name, str(s.path)) for s in store.submissions()] == [(n, n, old[n][0]) for n in sorted(old)]
    con = sqlite3.connect(out / "grades.sqlite")
    new = {i: json.loads(c) for i, c in con.execute("SELECT id, card FROM submissions")}
    con.close()
    assert new == {name: {**data, "id": name} for name, (_, data) in old.items()}
    # A card kept before scorecards were versioned documents is not read as one: the message says
    # which grader wrote it and how to grade again (its person's grades are kept meanwhile).
    for name in sorted(old):
        with pytest.raises(DocumentError, match="before scorecards carried a format_version.*grader grade"):
            store.card(name)
    assert _rows(out / "grades.sqlite") == before
    con = sqlite3.connect(out / "grades.sqlite")  # each grade at its first version
    assert set(con.execute("SELECT version FROM grades").fetchall()) == {(0,)}
    con.close()
    GradeStore.in_folder(out)  # opened again: already at its version, nothing to do
    assert _rows(out / "grades.sqlite") == before

    # Graded again by today's intake: dee's notebooks are dee/a and dee/b now, and take dee-a's
    # and dee-b's rows over; every grade is still on its student.
    root = tmp_path / "class"
    shutil.copytree(graded, root, ignore=shutil.ignore_patterns("subs", "out", ".grader-cache"))
    skeleton = root / "assignments/rv/rv.ipynb"
    subs = root / "subs"
    (subs / "bob").mkdir(parents=True)
    (subs / "dee").mkdir()
    review_course.student(
        skeleton, subs / "ada.ipynb", explain="Symmetric values around 2.", weights="A weighted mean."
    )
    review_course.student(skeleton, subs / "bob" / "rv.ipynb", mean="2.0", explain="Because 10/5 = 2.")
    review_course.student(skeleton, subs / "cy.ipynb", mean="x.sum()")
    review_course.student(skeleton, subs / "dee" / "a.ipynb", explain="First try.")
    review_course.student(skeleton, subs / "dee" / "b.ipynb", explain="Second try.")
    proc = grader("grade", "subs", "--out", str(out), "--formats", "yaml,gradebook", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [(s.id, s.name) for s in store.submissions()] == [
        ("ada", "ada"),
        ("bob", "bob"),
        ("cy", "cy"),
        ("dee/a", "dee-a"),
        ("dee/b", "dee-b"),
    ]
    after = _rows(out / "grades.sqlite")
    assert {(g[0], g[1], g[3]) for g in after["grades"]} == {
        ("ada", "explain", "Good."),
        ("bob", "explain", ""),
        ("bob", "weights", "Missing."),
        ("dee/b", "explain", "Second is better."),
    }
    assert question(card(out, "ada"), "explain")["score"] == 2
    assert question(card(out, "bob"), "explain")["score"] == 1.5
    assert question(card(out, "dee-b"), "explain")["graded_by"]["comment"] == "Second is better."
    assert question(card(out, "dee-b"), "explain")["score"] == 2.5
    assert {r[3] for r in after["log"]} == {"", "ada", "bob", "dee/b"}  # the log follows the ids too
    ada = merge.with_grades(store, "ada")
    explain = next(q for q in ada.questions if q.id == "explain")
    assert explain.status == "graded" and explain.score == 2 and explain.person.comment == "Good."

    # A database written by a newer grader is refused, not read wrongly.
    newer = tmp_path / "newer"
    newer.mkdir()
    shutil.copy(out / "grades.sqlite", newer / "grades.sqlite")
    con = sqlite3.connect(newer / "grades.sqlite")
    con.execute(f"PRAGMA user_version = {VERSION + 1}")
    con.commit()
    con.close()
    with pytest.raises(UsageError, match=f"written by a newer grader \\(its schema is version {VERSION + 1}"):
        GradeStore.in_folder(newer)
    (newer / "grades.sqlite").unlink()
    (newer / "grades.sqlite").write_text("not a database")
    with pytest.raises(UsageError, match="is not a grades database this grader can read"):
        GradeStore.in_folder(newer)
