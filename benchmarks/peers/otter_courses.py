"""Courses instructors published with otter-grader, graded by otter and by this grader, question
by question.

    python benchmarks/peers/otter_courses.py CHECKOUTS PEER_PYTHON [WORKDIR]

CHECKOUTS is a folder holding each course's repository as a plain tree, named ``owner+name``
(``git --git-dir=... archive HEAD | tar -x``); nothing of them is copied into this repository.
PEER_PYTHON is the python of a throwaway virtual environment with ``otter-grader==7.0.0`` and the
courses' own requirements installed. For each course: ``otter assign`` makes otter's autograder
and the student notebook; the submissions are otter's solution notebook, the released skeleton,
and the solution with one mistake of ours; ``otter run`` grades them; ``grader import otter``,
``grader validate`` and ``grader grade`` do the same here. Prints one table per course.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

# (repository, master notebook, a mistake: (pattern, replacement) applied to the first code cell
# of otter's solution notebook that matches it)
# Fixes of a master notebook for today's libraries, made before either tool sees it (both grade
# the fixed course), each said in the table of docs/imported-courses.md.
SOURCE_FIXES = {
    # matplotlib 3.6 renamed the seaborn styles; the old name raises in the solution's first cell.
    "data-88e-proj03-exception": ("'seaborn-muted'", "'seaborn-v0_8-muted'"),
}
COURSES = {
    "data-88e-proj03": (
        "ucbds-infra+otter-grader",
        "examples/data-88e-proj03/proj03.ipynb",
        (r"return np\.sqrt\(np\.mean\(\(y - y_hat\)\*\*2\)\)", "return np.mean(np.abs(y - y_hat))"),
    ),
    "data-88e-proj03-exception": (
        "ucbds-infra+otter-grader",
        "examples/data-88e-proj03-exception/proj03.ipynb",
        (r"return np\.std\(y\) \* corr\(x, y\) / np\.std\(x\)", "return corr(x, y)"),
    ),
    "tru-cs-template": ("TRU-CS+autograder", "sample-jupyter/template.ipynb", (r"return a \+ b", "return a + b + 1")),
    "ecc-confidence-interval": (
        "ds-modules+ecc-statistics",
        "confidence_interval/confidence_interval.ipynb",
        (r"z = \.\.\.", "z = 1.64"),
    ),
}


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(cmd[0]).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)


def submissions(dist: Path, stem: str, mistake: tuple[str, str], into: Path) -> list[Path]:
    into.mkdir(parents=True)
    solution = dist / "autograder" / f"{stem}.ipynb"
    out = [into / "solution.ipynb", into / "unseeded.ipynb", into / "skeleton.ipynb", into / "mistake.ipynb"]
    shutil.copyfile(solution, out[0])
    # The solution as a student submits it: without otter's ``# SEED`` lines, which students never see.
    nb = nbformat.read(str(solution), as_version=4)
    for c in nb.cells:
        c.source = "\n".join(line for line in c.source.splitlines() if not line.rstrip().endswith("# SEED"))
    nbformat.write(nb, str(out[1]))
    shutil.copyfile(dist / "student" / f"{stem}.ipynb", out[2])
    nb = nbformat.read(str(solution), as_version=4)
    pattern, replacement = mistake
    cell = next(c for c in nb.cells if c.cell_type == "code" and re.search(pattern, c.source))
    cell.source = re.sub(pattern, replacement, cell.source, count=1)
    nbformat.write(nb, str(out[3]))
    return out


def otter_scores(peer: Path, autograder: Path, sub: Path, out: Path) -> dict[str, float]:
    out.mkdir(parents=True)
    proc = run([str(peer), "-m", "otter", "run", "-a", str(autograder), "-o", str(out), str(sub)], sub.parent)
    if not (out / "results.json").is_file():
        return {"(otter failed)": float("nan")} | ({} if proc.returncode == 0 else {})
    results = json.loads((out / "results.json").read_text())
    return {t["name"]: t["score"] for t in results["tests"] if "score" in t}


def compare(name: str, checkouts: Path, peer: Path, work: Path) -> None:
    repo, rel, mistake = COURSES[name]
    master = checkouts / repo / rel
    src = work / name / "src"
    shutil.copytree(master.parent, src)
    if name in SOURCE_FIXES:
        old, new = SOURCE_FIXES[name]
        (src / master.name).write_text(
            (src / master.name).read_text(encoding="utf-8").replace(old, new), encoding="utf-8"
        )
    dist = src / "dist"
    assign = run([str(peer), "-m", "otter", "assign", "--no-pdfs", "--no-run-tests", master.name, "dist"], src)
    print(f"## {name} ({repo}/{rel})\n")
    zips = list((dist / "autograder").glob("*.zip")) if dist.is_dir() else []
    if not zips:
        print(f"otter assign failed: {assign.stderr.strip().splitlines()[-1:]}\n")
        return
    subs = submissions(dist, master.stem, mistake, work / name / "subs")
    theirs = {s.stem: otter_scores(peer, zips[0], s, work / name / "otter" / s.stem) for s in subs}
    course = work / name / "course"
    course.mkdir()
    grader = [sys.executable, "-m", "grader.cli"]
    imported = run([*grader, "import", "otter", str(src / master.name)], course)
    print(f"`grader import otter` exit {imported.returncode}:\n```\n{(imported.stdout + imported.stderr).strip()}\n```")
    if imported.returncode != 0 and not (course / "config.yaml").is_file():
        return
    validated = run([*grader, "validate"], course)
    print(f"`grader validate` exit {validated.returncode}:\n```\n{(validated.stdout + validated.stderr).strip()}\n```")
    assignment = next(iter(yaml.safe_load((course / "config.yaml").read_text())["assignments"]))
    run([*grader, "grade", str(subs[0].parent), "-a", assignment, "-o", str(work / name / "out")], course)
    print("\n| submission | question | otter | here | same |\n|---|---|---|---|---|")
    for sub in subs:
        card_path = work / name / "out" / f"{sub.stem}.yaml"
        card = yaml.safe_load(card_path.read_text()) if card_path.is_file() else {"questions": []}
        ours = {q["id"]: (q["score"], q["status"]) for q in card["questions"]}
        for qid, score in theirs[sub.stem].items():
            here, status = ours.get(qid, (None, "missing"))
            shown = "person" if status == "manual" else ("-" if here is None else f"{here:g}")
            same = status != "manual" and here is not None and abs(score - here) < 0.005
            print(f"| {sub.stem} | {qid} | {score:g} | {shown} | {'yes' if same else 'NO'} |")
    print()


def main() -> None:
    checkouts, peer = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    work = Path(sys.argv[3] if len(sys.argv) > 3 else "/tmp/otter-courses").resolve()
    shutil.rmtree(work, ignore_errors=True)
    for name in sys.argv[4:] or COURSES:
        compare(name, checkouts, peer, work)


if __name__ == "__main__":
    main()
