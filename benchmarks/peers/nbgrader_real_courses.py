"""Courses instructors published with nbgrader, imported here and graded by both tools.

    python benchmarks/peers/nbgrader_real_courses.py PEER_PYTHON WORKDIR SOURCE_FOLDER...

Each SOURCE_FOLDER is an assignment folder of an nbgrader course (``source/ps1``) in a checkout of
the instructor's repository (never copied into this one). Every notebook in it with graded cells
is taken on its own, with the files beside it: ``grader import nbgrader`` and ``grader validate``
here; ``nbgrader generate_assignment`` and ``nbgrader autograde`` in a throwaway environment
(PEER_PYTHON, with ``pip install nbgrader``). Three submissions are graded by both: the source
notebook itself (the solution), nbgrader's released notebook left as it is, and the solution with
its first solution region emptied (a mistake). Prints one row per notebook: whether it imports and
validates here (or why not), and how many graded cells score what nbgrader gives them.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import yaml

NBGRADER_CONFIG = """c = get_config()
c.CourseDirectory.course_id = "course"
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = "sqlite:///{root}/gradebook.db"
c.Exchange.root = {root!r} + "/exchange"
"""
SCORES = """
import json, sys
from nbgrader.api import Gradebook
out = {}
with Gradebook(sys.argv[1]) as gb:
    for student in json.loads(sys.argv[2]):
        try:
            nbs = gb.find_submission("ps", student).notebooks
        except Exception:
            continue
        for nb in nbs:
            for g in nb.grades:
                out.setdefault(student, {})[g.name] = g.auto_score
print(json.dumps(out))
"""
# nose no longer installs on a current Python; the courses below import ``nose.tools``. Both tools
# get it as unittest's assertions under nose's names (this grader has its own), put beside each
# submission for nbgrader's kernel.
NOSE_TOOLS = """import re as _re
import unittest as _unittest
_case = _unittest.TestCase("__init__")
for _name in dir(_case):
    if _name.startswith("assert") and "_" not in _name:
        globals()[_re.sub("([A-Z])", lambda m: "_" + m.group(1).lower(), _name)] = getattr(_case, _name)
ok_ = _case.assertTrue
eq_ = _case.assertEqual
"""
BEGIN = re.compile(r"^(\s*)### BEGIN SOLUTION\s*$", re.M)
REGION = re.compile(r"^(\s*)### BEGIN SOLUTION\s*\n.*?^\s*### END SOLUTION[^\n]*", re.M | re.S)
SUBMISSIONS = ("solution", "released", "mistake")


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env_path = f"{Path(cmd[0]).parent}:/usr/bin:/bin"
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, env={"PATH": env_path, "HOME": str(cwd)}, timeout=900
    )


def graded(nb: Any) -> bool:
    return any(
        c.metadata.get("nbgrader", {}).get("grade") or c.metadata.get("nbgrader", {}).get("task") for c in nb.cells
    )


def mistake(nb: Any) -> Any:
    """The solution with its first solution region emptied (``pass`` in its place)."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution") and BEGIN.search(cell.source):
            cell.source = REGION.sub(lambda m: f"{m.group(1)}pass", cell.source, count=1)
            break
    return nb


def one(notebook: Path, peer_python: Path, work: Path) -> dict[str, Any]:
    row: dict[str, Any] = {"notebook": notebook.name}
    src = work / "source" / "ps"
    shutil.copytree(notebook.parent, src, ignore=shutil.ignore_patterns("*.ipynb", ".*"))
    shutil.copy(notebook, src / "nb.ipynb")
    course = work / "course"
    course.mkdir()
    grader = [sys.executable, "-m", "grader.cli"]
    imported = run([*grader, "import", "nbgrader", str(src)], course)
    row["import"] = "yes" if imported.returncode == 0 else _first(imported.stdout + imported.stderr)
    if "--keep-failing-tests" in imported.stdout:  # the solution fails a test: kept for a person, why said
        row["import"] = (
            "with --keep-failing-tests: "
            + " ".join(line.strip() for line in imported.stdout.splitlines() if line.startswith("  - "))[:400]
        )
        imported = run([*grader, "import", "nbgrader", str(src), "--keep-failing-tests"], course)
    if imported.returncode == 0:
        validated = run([*grader, "validate"], course)
        row["validate"] = "ok" if validated.returncode == 0 else _first(validated.stdout.split("\n", 1)[-1])
    peer = work / "peer"
    shutil.copytree(work / "source", peer / "source")
    (peer / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(root=str(peer)))
    nbg = [str(peer_python), "-m", "nbgrader"]
    run([*nbg, "update", "source"], peer)  # notebooks written by an older nbgrader: metadata brought up to date
    made = run([*nbg, "generate_assignment", "ps", "--force"], peer)
    if made.returncode != 0:
        row["peer"] = "generate_assignment fails: " + _first(made.stdout + made.stderr)
        return row
    source_nb = nbformat.read(str(peer / "source/ps/nb.ipynb"), as_version=4)  # as ``nbgrader update`` left it
    released = nbformat.read(str(peer / "release/ps/nb.ipynb"), as_version=4)
    subs = {"solution": source_nb, "released": released, "mistake": mistake(source_nb)}
    for name, nb in subs.items():
        run([*nbg, "db", "student", "add", name], peer)
        folder = peer / "submitted" / name / "ps"
        shutil.copytree(peer / "release/ps", folder)
        nbformat.write(nb, str(folder / "nb.ipynb"))
        (folder / "nose").mkdir(exist_ok=True)
        (folder / "nose" / "__init__.py").write_text("")
        (folder / "nose" / "tools.py").write_text(NOSE_TOOLS)
        here = work / "subs" / name
        here.mkdir(parents=True)
        nbformat.write(nb, str(here / f"{name}.ipynb"))
    run([*nbg, "autograde", "ps", "--force"], peer)
    got = run([str(peer_python), "-c", SCORES, f"sqlite:///{peer}/gradebook.db", json.dumps(list(subs))], peer)
    theirs = json.loads(got.stdout or "{}")
    if imported.returncode != 0:
        row["peer"] = "graded by nbgrader only"
        return row
    same = total = 0
    differ = []
    for name in subs:
        out = work / "out" / name
        run([*grader, "grade", str(work / "subs" / name), "-a", "ps", "-o", str(out)], course)
        cards = list(out.glob("*.yaml"))
        ours = {q["id"]: q for q in yaml.safe_load(cards[0].read_text())["questions"]} if cards else {}
        for gid, auto in theirs.get(name, {}).items():
            q = ours.get(re.sub(r"[^A-Za-z0-9_.-]+", "_", gid).strip("_.-"))
            if q is None:
                continue
            total += 1
            here = "person" if q["status"] == "manual" else f"{q['score']:g}"
            peer_text = "person" if auto is None else f"{auto:g}"
            if here == peer_text:
                same += 1
            else:
                differ.append(f"{name}/{gid}: nbgrader {peer_text}, here {here}")
    row["same"] = f"{same} of {total}"
    row["differ"] = differ
    return row


def _first(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("wrote ")]
    return (lines[-1] if lines else "failed")[:300]


def main() -> None:
    peer_python, work = Path(sys.argv[1]), Path(sys.argv[2]).resolve()
    shutil.rmtree(work, ignore_errors=True)
    rows = []
    only = [a.removeprefix("--only=") for a in sys.argv[3:] if a.startswith("--only=")]
    for folder in (Path(a) for a in sys.argv[3:] if not a.startswith("--")):
        for n, notebook in enumerate(sorted(folder.glob("*.ipynb"))):
            if not graded(nbformat.read(str(notebook), as_version=4)) or (only and notebook.name not in only):
                continue
            row = one(notebook, peer_python, work / f"{folder.name}-{n}")
            row["course"] = folder.name
            rows.append(row)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
