"""Every output format of a grading run, through the real command, and what students may see."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import nbformat
import pytest
import yaml
from conftest import IN_ORDER, NUMPY_CORRECT, ROOT, notebook_with, question, torch_cpu_index

from grader.cli import fail_under
from grader.course import config
from grader.course.model import ScorecardSettings
from grader.errors import ConfigError
from grader.judge.scorecard import QuestionResult, Scorecard
from grader.outputs import gradebook, render_one
from grader.outputs.html import anchors, text_html, to_html
from grader.outputs.view import student_view

EXAMPLES = ROOT / "examples/attention_numpy"
PICKED = ["bob_correct", "carol_no_sqrt", "frank_raises", "grace_half_done", "henry_not_a_notebook"]
ALL = "yaml,json,md,html,gradescope,classroom,classroom50,junit,gradebook,report"
PER_SUBMISSION = (
    ".yaml",
    ".json",
    ".md",
    ".html",
    ".gradescope.json",
    ".classroom.json",
    ".result.json",
    ".release-body.md",
)


def grader_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One real run of `grader grade` over five example submissions, with every format."""
    base = tmp_path_factory.mktemp("run")
    subs = base / "subs"
    subs.mkdir()
    for name in PICKED:
        shutil.copyfile(EXAMPLES / f"{name}.ipynb", subs / f"{name}.ipynb")
    proc = grader_cli(
        "grade",
        str(subs),
        "-a",
        "attention_numpy",
        "--config",
        str(ROOT / "config.yaml"),
        "--formats",
        ALL,
        "--out",
        str(base / "out"),
        cwd=base,
    )
    assert proc.returncode == 0, proc.stderr
    cards = {n: yaml.safe_load((base / "out" / f"{n}.yaml").read_text()) for n in PICKED}
    return base, proc, cards


def test_everything_is_written_under_out_and_nothing_elsewhere(run):
    base, proc, _ = run
    expected = {f"{n}{ext}" for n in PICKED for ext in PER_SUBMISSION} | {"junit.xml", "gradebook.csv", "report.html"}
    assert {p.name for p in (base / "out").iterdir()} == expected
    assert {p.name for p in base.iterdir()} == {"subs", "out"}
    assert sorted(p.name for p in (base / "subs").iterdir()) == sorted(f"{n}.ipynb" for n in PICKED)
    assert proc.stdout.splitlines()[-1] == f"Scorecards written to {base / 'out'}/ ({ALL.replace(',', ', ')})"


def test_json_is_the_document_the_yaml_renders(run):
    # <name>.json is the scorecard's document (every record, format_version); read back, it renders
    # to exactly the YAML the run wrote.
    from grader.judge import document
    from grader.outputs.yaml import to_yaml

    base, _, cards = run
    for name in PICKED:
        data = json.loads((base / "out" / f"{name}.json").read_text())
        assert data[document.VERSION] == document.FORMAT_VERSION
        assert yaml.safe_load(to_yaml(document.load(data))) == cards[name]


def test_every_format_says_the_same_thing(run):
    base, _, cards = run
    out = base / "out"
    for name, card in cards.items():
        md = (out / f"{name}.md").read_text()
        page = (out / f"{name}.html").read_text()
        gs = json.loads((out / f"{name}.gradescope.json").read_text())
        cr = json.loads((out / f"{name}.classroom.json").read_text())
        assert gs["score"] == card["score"] and sum(t["score"] for t in cr["tests"]) == card["score"]
        assert sum(t["max_score"] for t in gs["tests"]) == cr["max_score"] == card["max_score"]
        for q, g, c in zip(card["questions"], gs["tests"], cr["tests"], strict=True):
            assert g["name"] == c["name"] == f"{q['id']}: {q['title']}"
            assert g["score"] == c["score"] == q["score"]
            assert f"| {q['id']}: {q['title']} |" in md
            assert f"{q['score']}/{q['max_score']} points" in md
            for line in q["feedback"]:
                assert f"- {line}" in md
                assert f"- {line}" in g["output"]
                assert line in c["message"].splitlines()
                assert text_html(line) in page, (name, line)
        if card.get("reason"):
            assert card["reason"] in md and card["reason"] in gs["output"] and cr["message"] == card["reason"]


def test_markdown_feedback_for_a_typical_mistake(run):
    base, _, _ = run
    md = (base / "out/carol_no_sqrt.md").read_text().splitlines()
    assert md[:12] == [
        '# attention_numpy: Self-attention by hand in NumPy ("I am Batman")',
        "",
        "**carol_no_sqrt.ipynb** · graded · score **9/11**",
        "",
        "| Question | Result | Points |",
        "|---|---|---|",
        "| qkv: Queries, keys and values | ✅ passed | 3/3 |",
        "| scores: Attention scores | ✅ passed | 1/1 |",
        "| scaled: Scaled scores | ❌ not yet correct | 0/2 |",
        "| softmax: Softmax of a vector | ✅ passed | 1/1 |",
        # Right given her own scaled scores: the error is carried forward (issue 13).
        "| weights: Attention weights | ✅ passed (error carried forward) | 2/2 |",
        "| output: Self-attention output | ✅ passed (error carried forward) | 2/2 |",
    ]
    assert "## scaled: Scaled scores — not yet correct, 0/2 points" in md
    assert "- Likely mistake: The scores are not divided by sqrt(d_k)." in md


def test_gradescope_results_follow_the_schema_even_for_a_broken_notebook(run):
    base, _, _ = run
    for name in PICKED:
        data = json.loads((base / "out" / f"{name}.gradescope.json").read_text())
        assert set(data) == {
            "score",
            "execution_time",
            "output",
            "output_format",
            "visibility",
            "stdout_visibility",
            "tests",
        }
        assert isinstance(data["score"], float) and isinstance(data["execution_time"], float)
        for t in data["tests"]:
            assert set(t) == {"name", "number", "score", "max_score", "status", "output", "output_format", "visibility"}
            assert t["status"] in ("passed", "failed") and t["visibility"] == "visible"
            assert t["output_format"] == "md"
    henry = json.loads((base / "out/henry_not_a_notebook.gradescope.json").read_text())
    assert henry["score"] == 0.0 and len(henry["tests"]) == 6
    assert henry["output"] == (
        "**henry_not_a_notebook.ipynb**: not a readable notebook, 0/11 points.\n\n"
        "The file is not JSON, so not a notebook (line 1: Expecting value)."
    )


def test_classroom_result_is_what_the_reporter_reads(run):
    base, _, _ = run
    frank = json.loads((base / "out/frank_raises.classroom.json").read_text())
    assert (frank["version"], frank["status"], frank["max_score"]) == (1, "fail", 11)
    assert [(t["name"].split(":")[0], t["status"], t["score"]) for t in frank["tests"]] == [
        ("qkv", "pass", 3),
        ("scores", "error", 0),
        ("scaled", "error", 0),
        ("softmax", "pass", 1),
        ("weights", "error", 0),
        ("output", "error", 0),
    ]
    bob = json.loads((base / "out/bob_correct.classroom.json").read_text())
    assert bob["status"] == "pass" and sum(t["score"] for t in bob["tests"]) == 11
    henry = json.loads((base / "out/henry_not_a_notebook.classroom.json").read_text())
    assert henry["status"] == "error"


def test_partial_credit_reaches_the_classroom_total(submit, course, numpy_assignment, tmp_path):
    card = submit({**NUMPY_CORRECT, "K": "X @ W_k"})
    assert question(card, "qkv").status == "partial"
    text = render_one("classroom", tmp_path / "x.ipynb", card, course, numpy_assignment)
    tests = {t["name"].split(":")[0]: t for t in json.loads(text)["tests"]}
    assert tests["qkv"]["status"] == "fail" and tests["qkv"]["score"] == question(card, "qkv").score > 0
    assert sum(t["score"] for t in tests.values()) == card.score


def test_junit_has_what_a_pytest_run_writes(run, pytester):
    base, _, _ = run
    ours = ET.parse(base / "out/junit.xml").getroot()
    suite = ours.find("testsuite")
    assert suite.get("name") == "attention_numpy" and suite.get("tests") == str(6 * len(PICKED))
    cases = {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}
    assert set(cases) == {
        (f"{n}.ipynb", q) for n in PICKED for q in ("qkv", "scores", "scaled", "softmax", "weights", "output")
    }
    # The same items and failure texts as a direct `pytest --submission ... --junitxml` run
    direct = pytester.path / "direct.xml"
    pytester.runpytest_subprocess(
        *IN_ORDER,
        "--grader-config",
        str(ROOT / "config.yaml"),
        "--scorecard-dir",
        str(pytester.path / "cards"),
        "--submission",
        str(EXAMPLES / "carol_no_sqrt.ipynb"),
        f"--junitxml={direct}",
    )
    theirs = {c.get("name"): c for c in ET.parse(direct).getroot().iter("testcase")}
    for qid, case in theirs.items():
        mine = cases[("carol_no_sqrt.ipynb", qid)]
        assert (mine.find("failure") is None) == (case.find("failure") is None)
        if case.find("failure") is not None:
            assert mine.find("failure").get("message") == case.find("failure").get("message")
            assert mine.find("failure").text == case.find("failure").text
        assert [(p.get("name"), p.get("value")) for p in mine.iter("property")] == [
            (p.get("name"), p.get("value")) for p in case.iter("property")
        ]
    assert (
        "Likely mistake: The scores are not divided by sqrt(d_k)."
        in cases[("carol_no_sqrt.ipynb", "scaled")].find("failure").text
    )


def test_gradebook_has_a_row_per_submission_and_a_column_per_question(run):
    base, _, cards = run
    rows = list(csv.DictReader(io.StringIO((base / "out/gradebook.csv").read_text())))
    assert list(rows[0]) == [
        "student",
        "submission",
        "status",
        "score",
        "max_score",
        "percent",
        "qkv",
        "scores",
        "scaled",
        "softmax",
        "weights",
        "output",
        "reason",
        "sha256",
    ]
    assert [r["submission"] for r in rows] == [f"{n}.ipynb" for n in PICKED]
    for r in rows:
        card = cards[r["submission"][:-6]]
        assert (float(r["score"]), r["status"], r["sha256"]) == (card["score"], card["status"], card["sha256"])
        assert [float(r[q["id"]]) for q in card["questions"]] == [q["score"] for q in card["questions"]]
    assert rows[1]["percent"] == "81.8"  # carol: 9/11, her one mistake carried forward


def test_gradebook_quotes_cells_a_spreadsheet_would_run_as_formulas(tmp_path):
    card = Scorecard(
        assignment="a",
        submission="=HYPERLINK(1).ipynb",
        sha256="",
        status="graded",
        score=1 / 3,
        max_score=1,
        student="+cmd",
        questions=[QuestionResult("q", "Q", 1 / 3, 1, "partial")],
    )
    rows = list(csv.reader(io.StringIO(gradebook.write_gradebook([card], tmp_path / "g.csv").read_text())))
    assert rows[1][:7] == ["'+cmd", "'=HYPERLINK(1).ipynb", "graded", "0.33", "1", "33.3", "0.33"]


def test_formats_and_fail_under_on_the_command_line(tmp_path):
    proc = grader_cli("grade", str(EXAMPLES / "bob_correct.ipynb"), "--formats", "yaml,pdf", cwd=ROOT)
    assert (proc.returncode, proc.stderr) == (
        2,
        "grader: Unknown format 'pdf' in --formats; known: yaml, json, md, "
        "html, gradescope, classroom, classroom50, junit, gradebook, "
        "report, canvas, moodle.\n",
    )
    proc = grader_cli("grade", str(EXAMPLES / "bob_correct.ipynb"), "--fail-under", "120", cwd=ROOT)
    assert (proc.returncode, proc.stderr) == (2, "grader: --fail-under must be a percentage from 0 to 100, got 120.\n")
    out = tmp_path / "out"
    proc = grader_cli(
        "grade",
        str(EXAMPLES / "carol_no_sqrt.ipynb"),
        str(EXAMPLES / "bob_correct.ipynb"),
        "--fail-under",
        "90",
        "--formats",
        "md",
        "--out",
        str(out),
        cwd=ROOT,
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == "grader: carol_no_sqrt scored 81.8%, below --fail-under 90%"
    assert "bob_correct scored" not in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["bob_correct.md", "carol_no_sqrt.md"]


def test_fail_under_passes_when_every_score_reaches_the_threshold():
    card = Scorecard(assignment="a", submission="s", sha256="", status="graded", score=5, max_score=10)
    assert fail_under(["s"], [card], 50) == 0
    assert fail_under(["s"], [card], 50.1) == 1
    assert fail_under(["s"], [card], None) == 0


# --------------------------------------------------------------------------------------------
# HTML: the student's own notebook with each result next to the cell that answers it


def test_results_sit_after_the_cells_that_compute_them_in_a_rearranged_notebook(tmp_path, grader, numpy_assignment):
    card = grader.grade(numpy_assignment, EXAMPLES / "bob_correct.ipynb")
    skeleton = nbformat.read(str(numpy_assignment.skeleton), as_version=4)
    given = [c.source for c in skeleton.cells if c.cell_type == "code"][:3]
    cells = [
        "# CELL-A\n" + given[0],
        "# CELL-B\n" + given[1],
        "# CELL-C\n" + given[2],
        "# CELL-D\nK = X @ W_k.T",  # K before Q: the student reordered
        "# CELL-E\nQ = X @ W_q.T\nV = X @ W_v.T",
        "# CELL-F\nd_k = K.shape[1]\nscores = Q @ K.T\nscaled_scores = scores / np.sqrt(d_k)",
        "# CELL-G\ndef softmax(x):\n    e = np.exp(x - x.max())\n    return e / e.sum()",
        "# CELL-H\noutput = None",
        "# CELL-I\nprint('no attention_weights anywhere')",
        "# CELL-J\noutput = np.zeros((3, 2))  # computed again: this is the one graded",
    ]
    path = notebook_with(cells, tmp_path / "rearranged.ipynb")
    page = to_html(student_view(card, numpy_assignment, ScorecardSettings()), numpy_assignment, path)
    at = {m.group(1): m.start() for m in re.finditer(r"# (CELL-[A-J])", page)}
    box = {m.group(1): m.start() for m in re.finditer(r'id="question-(\w+)"', page)}
    assert at["CELL-E"] < box["qkv"] < at["CELL-F"]  # after the later of the cells binding Q, K, V
    assert at["CELL-F"] < box["scores"] < box["scaled"] < at["CELL-G"]
    assert at["CELL-G"] < box["softmax"] < at["CELL-H"]
    assert at["CELL-J"] < box["output"]
    assert box["weights"] > at["CELL-J"]
    assert page.index("Questions whose answers were not found in the notebook") < box["weights"]
    assert page.index("grader-summary") < at["CELL-A"]


def test_anchor_respects_a_checks_before_point(tmp_path, numpy_assignment):
    from grader import notebook

    spec = dataclasses.replace(numpy_assignment.questions[1].checks[0], before="later")
    a = dataclasses.replace(
        numpy_assignment, questions=(dataclasses.replace(numpy_assignment.questions[1], checks=(spec,)),)
    )
    infos = notebook.analyse(
        notebook.read(notebook_with(["scores = 1", "scores = 2", "later = scores", "scores = 3"], tmp_path / "n.ipynb"))
    )
    assert anchors(a, infos) == {"scores": 1}


def test_student_html_cannot_run_scripts(tmp_path, grader, numpy_assignment):
    card = grader.grade(numpy_assignment, EXAMPLES / "bob_correct.ipynb")
    nb = nbformat.read(str(EXAMPLES / "bob_correct.ipynb"), as_version=4)
    nb.cells.insert(
        0,
        nbformat.v4.new_markdown_cell(
            "<script>alert('md')</script> <img src=x onerror=alert(2)> "
            "<a href='javascript:alert(3)'>x</a> <iframe src=//e.vil></iframe>"
        ),
    )
    code = nbformat.v4.new_code_cell("1")
    code.outputs = [
        nbformat.v4.new_output("display_data", data={"text/html": "<script>alert('out')</script>", "text/plain": "x"})
    ]
    nb.cells.append(code)
    path = tmp_path / "hostile.ipynb"
    nbformat.write(nb, str(path))
    page = to_html(student_view(card, numpy_assignment, ScorecardSettings()), numpy_assignment, path)
    lowered = page.lower()
    body = lowered[lowered.index("<body") :]
    assert "<script" not in lowered
    assert "onerror" not in body and "javascript:" not in body and "<iframe" not in body
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert page.count('class="grader-box grader-passed"') == 6


def test_a_file_that_is_not_a_notebook_still_gets_an_html_page(run):
    base, _, _ = run
    page = (base / "out/henry_not_a_notebook.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "The file is not JSON, so not a notebook (line 1: Expecting value)." in page
    assert page.count("grader-box grader-unanswered") == 6


# --------------------------------------------------------------------------------------------
# The scorecard section: what students see


def _settings(**kw) -> ScorecardSettings:
    return ScorecardSettings(**kw)


def test_a_question_shown_after_the_due_date_is_withheld_until_then(grader, course, numpy_assignment, tmp_path):
    card = grader.grade(numpy_assignment, EXAMPLES / "carol_no_sqrt.ipynb")
    settings = _settings(due="2030-01-31T23:59", visibility=(("attention_numpy", "scaled", "after_due"),))
    c = dataclasses.replace(course, scorecard=settings)
    before = datetime(2030, 1, 1, tzinfo=UTC)
    after = datetime(2030, 2, 1, tzinfo=UTC)
    md = render_one("md", tmp_path / "x.ipynb", card, c, numpy_assignment, before)
    assert "score **9/9 on the questions shown so far**" in md
    assert "mistake is upstream" not in md and "carried forward" not in md  # it would show that scaled is wrong
    assert "| scaled: Scaled scores | 🔒 result not shown yet | –/2 |" in md
    assert "- The result of this question is shown after the due date (2030-01-31T23:59)." in md
    assert "sqrt(d_k)" not in md
    md = render_one("md", tmp_path / "x.ipynb", card, c, numpy_assignment, after)
    assert "score **9/11**" in md and "Likely mistake: The scores are not divided by sqrt(d_k)." in md
    assert "the mistake is upstream, in *Scaled scores*" in md
    gs = json.loads(render_one("gradescope", tmp_path / "x.ipynb", card, c, numpy_assignment, before))
    assert [t["visibility"] for t in gs["tests"]] == [
        "visible",
        "visible",
        "after_due_date",
        "visible",
        "visible",
        "visible",
    ]
    assert "Likely mistake" in gs["tests"][2]["output"]  # Gradescope itself withholds it until the due date


def test_a_hidden_question_is_never_shown_and_counts_in_the_total(grader, course, numpy_assignment, tmp_path):
    card = grader.grade(numpy_assignment, EXAMPLES / "carol_no_sqrt.ipynb")
    hidden = dataclasses.replace(numpy_assignment.question("output"), visible=False)
    a = dataclasses.replace(
        numpy_assignment, questions=tuple(hidden if q.id == "output" else q for q in numpy_assignment.questions)
    )
    md = render_one("md", tmp_path / "x.ipynb", card, course, a, datetime(2099, 1, 1, tzinfo=UTC))
    assert "| output: Self-attention output | 🔒 result not shown yet | –/2 |" in md
    assert "- The result of this question is not shown to students." in md
    cr = json.loads(render_one("classroom", tmp_path / "x.ipynb", card, course, a))
    assert sum(t["score"] for t in cr["tests"]) == card.score and cr["max_score"] == 11
    assert cr["tests"][5]["message"] == "The result of this question is not shown to students."
    gs = json.loads(render_one("gradescope", tmp_path / "x.ipynb", card, course, a))
    assert gs["tests"][5]["visibility"] == "hidden"


def test_default_settings_never_show_expected_values():
    s = config.load(ROOT / "config.yaml").scorecard
    assert (s.show_expected, s.visibility, s.formats) == ("never", (), ("yaml",))


def _config(tmp_path, scorecard: str):
    text = (ROOT / "config.yaml").read_text()
    body = re.sub(r"^scorecard:\n(  .*\n)+", "", text, flags=re.M)
    path = tmp_path / "config.yaml"
    path.write_text(body + "\nscorecard:\n" + scorecard)
    for folder in ("solutions", "assignments"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    return path


@pytest.mark.parametrize(
    "scorecard, message",
    [
        (
            "  formats: [yaml, pdf]\n",
            "scorecard.formats[1] must be one of yaml, json, md, html, gradescope, classroom, "
            "classroom50, junit, gradebook, report, canvas, moodle, got 'pdf'",
        ),
        (
            "  due: next friday\n",
            "scorecard.due must be an ISO date or date and time (2025-05-01T23:59), got 'next friday'",
        ),
        ("  show_expected: after_due\n", "scorecard.show_expected is after_due, which needs scorecard.due"),
        (
            "  visibility:\n    attention_numpy:\n      q9: hidden\n",
            "scorecard.visibility.attention_numpy.q9 names no question of attention_numpy",
        ),
        (
            "  visibility:\n    attention_numpy:\n      output: secret\n",
            "scorecard.visibility.attention_numpy.output must be one of visible, after_due, hidden, got 'secret'",
        ),
        ("  visibility:\n    nope:\n      output: hidden\n", "scorecard.visibility.nope names no assignment"),
    ],
)
def test_scorecard_section_errors_name_the_key(tmp_path, scorecard, message):
    with pytest.raises(ConfigError) as err:
        config.load(_config(tmp_path, scorecard))
    assert message in str(err.value)
    assert re.match(rf"{re.escape(str(tmp_path / 'config.yaml'))}:\d+: ", str(err.value))


def test_scorecard_section_is_read(tmp_path):
    course = config.load(
        _config(
            tmp_path,
            "  formats: [yaml, md, md]\n  due: 2030-01-31\n  show_expected: after_due\n"
            "  visibility:\n    attention_numpy:\n      output: after_due\n",
        )
    )
    s = course.scorecard
    assert (s.formats, s.due, s.show_expected) == (("yaml", "md"), "2030-01-31", "after_due")
    output = course.assignment("attention_numpy").question("output")
    assert s.question_visibility("attention_numpy", output) == "after_due"
    assert not s.shown("attention_numpy", output, datetime(2030, 1, 30, tzinfo=UTC))
    assert s.shown("attention_numpy", output, datetime(2030, 2, 1, tzinfo=UTC))


# --------------------------------------------------------------------------------------------
# Gradescope: the autograder zip and its run_autograder, run the way Gradescope runs them


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    """The zip built by `grader gradescope-zip`, unpacked as /autograder/source."""
    base = tmp_path_factory.mktemp("gradescope")
    proc = grader_cli(
        "gradescope-zip", "attention_numpy", "--config", str(ROOT / "config.yaml"), "--out", str(base), cwd=base
    )
    assert proc.returncode == 0, proc.stderr
    zipped = base / "attention_numpy-gradescope.zip"
    root = base / "autograder"
    shutil.unpack_archive(zipped, root / "source")
    return zipped, root


def run_autograder(root, submission_files: dict, python=sys.executable):
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
        (root / folder).mkdir()
    for name, content in submission_files.items():
        (root / "submission" / name).write_bytes(content)
    # PYTHONPATH: the grader under test, whichever checkout the virtualenv was installed from
    env = {"PATH": "/usr/bin:/bin", "AUTOGRADER_ROOT": str(root), "GRADER_PYTHON": python, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        ["bash", str(root / "source/run_autograder")], capture_output=True, text=True, env=env, cwd=root
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads((root / "results/results.json").read_text()), proc


BUNDLE = "course/grading/attention_numpy/attention_numpy.references.json"


def test_gradescope_zip_holds_the_scripts_the_course_and_the_reference_bundle_but_no_solution(autograder):
    import zipfile

    zipped, _ = autograder
    with zipfile.ZipFile(zipped) as z:
        names = set(z.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
        reduced = yaml.safe_load(z.read("course/config.yaml"))
        # (config.yaml is the instructor's, hint messages included, shipped as written)
        shipped = b"".join(
            z.read(n) for n in names if n.startswith("course/") and n not in ("course/config.yaml", BUNDLE)
        )
        bundle = json.loads(z.read(BUNDLE))
    assert {
        "setup.sh",
        "run_autograder",
        "course/config.yaml",
        BUNDLE,
        "course/assignments/attention_numpy/attention_numpy.ipynb",
        "grader-src/pyproject.toml",
        "grader-src/grader/outputs/gradescope.py",
        "grader-src/grader/templates/gradescope_run_autograder",
    } <= names
    assert not any(n.startswith("course/solutions/") or "/.grader-cache/" in n for n in names)
    assert modes[BUNDLE] & 0o777 == 0o600 and modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111
    # setup.sh installs the libraries at the versions the reference values were computed with
    with zipfile.ZipFile(zipped) as z:
        pins = dict(line.split("==") for line in z.read("constraints.txt").decode().splitlines()[1:])
        setup = z.read("setup.sh").decode()
    import nbconvert
    import numpy
    import pandas

    assert (pins["numpy"], pins["pandas"], pins["nbconvert"]) == (
        numpy.__version__,
        pandas.__version__,
        nbconvert.__version__,
    )
    assert '-c "$SOURCE/constraints.txt" -r "$SOURCE/requirements.txt"' in setup and "[instructor]" not in setup
    # and only what this assignment's notebooks import (NumPy), beside the sandbox's seccomp binding and
    # threadpoolctl (the grader's BLAS on one thread)
    with zipfile.ZipFile(zipped) as z:
        wanted = [line for line in z.read("requirements.txt").decode().splitlines() if not line.startswith("#")]
    from importlib import metadata

    assert wanted == [
        f"numpy=={numpy.__version__}",
        "pyseccomp==0.1.2; sys_platform == 'linux'",
        f"threadpoolctl=={metadata.version('threadpoolctl')}",
    ]
    assert list(reduced["assignments"]) == ["attention_numpy"]
    # No line of the solution's own code is shipped (its answer cells, at least).
    solution = nbformat.read(str(ROOT / "solutions/attention_numpy/attention_numpy.ipynb"), as_version=4)
    answers = [
        line.split("#")[0].strip()
        for c in solution.cells
        if c.cell_type == "code"
        for line in c.source.splitlines()
        if line.rstrip().endswith("# SOLUTION")
    ]
    assert answers and not [a for a in answers if a.encode() in shipped]
    # Except the solution steps grading itself must run (the carry-forward runs, issue 13; DESIGN decision
    # 13), which are only in the bundle, readable by the grader's uid alone (0600 above).
    steps = "\n".join(c["source"] for c in bundle["carry_cells"])
    assert all(a in steps for a in answers)


def setup_dry_run(root, torch_index):
    """setup.sh as Gradescope runs it, printing its install commands instead of running them."""
    env = {
        "PATH": "/usr/bin:/bin",
        "AUTOGRADER_ROOT": str(root),
        "GRADER_SETUP_DRY_RUN": "1",
        "GRADER_SETUP_PYTHON": sys.executable,
        "TORCH_INDEX": torch_index,
    }
    proc = subprocess.run(["bash", str(root / "source/setup.sh")], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_setup_installs_torch_from_its_cpu_index_when_it_answers_else_from_the_configured_one(autograder, tmp_path):

    from grader.packaging.stage import stage_requirements

    _, root = autograder
    closed = "http://127.0.0.1:9/whl/cpu"  # nothing listens on port 9 (discard)
    source = f"{root}/source"
    pip = f"{root}/venv/bin/pip install --quiet -c {source}/constraints.txt -r {source}/requirements.txt"
    # A NumPy assignment: no torch, so no index is probed; the root is AUTOGRADER_ROOT throughout
    assert setup_dry_run(root, closed) == [
        f"{pip} {source}/grader-src",
        f"chmod -R go-rwx {source}/course",
        f"{root}/venv/bin/grader validate attention_numpy --config {source}/course/config.yaml",
    ]
    # An assignment that imports torch, with PyTorch's index out of reach: torch from pip's own configuration
    torch_root = tmp_path / "autograder"
    shutil.copytree(root / "source", torch_root / "source", ignore=shutil.ignore_patterns("course", "grader-src"))
    wanted = stage_requirements(torch_root / "source/requirements.txt", "attention_from_scratch", ("numpy", "torch"))
    assert "torch==2.13.0" in wanted.read_text().splitlines()  # the pin, without the local +cpu
    out = setup_dry_run(torch_root, closed)
    assert out[0] == f"setup.sh: {closed} does not answer: torch comes from the configured index"
    assert out[1].startswith(f"{torch_root}/venv/bin/pip install") and "--extra-index-url" not in out[1]
    # ... and with it answering (here, a local one): the CPU build from there, beside the configured index
    with torch_cpu_index(tmp_path) as url:
        out = setup_dry_run(torch_root, url)
    assert out[0] == (
        f"{torch_root}/venv/bin/pip install --quiet -c {torch_root}/source/constraints.txt -r "
        f"{torch_root}/source/requirements.txt --extra-index-url {url} {torch_root}/source/grader-src"
    )


def test_grading_from_the_bundle_gives_the_scorecards_grading_from_the_solution_gives(autograder):
    from grader.judge import document
    from grader.judge.grading import Grader

    def without_times(data):  # the run's time, and each cell's in the records
        if isinstance(data, dict):
            return {k: without_times(v) for k, v in data.items() if k not in ("time", "duration")}
        return [without_times(v) for v in data] if isinstance(data, list) else data

    _, root = autograder
    bundled = config.load(root / "source/course/config.yaml")
    assert not (root / "source/course/solutions").exists()
    original = config.load(ROOT / "config.yaml")
    cards = {}
    for name, course in (("bundle", bundled), ("solutions", original)):
        grader = Grader(course)
        # torch preloaded on both sides, for alice_torch's runs (the examples' only torch notebook)
        a = dataclasses.replace(course.assignment("attention_numpy"), preload=("torch",))
        cards[name] = []
        for path in sorted(EXAMPLES.glob("*.ipynb")):
            cards[name].append(without_times(document.dump(grader.grade(a, path))))
    assert len(cards["bundle"]) == len(list(EXAMPLES.glob("*.ipynb"))) >= 8
    assert cards["bundle"] == cards["solutions"]
    assert {c["score"] for c in cards["bundle"]} != {0.0}


def test_run_autograder_grades_the_submission_into_results_json(autograder):
    _, root = autograder
    data, proc = run_autograder(root, {"attention_numpy.ipynb": (EXAMPLES / "carol_no_sqrt.ipynb").read_bytes()})
    # 9: carol's weights and output are carried forward there too (the bundle holds the solution steps)
    assert data["score"] == 9.0 and len(data["tests"]) == 6
    assert data["tests"][2]["name"] == "scaled: Scaled scores" and data["tests"][2]["status"] == "failed"
    assert "Likely mistake: The scores are not divided by sqrt(d_k)." in data["tests"][2]["output"]
    assert proc.stdout.strip() == "graded attention_numpy.ipynb: graded, 9/11"
    # Graded from the bundle: the reference is not computed again. What the cache holds is the
    # submission's own variants (the solution's steps run on them) and the secret they are drawn with.
    cache = root / "source/course/.grader-cache"
    assert not list((cache / "references").glob("*.json")), "graded from the bundle, no reference is computed"
    # (one file per submission the shared autograder folder has graded so far, this one's among them)
    assert {p.name.split("-")[0] for p in (cache / "references/variants").iterdir()} == {"attention_numpy"}
    assert stat.S_IMODE((cache / "variant-secret").stat().st_mode) == 0o600


def test_run_autograder_writes_results_for_broken_submissions(autograder):
    _, root = autograder
    data, _ = run_autograder(root, {"notes.txt": b"hello"})
    assert data["score"] == 0.0
    assert data["output"] == (
        "The submission has no notebook (.ipynb file) (it holds: notes.txt); upload attention_numpy.ipynb."
    )
    assert [t["status"] for t in data["tests"]] == ["failed"] * 6
    data, _ = run_autograder(root, {"attention_numpy.ipynb": b"not json"})
    assert data["score"] == 0.0 and "not a readable notebook" in data["output"]
    assert "The file is not JSON, so not a notebook" in data["output"]
    data, _ = run_autograder(root, {"a.ipynb": b"{}", "b.ipynb": b"{}"})
    assert data["output"] == "The submission holds 2 notebooks (a.ipynb, b.ipynb); upload only attention_numpy.ipynb."
    data, _ = run_autograder(root, {"attention_numpy.ipynb": b"{}"}, python="/nonexistent/python")
    assert data["score"] == 0.0 and data["output"].startswith("The autograder could not start (exit status 127).")


# --------------------------------------------------------------------------------------------
# GitHub Classroom: the workflow, with its grading steps run here as the runner would run them


def test_classroom_workflow_grades_summarises_and_reports(tmp_path):
    proc = grader_cli(
        "classroom-workflow",
        "attention_numpy",
        "--grading-repo",
        "course-org/attention-course",
        "--config",
        str(ROOT / "config.yaml"),
        "--out",
        str(tmp_path / "repo"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    wf = yaml.safe_load((tmp_path / "repo/.github/workflows/classroom.yml").read_text())
    assert set(wf[True]) == {"push", "pull_request", "workflow_dispatch"}  # YAML 1.1 reads the key `on` as True
    job = wf["jobs"]["autograding"]
    assert job["name"] == "Autograding Tests" and job["env"]["ASSIGNMENT"] == "attention_numpy"
    steps = {s.get("name", s.get("uses")): s for s in job["steps"]}
    assert steps["Check out the grading materials"]["with"]["repository"] == "course-org/attention-course"
    assert steps["Upload the scorecards"]["uses"] == "actions/upload-artifact@v4"
    reporter = steps["Report to GitHub Classroom"]
    assert reporter["uses"] == "classroom-resources/autograding-grading-reporter@v1"
    assert reporter["with"]["runners"] == "grader"
    assert reporter["env"]["GRADER_RESULTS"] == "${{ steps.grade.outputs.result }}"

    # The grading repository holds what `grader grading-bundle` writes: no solution.
    grading = tmp_path / "grading"
    proc = grader_cli(
        "grading-bundle", "attention_numpy", "--config", str(ROOT / "config.yaml"), "--out", str(grading), cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert (grading / "pyproject.toml").is_file() and (grading / "grader/cli.py").is_file()
    assert not list(grading.rglob("solutions")) and not list(grading.rglob("*.ipynb"))[1:]
    repo = tmp_path / "repo"
    shutil.copyfile(EXAMPLES / "carol_no_sqrt.ipynb", repo / "attention_numpy.ipynb")
    github_output, summary = tmp_path / "output", tmp_path / "summary.md"
    env = {
        **job["env"],
        "GRADER_CONFIG": str(grading / "config.yaml"),
        "GITHUB_OUTPUT": str(github_output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "PATH": f"{ROOT / '.venv/bin'}:/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
    }
    for name in ("Grade", "Summary"):
        step = subprocess.run(
            ["bash", "-e", "-c", steps[name]["run"]], cwd=repo, env=env, capture_output=True, text=True
        )
        assert step.returncode == 0, step.stderr
    import base64

    key, _, value = github_output.read_text().strip().partition("=")
    result = json.loads(base64.b64decode(value))
    assert key == "result" and result["version"] == 1 and result["max_score"] == 11
    assert sum(t["score"] for t in result["tests"]) == 5
    assert "| scaled: Scaled scores | ❌ not yet correct | 0/2 |" in summary.read_text()
    assert (repo / "scorecards/attention_numpy.yaml").is_file() and (repo / "scorecards/junit.xml").is_file()


def test_classroom_workflow_rejects_values_that_would_break_the_yaml(tmp_path):
    proc = grader_cli(
        "classroom-workflow",
        "attention_numpy",
        "--grading-repo",
        "org/repo\nx: 1",
        "--config",
        str(ROOT / "config.yaml"),
        "--out",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert (proc.returncode, proc.stderr) == (2, "grader: --grading-repo must be OWNER/NAME, got 'org/repo\\nx: 1'.\n")


# --------------------------------------------------------------------------------------------
# Hidden checks and expected values, in every format


def _carol_with(course, numpy_assignment, *, hidden: bool = False, show_expected: str = "never"):
    from grader.judge.grading import Grader

    scaled = numpy_assignment.question("scaled")
    check = dataclasses.replace(scaled.checks[0], hidden=hidden)
    a = dataclasses.replace(
        numpy_assignment,
        questions=tuple(
            dataclasses.replace(q, checks=(check,)) if q.id == "scaled" else q for q in numpy_assignment.questions
        ),
    )
    c = dataclasses.replace(course, scorecard=ScorecardSettings(show_expected=show_expected))
    return Grader(c).grade(a, EXAMPLES / "carol_no_sqrt.ipynb"), c, a


def _all_formats(card, course, assignment, tmp_path) -> dict[str, str]:
    path = EXAMPLES / "carol_no_sqrt.ipynb"
    return {
        f: render_one(f, path, card, course, assignment)
        for f in ("yaml", "json", "md", "html", "gradescope", "classroom", "classroom50")
    }


def test_a_hidden_check_is_pass_fail_only_in_every_format(course, numpy_assignment, tmp_path):
    card, c, a = _carol_with(course, numpy_assignment, hidden=True)
    assert question(card, "scaled").lines == ["A hidden check on scaled scores did not pass."]
    formats = _all_formats(card, c, a, tmp_path)
    for fmt, text in formats.items():
        if fmt == "json":
            continue
        assert "A hidden check on scaled scores did not pass." in text, fmt
        assert "sqrt(d_k)" not in text and "4 / 9 elements" not in text, fmt
    # The document is the instructor's whole record (grader report counts the hidden check's
    # mistake): its check keeps the hint and the difference, beside the student's one line.
    data = json.loads(formats["json"])
    scaled = next(q for q in data["questions"] if q["id"] == "scaled")
    assert [f["text"] for f in scaled["feedback"]] == ["A hidden check on scaled scores did not pass."]
    assert scaled["checks"][0]["hidden"] and scaled["checks"][0]["hint"] == "The scores are not divided by sqrt(d_k)."


def test_expected_values_appear_only_when_the_config_allows(course, numpy_assignment, tmp_path):
    never, c, a = _carol_with(course, numpy_assignment)
    shown, c2, _ = _carol_with(course, numpy_assignment, show_expected="always")
    assert "(expected" not in " ".join(question(never, "scaled").lines)
    assert "[0, 0] is 5 (expected " in question(shown, "scaled").lines[0]
    for fmt, text in _all_formats(never, c, a, tmp_path).items():
        assert "(expected " not in text, fmt
    for fmt, text in _all_formats(shown, c2, a, tmp_path).items():
        assert "[0, 0] is 5 (expected " in text, fmt


def test_every_format_has_exactly_one_renderer():
    from grader.outputs.formats import FORMATS, PerRun, PerSubmission
    from grader.vocab import Format

    assert list(FORMATS) == list(Format)
    assert all(isinstance(spec, (PerSubmission, PerRun)) and spec.format is fmt for fmt, spec in FORMATS.items())
    suffixes = [s.suffix for s in FORMATS.values() if isinstance(s, PerSubmission)]
    files = [s.filename for s in FORMATS.values() if isinstance(s, PerRun)]
    assert len(set(suffixes)) == len(suffixes) and len(set(files)) == len(files)
