"""Published nbgrader and otter-grader courses, graded by their own tool and by this grader.

    python benchmarks/peers/published.py COURSES [--manifest FILE] [--work DIR] [--only NAME ...]
        [--peer-nbgrader PYTHON] [--peer-otter PYTHON] [--grader GRADER]

COURSES is a folder holding each course's repository as a plain tree, ``src/OWNER+NAME/``
(``git --git-dir=... archive HEAD | tar -x``); nothing of them is ever copied into this
repository. The manifest (default: ``benchmarks/peers/published_courses.json``) lists, per
course assignment: the tool, the repository and commit, the source (nbgrader: the notebook in its
assignment folder; otter: the master notebook), fixes made to the source before either tool sees
it, files copied beside it (``add_files``: from nbgrader's package,
``"nbgrader:docs/source/user_guide/autotests.yml"``, or from elsewhere in the repository,
``"repo:data/x.csv"``), and the recipes of the submissions derived from the release:

- ``correct``: the released notebook with every answer as the instructor's solution has it
  (nbgrader: each solution cell of the release given the source's cell, its markers removed;
  otter: ``otter assign``'s autograder notebook; ``assign_args`` adds arguments to ``otter assign``
  and ``peer_otter`` names the Python of another otter environment, for a course written for an older
  otter, e.g. its v0 format);
- ``unanswered``: the released notebook as it is;
- each further recipe: ``correct`` with edits ``{"find": regex, "replace": text, "cell": grade_id}``
  (the first cell whose source matches; ``cell`` narrows it to one nbgrader cell), or from
  ``unanswered`` with ``"from": "unanswered"``; ``"tests": "pass"`` replaces every nbgrader test
  cell by ``pass`` (a cheat that edits the tests).

The peer is run in a throwaway environment (``pip install nbgrader`` / ``pip install
otter-grader`` with the courses' requirements): ``nbgrader generate_assignment`` and ``nbgrader
autograde``, or ``otter assign`` and ``otter run``. This grader runs as an instructor runs it:
``grader import``, ``grader validate``, ``grader grade``. Prints one table per course and the
totals; writes ``results.json`` in the work folder. The totals also count the questions on which
the peer does not give the instructor's own solution its points, and the submissions that score as
the peer scores them once those questions are set aside (what the peer gives there says nothing of
the answers).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import yaml

HERE = Path(__file__).resolve().parent
NBGRADER_CONFIG = """c = get_config()
c.CourseDirectory.course_id = "course"
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = "sqlite:///{root}/gradebook.db"
c.Exchange.root = {root!r} + "/exchange"
c.Execute.timeout = 600
c.Execute.kernel_name = "python3"
c.ExecutePreprocessor.kernel_name = "python3"
"""
SCORES = """
import json, sys
from nbgrader.api import Gradebook
out = {}
with Gradebook(sys.argv[1]) as gb:
    for student in json.loads(sys.argv[2]):
        try:
            nbs = gb.find_submission(sys.argv[3], student).notebooks
        except Exception:
            continue
        for nb in nbs:
            for g in nb.grades:
                out.setdefault(student, {})[g.name] = [g.auto_score, g.max_score]
print(json.dumps(out))
"""
# nose no longer installs on a current Python; courses that import ``nose.tools`` get unittest's
# assertions under nose's names beside each submission, for the peer's kernel.
NOSE_TOOLS = """import re as _re
import unittest as _unittest
_case = _unittest.TestCase("__init__")
for _name in dir(_case):
    if _name.startswith("assert") and "_" not in _name:
        globals()[_re.sub("([A-Z])", lambda m: "_" + m.group(1).lower(), _name)] = getattr(_case, _name)
ok_ = _case.assertTrue
eq_ = _case.assertEqual
"""
MARKER = re.compile(r"^[ \t]*#+ *(BEGIN|END) SOLUTION[^\n]*\n?", re.M)


def run(cmd: list[str], cwd: Path, timeout: int = 1800) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(cmd[0]).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("VIRTUAL_ENV", None)
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(cmd, 124, str(exc.stdout or ""), f"timed out after {timeout} s")


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:300]


def first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else "")[:300]


def nbg(cell: Any) -> dict[str, Any]:
    meta: dict[str, Any] = cell.get("metadata", {}).get("nbgrader", {})
    return meta


def apply_edits(nb: Any, edits: list[dict[str, str]]) -> list[str]:
    """Apply each edit to the first cell it matches; returns the edits that matched nothing."""
    missed = []
    for edit in edits:
        for cell in nb.cells:
            if edit.get("cell") and nbg(cell).get("grade_id") != edit["cell"]:
                continue
            if cell.cell_type == edit.get("type", "code") and re.search(edit["find"], cell.source, re.M):
                cell.source = re.sub(edit["find"], edit["replace"], cell.source, count=1, flags=re.M)
                break
        else:
            missed.append(edit["find"])
    return missed


def derive(correct: Any, unanswered: Any, recipe: dict[str, Any]) -> tuple[Any, list[str]]:
    base = unanswered if recipe.get("from") == "unanswered" else correct
    nb = nbformat.from_dict(copy.deepcopy(base))
    missed = apply_edits(nb, recipe.get("edits", []))
    if recipe.get("tests") == "pass":
        for cell in nb.cells:
            if nbg(cell).get("grade") and not nbg(cell).get("solution") and cell.cell_type == "code":
                cell.source = "pass"
    if recipe.get("append"):
        nb.cells.append(nbformat.v4.new_code_cell(recipe["append"]))
    return nb, missed


def nbgrader_peer(course: dict[str, Any], src_nb: Path, peer: Path, work: Path) -> dict[str, Any]:
    """Release with nbgrader, derive the submissions, autograde them; the peer's scores per cell."""
    name = "ps"
    root = work / "peer"
    source = root / "source" / name
    shutil.copytree(src_nb.parent, source, ignore=shutil.ignore_patterns("*.ipynb", ".*"))
    shutil.copy(src_nb, source / src_nb.name)
    checkout = src_nb.parents[len(Path(course["source"]).parts) - 1]
    for added, origin in course.get("add_files", {}).items():  # a file the course's own setup had beside it
        if origin.startswith("nbgrader:"):  # one that nbgrader itself ships, e.g. its documented autotests.yml
            where = run([str(peer), "-c", "import nbgrader, os; print(os.path.dirname(nbgrader.__file__))"], work)
            origin = str(Path(where.stdout.strip()) / origin.split(":", 1)[1])
        elif origin.startswith("repo:"):  # one the repository keeps elsewhere (a course-wide data folder)
            origin = str(checkout / origin.split(":", 1)[1])
        (source / added).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(origin, source / added)
    for old, new in course.get("fixes", []):
        text = (source / src_nb.name).read_text(encoding="utf-8")
        (source / src_nb.name).write_text(text.replace(old, new), encoding="utf-8")
    (root / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(root=str(root)))
    cmd = [str(peer), "-m", "nbgrader"]
    run([*cmd, "update", "source"], root)
    made = run([*cmd, "generate_assignment", name, "--force"], root)
    released = root / "release" / name / src_nb.name
    if not released.is_file():
        return {"error": "generate_assignment fails: " + last_line(made.stdout + made.stderr)}
    src = nbformat.read(str(source / src_nb.name), as_version=4)
    unanswered = nbformat.read(str(released), as_version=4)
    correct = nbformat.from_dict(copy.deepcopy(unanswered))
    by_id = {nbg(c).get("grade_id"): c for c in src.cells if nbg(c).get("grade_id")}
    for cell in correct.cells:
        gid = nbg(cell).get("grade_id")
        if nbg(cell).get("solution") and gid in by_id:
            cell.source = MARKER.sub("", by_id[gid].source)
    subs, missed = {"correct": correct, "unanswered": unanswered}, {}
    for sub, recipe in course.get("submissions", {}).items():
        subs[sub], missed[sub] = derive(correct, unanswered, recipe)
    for sub, nb in subs.items():
        folder = root / "submitted" / sub / name
        shutil.copytree(root / "release" / name, folder)
        nbformat.write(nb, str(folder / src_nb.name))
        (folder / "nose").mkdir(exist_ok=True)
        (folder / "nose" / "__init__.py").write_text("")
        (folder / "nose" / "tools.py").write_text(NOSE_TOOLS)
        (work / "subs").mkdir(exist_ok=True)
        nbformat.write(nb, str(work / "subs" / f"{sub}.ipynb"))
    graded = run([*cmd, "autograde", name, "--force", "--create"], root, timeout=3600)  # --create: students added
    got = run([str(peer), "-c", SCORES, f"sqlite:///{root}/gradebook.db", json.dumps(list(subs)), name], root)
    scores = json.loads(got.stdout or "{}")
    theirs = {
        sub: {gid: ("person" if auto is None else float(auto)) for gid, (auto, _) in scores.get(sub, {}).items()}
        for sub in subs
    }
    points = {gid: mx for gid, (_, mx) in next(iter(scores.values()), {}).items()}
    result: dict[str, Any] = {
        "scores": theirs,
        "points": points,
        "missed_edits": {k: v for k, v in missed.items() if v},
    }
    if not theirs.get("correct"):
        result["error"] = "autograde fails: " + last_line(graded.stdout + graded.stderr)
    return result


def otter_rel(course: dict[str, Any]) -> Path:
    """Where the master notebook's folder is within what is copied: the folder itself, or, with
    ``tree`` (a course whose notebooks read a config file above them), the repository's folder."""
    source = Path(course["source"])
    return source.parent.relative_to(course["tree"]) if "tree" in course else Path(".")


def otter_peer(course: dict[str, Any], master: Path, peer: Path, work: Path) -> dict[str, Any]:
    """Assign with otter, derive the submissions, run otter on each; the peer's scores per question."""
    src = work / "src" / otter_rel(course)
    for old, new in course.get("fixes", []):
        text = (src / master.name).read_text(encoding="utf-8")
        (src / master.name).write_text(text.replace(old, new), encoding="utf-8")
    assign = run(
        [
            str(peer),
            "-m",
            "otter",
            "assign",
            "--no-pdfs",
            "--no-run-tests",
            *course.get("assign_args", []),
            master.name,
            "dist",
        ],
        src,
        timeout=3600,
    )
    dist = src / "dist"
    zips = sorted((dist / "autograder").glob("*.zip")) if dist.is_dir() else []
    if not zips:
        return {"error": "otter assign fails: " + last_line(assign.stdout + assign.stderr)}
    correct = nbformat.read(str(dist / "autograder" / master.name), as_version=4)
    unanswered = nbformat.read(str(dist / "student" / master.name), as_version=4)
    config_file = dist / "autograder" / "otter_config.json"
    if config_file.is_file():
        config = json.loads(config_file.read_text() or "{}")
    else:  # with ``generate: true`` otter assign writes the configuration only inside the autograder zip
        with zipfile.ZipFile(zips[0]) as zf:
            config = json.loads(zf.read("otter_config.json") or "{}") if "otter_config.json" in zf.namelist() else {}
    if config.get("assignment_name"):  # otter checks the name its own export writes into a submission
        for nb in (correct, unanswered):
            nb.metadata.setdefault("otter", {})["assignment_name"] = config["assignment_name"]
    subs, missed = {"correct": correct, "unanswered": unanswered}, {}
    for sub, recipe in course.get("submissions", {}).items():
        subs[sub], missed[sub] = derive(correct, unanswered, recipe)
    theirs: dict[str, dict[str, Any]] = {}
    points: dict[str, float] = {}
    for sub, nb in subs.items():
        (work / "subs").mkdir(exist_ok=True)
        path = work / "subs" / f"{sub}.ipynb"
        nbformat.write(nb, str(path))
        out = work / "otter" / sub
        out.mkdir(parents=True)
        handed_in = path
        if config.get("zips"):  # otter then grades the zip its export makes (the notebook at its root),
            exported = out / "export.zip"  # handed to ``otter run`` inside a zip, as Gradescope uploads it
            with zipfile.ZipFile(exported, "w") as zf:
                zf.write(path, master.name)
            handed_in = out / f"{sub}.zip"
            with zipfile.ZipFile(handed_in, "w") as zf:
                zf.write(exported, exported.name)
        proc = run(
            [str(peer), "-m", "otter", "run", "-a", str(zips[0]), "-o", str(out), str(handed_in)], out, timeout=3600
        )
        if not (out / "results.json").is_file():
            theirs[sub] = {"(otter failed)": last_line(proc.stdout + proc.stderr)}
            continue
        results = json.loads((out / "results.json").read_text())
        theirs[sub] = {t["name"]: float(t["score"]) for t in results["tests"] if "score" in t}
        points |= {t["name"]: float(t.get("max_score") or 0) for t in results["tests"] if "score" in t}
    return {"scores": theirs, "points": points, "missed_edits": {k: v for k, v in missed.items() if v}}


def product(course: dict[str, Any], source: Path, grader: Path, work: Path) -> dict[str, Any]:
    """``grader import``, ``validate`` and ``grade`` as an instructor runs them; scores per question."""
    here = work / "course"
    here.mkdir()
    tool = course["tool"]
    imported = run([str(grader), "import", tool, str(source), *course.get("import_args", [])], here)
    result: dict[str, Any] = {
        "import_exit": imported.returncode,
        "import_out": (imported.stdout + imported.stderr)[:4000],
    }
    result["import"] = "yes"
    if imported.returncode != 0 and "--keep-failing-tests" in imported.stdout + imported.stderr:
        # the solution fails some of its own tests here: imported as the product advises, those for a person
        result["import"] = "with --keep-failing-tests: " + first_line(imported.stdout + imported.stderr)
        imported = run([str(grader), "import", tool, str(source), "--keep-failing-tests"], here)
        result["import_out"] += "\n--- with --keep-failing-tests:\n" + (imported.stdout + imported.stderr)[:4000]
    if not (here / "config.yaml").is_file() or imported.returncode != 0:
        result["import"] = "no: " + last_line(imported.stdout + imported.stderr)
        return result
    assignments = list(yaml.safe_load((here / "config.yaml").read_text())["assignments"])
    validated = run([str(grader), "validate"], here)
    result["validate"] = "ok" if validated.returncode == 0 else last_line(validated.stdout + validated.stderr)
    result["validate_out"] = (validated.stdout + validated.stderr)[-3000:]
    out = work / "out"
    graded = run([str(grader), "grade", str(work / "subs"), "-a", assignments[0], "-o", str(out)], here, timeout=3600)
    result["grade_exit"] = graded.returncode
    ours: dict[str, dict[str, Any]] = {}
    for card_path in sorted(out.glob("*.yaml")):
        card = yaml.safe_load(card_path.read_text())
        if not isinstance(card, dict) or "questions" not in card:
            continue
        ours[card_path.stem] = {
            q["id"]: ("person" if q.get("status") == "manual" else float(q.get("score") or 0))
            for q in card["questions"]
        }
    result["scores"] = ours
    return result


def qid(gid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", gid).strip("_.-")


def compare(theirs: dict[str, dict[str, Any]], ours: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for sub, scores in theirs.items():
        mine = ours.get(sub, {})
        for gid, peer_score in scores.items():
            here = next((mine[k] for k in (gid, qid(gid), "q" + qid(gid)) if k in mine), "missing")
            if isinstance(peer_score, float) and isinstance(here, float):
                same = abs(peer_score - here) < 0.006
            else:
                same = peer_score == here
            rows.append({"submission": sub, "question": gid, "peer": peer_score, "here": here, "same": same})
    return rows


def fmt(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def one(course: dict[str, Any], courses: Path, args: argparse.Namespace) -> dict[str, Any]:
    work = args.work / course["name"]
    checkout = courses / "src" / course["repo"].replace("/", "+")
    source = checkout / course["source"]
    row: dict[str, Any] = {"name": course["name"], "tool": course["tool"], "repo": course["repo"]}
    earlier = work / "row.json"
    if args.reuse_peer and earlier.is_file() and (work / "import-src").is_dir():
        return product_again(course, json.loads(earlier.read_text()), source, args)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = time.monotonic()
    if course["tool"] == "nbgrader":
        peer = nbgrader_peer(course, source, args.peer_nbgrader, work)
        import_source = work / "peer" / "source" / "ps"  # the source as nbgrader read it (fixes applied)
    else:
        top = checkout / course["tree"] if "tree" in course else source.parent
        shutil.copytree(top, work / "src", ignore=shutil.ignore_patterns(".*", "dist"))
        peer = otter_peer(course, source, Path(course.get("peer_otter", args.peer_otter)), work)
        import_source = work / "src" / otter_rel(course) / source.name
    row["peer_seconds"] = round(time.monotonic() - started, 1)
    row["peer"] = {k: v for k, v in peer.items() if k != "scores"}
    if "error" in peer and not peer.get("scores"):
        return row
    if course["tool"] == "nbgrader":  # the import reads the source folder as the instructor has it
        clean = work / "import-src" / Path(course["source"]).parent.name
        shutil.copytree(import_source, clean)
        import_source = clean
    else:
        clean = work / "import-src"
        shutil.copytree(work / "src", clean, ignore=shutil.ignore_patterns("dist"))
        import_source = clean / otter_rel(course) / source.name
    started = time.monotonic()
    mine = product(course, import_source, args.grader, work)
    row["product_seconds"] = round(time.monotonic() - started, 1)
    row["product"] = {k: v for k, v in mine.items() if k != "scores"}
    row["rows"] = compare(peer.get("scores", {}), mine.get("scores", {}))
    return row


def product_again(
    course: dict[str, Any], row: dict[str, Any], source: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """The product run again on the submissions and peer scores of an earlier run (the peer is not rerun)."""
    work = args.work / course["name"]
    theirs: dict[str, dict[str, Any]] = {}
    for r in row.get("rows", []):
        theirs.setdefault(r["submission"], {})[r["question"]] = r["peer"]
    for folder in ("course", "out"):
        shutil.rmtree(work / folder, ignore_errors=True)
    if course["tool"] == "nbgrader":
        import_source = work / "import-src" / Path(course["source"]).parent.name
    else:
        import_source = work / "import-src" / otter_rel(course) / source.name
    started = time.monotonic()
    mine = product(course, import_source, args.grader, work)
    row["product_seconds"] = round(time.monotonic() - started, 1)
    row["product"] = {k: v for k, v in mine.items() if k != "scores"}
    row["rows"] = compare(theirs, mine.get("scores", {}))
    return row


def table(row: dict[str, Any]) -> str:
    lines = [f"## {row['name']} ({row['tool']}, {row['repo']})", ""]
    product_ = row.get("product", {})
    lines.append(
        f"peer: {row.get('peer', {}).get('error', 'ran')} ({row.get('peer_seconds')} s); "
        f"import: {product_.get('import', '-')}; validate: {product_.get('validate', '-')} "
        f"({row.get('product_seconds', '-')} s)"
    )
    if row.get("peer", {}).get("missed_edits"):
        lines.append(f"recipe edits that matched nothing: {row['peer']['missed_edits']}")
    if row.get("rows"):
        lines += ["", "| submission | question | peer | here | same |", "|---|---|---|---|---|"]
        for r in row["rows"]:
            lines.append(
                f"| {r['submission']} | {r['question']} | {fmt(r['peer'])} | {fmt(r['here'])} | "
                f"{'yes' if r['same'] else 'NO'} |"
            )
    return "\n".join(lines) + "\n"


def peer_fails_solution(row: dict[str, Any]) -> set[str]:
    """The questions on which the peer does not give the instructor's own solution its points.

    The ``correct`` submission is the instructor's solution: a question the peer scores below its
    points there, or leaves for a person while this grader scores it, is the peer's own failure
    (a test that cannot run, a score above the points, a library warning on stderr), and whatever
    the peer gives the other submissions on it says nothing of their answers.
    """
    points = row.get("peer", {}).get("points", {})
    failed = set()
    for r in row.get("rows", []):
        if r["submission"] != "correct" or r["question"] not in points:
            continue
        if r["peer"] == "person" and r["here"] == "person":
            continue
        if r["peer"] != points[r["question"]]:
            failed.add(r["question"])
    return failed


def summary(courses: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> str:
    """One line per course: imports, validate, the solution's marks in both, submissions and questions matched."""
    lines = [
        "| course | tool | repository @ commit | imports | `grader validate` | solution full marks (peer / here) "
        "| submissions scored as the peer scores them | questions × submissions | seconds (peer / here) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    totals = {"courses": 0, "imported": 0, "full": 0, "subs": 0, "subs_same": 0, "cells": 0, "cells_same": 0}
    totals.update(own_questions=0, subs_sound=0)
    for course in courses:
        row = results.get(course["name"])
        if row is None:
            continue
        totals["courses"] += 1
        product_ = row.get("product", {})
        imported = product_.get("import", "-")
        totals["imported"] += imported == "yes"
        by_sub: dict[str, list[dict[str, Any]]] = {}
        for r in row.get("rows", []):
            by_sub.setdefault(r["submission"], []).append(r)
        correct = by_sub.get("correct", [])
        peer_full = bool(correct) and all(
            r["peer"] == "person" or r["peer"] == row.get("peer", {}).get("points", {}).get(r["question"])
            for r in correct
        )
        here_full = bool(correct) and all(
            r["here"] == "person"
            if r["peer"] == "person"
            else r["here"] == row.get("peer", {}).get("points", {}).get(r["question"])
            for r in correct
        )
        totals["full"] += here_full
        own = peer_fails_solution(row)
        totals["own_questions"] += len(own)
        subs_same = sum(all(r["same"] for r in rs) for rs in by_sub.values())
        totals["subs_sound"] += sum(all(r["same"] or r["question"] in own for r in rs) for rs in by_sub.values())
        cells_same = sum(r["same"] for rs in by_sub.values() for r in rs)
        cells = sum(len(rs) for rs in by_sub.values())
        totals["subs"] += len(by_sub)
        totals["subs_same"] += subs_same
        totals["cells"] += cells
        totals["cells_same"] += cells_same
        short = imported if len(imported) < 60 else imported[:57] + "..."
        lines.append(
            f"| {course['name']} | {course['tool']} | [{course['repo']}](https://github.com/{course['repo']}) "
            f"@ `{course.get('commit', '')[:10]}` | {short} | {product_.get('validate', '-')} | "
            f"{'yes' if peer_full else 'no'} / {'yes' if here_full else 'no'} | {subs_same} of {len(by_sub)} | "
            f"{cells_same} of {cells} | {row.get('peer_seconds', '-')} / {row.get('product_seconds', '-')} |"
        )
    lines.append(
        f"\n{totals['courses']} courses: {totals['imported']} import as they are, {totals['full']} solutions at full marks "
        f"here; {totals['subs_same']} of {totals['subs']} submissions and {totals['cells_same']} of {totals['cells']} "
        "questions × submissions score as the peer scores them. "
        f"The peer fails the instructor's own solution on {totals['own_questions']} questions; setting those "
        f"aside, {totals['subs_sound']} of {totals['subs']} submissions score as the peer scores them."
    )
    return "\n".join(lines)


def per_submission(courses: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> str:
    """One line per course and submission: both totals, and how many questions score the same."""
    lines = [
        "| course | submission | peer | here | questions the same | differing (peer / here) |",
        "|---|---|---|---|---|---|",
    ]

    def total(values: list[Any]) -> str:
        points = sum(v for v in values if isinstance(v, float))
        people = sum(v == "person" for v in values)
        missing = sum(not isinstance(v, float) and v != "person" for v in values)
        text = f"{points:g}" + (f" + {people} person" if people else "")
        return text + (f" ({missing} not graded)" if missing else "")

    for course in courses:
        row = results.get(course["name"])
        if row is None:
            continue
        by_sub: dict[str, list[dict[str, Any]]] = {}
        for r in row.get("rows", []):
            by_sub.setdefault(r["submission"], []).append(r)
        for sub, rs in by_sub.items():
            differ = ", ".join(f"{r['question']} ({fmt(r['peer'])} / {fmt(r['here'])})" for r in rs if not r["same"])
            if all(r["here"] == "missing" for r in rs):
                differ = "all: not imported here"
            lines.append(
                f"| {course['name']} | {sub} | {total([r['peer'] for r in rs])} | {total([r['here'] for r in rs])} | "
                f"{sum(r['same'] for r in rs)} of {len(rs)} | {differ[:300]} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("courses", type=Path)
    parser.add_argument("--manifest", type=Path, default=HERE / "published_courses.json")
    parser.add_argument("--work", type=Path, default=Path("/tmp/published-courses"))
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--summary", action="store_true", help="print the tables of the courses already run")
    parser.add_argument(
        "--reuse-peer",
        action="store_true",
        help="run only this grader again, on the submissions and peer scores of the last run",
    )
    parser.add_argument("--peer-nbgrader", type=Path, default=Path("/tmp/pub-nbg/bin/python"))
    parser.add_argument("--peer-otter", type=Path, default=Path("/tmp/pub-otter/bin/python"))
    parser.add_argument("--grader", type=Path, default=Path(sys.executable).parent / "grader")
    args = parser.parse_args()
    args.work = args.work.resolve()
    courses = json.loads(args.manifest.read_text())["courses"]
    for course in courses:
        if args.only and course["name"] not in args.only or args.summary:
            continue
        row = one(course, args.courses.resolve(), args)
        (args.work / course["name"] / "row.json").write_text(json.dumps(row, indent=1))
        print(table(row), flush=True)
    results = {}
    for course in courses:  # every course run so far, in this run or an earlier one
        path = args.work / course["name"] / "row.json"
        if path.is_file():
            results[course["name"]] = json.loads(path.read_text())
            if args.summary:
                print(table(results[course["name"]]), flush=True)
    (args.work / "results.json").write_text(json.dumps(results, indent=1))
    print(summary(courses, results))
    if args.summary:
        print()
        print(per_submission(courses, results))


if __name__ == "__main__":
    main()
