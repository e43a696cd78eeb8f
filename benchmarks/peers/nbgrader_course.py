"""Grade nbgrader's own documentation course with nbgrader and with this grader, submission by
submission, and print both scores side by side.

    python benchmarks/peers/nbgrader_course.py NBGRADER_CHECKOUT PEER_PYTHON [WORKDIR] [--test-notebooks | --autotest | --autotest-notebooks]

NBGRADER_CHECKOUT is a checkout of jupyter/nbgrader (its course is read from
nbgrader/docs/source/user_guide/source, never copied into this repository); PEER_PYTHON is the
python of a throwaway virtual environment with nbgrader installed (``pip install nbgrader``).
The submissions are written here: each answers the released notebook's solution cells in its own
way (right, wrong in one place, unanswered, or a cheat).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import yaml

CORRECT = {
    "squares": "def squares(n):\n    if n < 1:\n        raise ValueError('n < 1')\n    return [i ** 2 for i in range(1, n + 1)]",
    "sum_of_squares": "def sum_of_squares(n):\n    return sum(squares(n))",
    "sum_of_squares_application": "def pyramidal_number(n):\n    return sum_of_squares(n)",
}
EQ = "class Eq(list):\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n        return False\n"
SUBMISSIONS: dict[str, dict[str, str]] = {
    "correct": CORRECT,
    "no_raise": {**CORRECT, "squares": "def squares(n):\n    return [i ** 2 for i in range(1, n + 1)]"},
    "reimplements": {
        **CORRECT,
        "sum_of_squares": "def sum_of_squares(n):\n    return sum(i * i for i in range(1, n + 1))",
    },
    "off_by_one": {
        **CORRECT,
        "squares": "def squares(n):\n    if n < 1:\n        raise ValueError('n < 1')\n"
        "    return [i ** 2 for i in range(n)]",
    },
    "placeholder": {},
    "cheat_equal": {
        **CORRECT,
        "squares": EQ + "def squares(n):\n    if n < 1:\n        raise ValueError('n < 1')\n    return Eq()",
    },
    "cheat_traceback": {
        **CORRECT,
        "squares": "import IPython.core.interactiveshell\n"
        "IPython.core.interactiveshell.InteractiveShell.showtraceback = lambda *a, **k: None\n"
        "def squares(n):\n    return []",
    },
}
NBGRADER_CONFIG = """c = get_config()
c.CourseDirectory.course_id = "course101"
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = "sqlite:///{root}/gradebook.db"
c.Exchange.root = {root!r} + "/exchange"
"""
PEER_SCORES = """
import json, sys
from nbgrader.api import Gradebook
out = {}
with Gradebook(sys.argv[1]) as gb:
    for student in json.loads(sys.argv[2]):
        for nb in gb.find_submission("ps1", student).notebooks:
            for g in nb.grades:
                out.setdefault(student, {})[g.name] = (g.auto_score, g.max_score, g.cell_type)
print(json.dumps(out))
"""


def answer(release: Path, answers: dict[str, str]) -> nbformat.NotebookNode:
    nb = nbformat.read(str(release), as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return nb


def run(cmd: list[str], cwd: Path) -> str:
    # nbgrader calls its venv's own programs (alembic) by name.
    env = {**os.environ, "PATH": f"{Path(cmd[0]).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def autograde(peer: Path, peer_python: Path, submissions: dict[str, Path]) -> dict[str, Any]:
    """nbgrader's ``generate_assignment`` and ``autograde`` of ps1 in the course folder ``peer``,
    each submission handed in as ``p1.ipynb`` by its student; the scores nbgrader gave."""
    nbgrader = [str(peer_python), "-m", "nbgrader"]
    run([*nbgrader, "generate_assignment", "ps1", "--force"], peer)
    for student, notebook in submissions.items():
        run([*nbgrader, "db", "student", "add", student], peer)
        (peer / "submitted" / student / "ps1").mkdir(parents=True)
        shutil.copy(notebook, peer / "submitted" / student / "ps1" / "p1.ipynb")
    run([*nbgrader, "autograde", "ps1", "--force"], peer)
    scores: dict[str, Any] = json.loads(
        run(
            [str(peer_python), "-c", PEER_SCORES, f"sqlite:///{peer}/gradebook.db", json.dumps(list(submissions))], peer
        )
    )
    return scores


def test_notebooks(checkout: Path, peer_python: Path, work: Path) -> None:
    """nbgrader's own test notebooks (nbgrader/tests/apps/files), used as its own tests use them:
    ``submitted-unchanged.ipynb`` is the source, the others are submissions of it."""
    files = checkout / "nbgrader/tests/apps/files"
    source = work / "source"
    (source / "ps1").mkdir(parents=True)
    shutil.copy(files / "submitted-unchanged.ipynb", source / "ps1" / "p1.ipynb")
    names = [
        "submitted-unchanged",
        "submitted-changed",
        "submitted-locked-cell-changed",
        "submitted-grade-cell-changed",
        "submitted-cheat-attempt",
        "submitted-cheat-attempt-alternative",
    ]
    peer = work / "peer"
    shutil.copytree(source, peer / "source")
    (peer / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(root=str(peer)))
    students = [n.removeprefix("submitted-") for n in names]
    theirs = autograde(peer, peer_python, {s: files / f"{n}.ipynb" for n, s in zip(names, students, strict=True)})
    course = work / "course"
    course.mkdir()
    grader = [sys.executable, "-m", "grader.cli"]
    print(run([*grader, "import", "nbgrader", str(source / "ps1")], course))
    print(run([*grader, "import", "nbgrader", str(source / "ps1"), "--keep-failing-tests"], course))
    print(run([*grader, "validate"], course))
    subs = work / "subs"
    for name, student in zip(names, students, strict=True):
        (subs / student).mkdir(parents=True)
        shutil.copy(files / f"{name}.ipynb", subs / student / f"{student}.ipynb")
    table(work, course, subs, students, theirs, "ps1")


def table(work: Path, course: Path, subs: Path, students: list[str], theirs: dict[str, Any], assignment: str) -> None:
    grader = [sys.executable, "-m", "grader.cli"]
    out = work / "out"
    for student in students:
        run([*grader, "grade", str(subs / student), "-a", assignment, "-o", str(out / student)], course)
    print("| submission | question | nbgrader | here | same |")
    print("|---|---|---|---|---|")
    for student in students:
        card = yaml.safe_load(next((out / student).glob("*.yaml")).read_text())
        ours = {q["id"]: (q["score"], q["status"]) for q in card["questions"]}
        for grade_id, (auto, _, _) in theirs[student].items():
            if grade_id not in ours:
                continue
            here, status = ours[grade_id]
            peer_text = "person" if auto is None else f"{auto:g}"
            here_text = "person" if status == "manual" else f"{here:g}"
            same = peer_text == here_text
            print(f"| {student} | {grade_id} | {peer_text} | {here_text} | {'yes' if same else 'NO'} |")


def autotest_notebooks(checkout: Path, peer_python: Path, work: Path) -> None:
    """nbgrader's own AUTOTEST test notebooks (nbgrader/tests/apps/files/autotest-*.ipynb), each a
    source with its ``-unchanged`` / ``-changed`` submissions, templates from the autotests.yml there."""
    files = checkout / "nbgrader/tests/apps/files"
    for kind in ("simple", "hashed", "multi", "hidden"):
        base = work / kind
        source, peer = base / "source", base / "peer"
        (source / "ps1").mkdir(parents=True)
        shutil.copy(files / f"autotest-{kind}.ipynb", source / "ps1" / "p1.ipynb")
        shutil.copy(files / "autotests.yml", base / "autotests.yml")  # the course's root, above source/
        shutil.copytree(source, peer / "source")
        shutil.copy(files / "autotests.yml", peer / "autotests.yml")
        (peer / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(root=str(peer)))
        names = sorted(p.stem for p in files.glob(f"autotest-{kind}-*.ipynb"))
        students = [n.removeprefix(f"autotest-{kind}-") for n in names]
        theirs = autograde(peer, peer_python, {s: files / f"{n}.ipynb" for n, s in zip(names, students, strict=True)})
        course = base / "course"
        course.mkdir()
        grader = [sys.executable, "-m", "grader.cli"]
        run([*grader, "import", "nbgrader", str(source / "ps1")], course)
        mine = released_tests(course / "assignments/ps1/ps1.ipynb", ours=True)
        released = released_tests(peer / "release/ps1/p1.ipynb", ours=False)
        same = sum(a == b for a, b in zip(mine, released, strict=False))
        print(f"autotest-{kind}: expanded test cells identical to nbgrader's release: {same} of {len(released)}")
        subs = base / "subs"
        for name, student in zip(names, students, strict=True):
            (subs / student).mkdir(parents=True)
            shutil.copy(files / f"{name}.ipynb", subs / student / f"{student}.ipynb")
        table(base, course, subs, students, theirs, "ps1")


def released_tests(notebook: Path, *, ours: bool) -> list[str]:
    """The test cells of a released notebook, in order: nbgrader's (graded, not a solution) or this
    grader's skeleton's (tagged skip-grading)."""
    nb = nbformat.read(str(notebook), as_version=4)
    if ours:
        return [c.source.strip() for c in nb.cells if "skip-grading" in c.metadata.get("tags", [])]
    return [
        c.source.strip()
        for c in nb.cells
        if c.cell_type == "code"
        and c.metadata.get("nbgrader", {}).get("grade")
        and not c.metadata.get("nbgrader", {}).get("solution")
    ]


def main() -> None:
    checkout, peer_python = Path(sys.argv[1]), Path(sys.argv[2])
    args = [a for a in sys.argv[3:] if not a.startswith("--")]
    work = Path(args[0] if args else "/tmp/nbgrader-compare").resolve()
    shutil.rmtree(work, ignore_errors=True)
    if "--test-notebooks" in sys.argv:
        test_notebooks(checkout, peer_python, work)
        return
    if "--autotest-notebooks" in sys.argv:
        autotest_notebooks(checkout, peer_python, work)
        return
    # ``--autotest``: the same course written with nbgrader's AUTOTEST directives (ps1_autotest),
    # expanded by nbgrader from autotests.yml at the course's root.
    assignment = "ps1_autotest" if "--autotest" in sys.argv else "ps1"
    guide = checkout / "nbgrader/docs/source/user_guide"
    source = guide / "source"
    peer = work / "peer"
    shutil.copytree(
        source, peer / "source", ignore=shutil.ignore_patterns(*(["ps1_autotest"] if assignment == "ps1" else ["ps1"]))
    )
    if assignment == "ps1_autotest":
        shutil.copy(guide / "autotests.yml", peer / "autotests.yml")
    # The header notebook at the top of every notebook, as nbgrader's documentation configures it
    # (and as ``grader import`` puts it).
    (peer / "nbgrader_config.py").write_text(
        NBGRADER_CONFIG.format(root=str(peer)) + 'c.IncludeHeaderFooter.header = "source/header.ipynb"\n'
    )
    nbgrader = [str(peer_python), "-m", "nbgrader"]
    run([*nbgrader, "generate_assignment", assignment, "--force"], peer)
    students = list(SUBMISSIONS)
    for student in students:
        run([*nbgrader, "db", "student", "add", student], peer)
        folder = peer / "submitted" / student / assignment
        folder.mkdir(parents=True)
        for name in ("problem1", "problem2"):
            nb = answer(peer / "release" / assignment / f"{name}.ipynb", SUBMISSIONS[student])
            nbformat.write(nb, str(folder / f"{name}.ipynb"))
        shutil.copy(peer / "release" / assignment / "jupyter.png", folder)
    run([*nbgrader, "autograde", assignment, "--force"], peer)
    theirs = json.loads(
        run(
            [
                str(peer_python),
                "-c",
                PEER_SCORES.replace('"ps1"', repr(assignment)),
                f"sqlite:///{peer}/gradebook.db",
                json.dumps(students),
            ],
            peer,
        )
    )

    course = work / "course"
    course.mkdir()
    grader = [sys.executable, "-m", "grader.cli"]
    print(run([*grader, "import", "nbgrader", str(source / assignment)], course))
    print(run([*grader, "validate"], course))
    if assignment == "ps1_autotest":
        mine = released_tests(
            course / "assignments" / f"{assignment}_problem1" / f"{assignment}_problem1.ipynb", ours=True
        )
        theirs_tests = released_tests(peer / "release" / assignment / "problem1.ipynb", ours=False)
        same = sum(a == b for a, b in zip(mine, theirs_tests, strict=False))
        print(f"expanded test cells identical to nbgrader's release: {same} of {len(theirs_tests)}")
    subs = work / "subs"
    for student in students:
        (subs / student).mkdir(parents=True)
        shutil.copy(peer / "submitted" / student / assignment / "problem1.ipynb", subs / student / f"{student}.ipynb")
    table(work, course, subs, students, theirs, f"{assignment}_problem1")


if __name__ == "__main__":
    main()
