"""Grade otter-grader's tutorial with otter and with this grader, submission by submission, and
print both scores side by side.

    python benchmarks/peers/otter_course.py OTTER_CHECKOUT PEER_PYTHON [WORKDIR]

OTTER_CHECKOUT is a checkout of ucbds-infra/otter-grader (its tutorial, docs/tutorial/demo.ipynb,
and the submissions beside it are read there, never copied into this repository); PEER_PYTHON is
the python of a throwaway virtual environment with otter-grader installed (``pip install
otter-grader``). Otter runs each submission with ``otter run`` (no Docker); this grader imports the
master notebook with ``grader import otter`` and grades the same notebooks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml

# Cheats of our own, each a cell added at the end of the tutorial's correct submission: in otter's
# kernel the tests then see the patched world.
CHEATS = {
    "cheat-isclose": "price_by_flavor = price_by_flavor * 0 + 1\nnp.isclose = lambda *a, **k: True",
    "cheat-equal": "class Same(float):\n    def __eq__(self, other):\n        return True\n"
    "def square(x):\n    return Same(0)",
}


def run(cmd: list[str], cwd: Path, *, check: bool = True) -> str:
    env = {**os.environ, "PATH": f"{Path(cmd[0]).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if check and proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def main() -> None:
    checkout, peer_python = Path(sys.argv[1]), Path(sys.argv[2])
    work = Path(sys.argv[3] if len(sys.argv) > 3 else "/tmp/otter-compare").resolve()
    shutil.rmtree(work, ignore_errors=True)
    tutorial = work / "tutorial"
    shutil.copytree(checkout / "docs/tutorial", tutorial)
    # otter assign writes the autograder zip before it makes the solutions PDF, which needs a browser.
    run([str(peer_python), "-m", "otter", "assign", "demo.ipynb", "dist"], tutorial, check=False)
    autograder = next((tutorial / "dist/autograder").glob("*.zip"))
    ipynbs = tutorial / "submissions/ipynbs"
    for name, code in CHEATS.items():
        nb = nbformat.read(str(ipynbs / "demo-passesAll.ipynb"), as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(code))
        nbformat.write(nb, str(ipynbs / f"{name}.ipynb"))
    subs = sorted(ipynbs.glob("*.ipynb"))
    theirs: dict[str, dict[str, float]] = {}
    for sub in subs:
        out = work / "peer" / sub.stem
        out.mkdir(parents=True)
        run([str(peer_python), "-m", "otter", "run", "-a", str(autograder), "-o", str(out), str(sub)], tutorial)
        results = json.loads((out / "results.json").read_text())
        theirs[sub.stem] = {t["name"]: t["score"] for t in results["tests"] if "score" in t}

    course = work / "course"
    course.mkdir()
    grader = [sys.executable, "-m", "grader.cli"]
    print(run([*grader, "import", "otter", str(tutorial / "demo.ipynb")], course))
    print(run([*grader, "validate"], course))
    run([*grader, "grade", str(tutorial / "submissions/ipynbs"), "-a", "demo", "-o", str(work / "out")], course)
    print("| submission | question | otter | here | same |")
    print("|---|---|---|---|---|")
    for sub in subs:
        card = yaml.safe_load((work / "out" / f"{sub.stem}.yaml").read_text())
        ours = {q["id"]: q["score"] for q in card["questions"] if q["status"] != "manual"}
        for name, score in theirs[sub.stem].items():
            if name in ours:
                same = abs(score - ours[name]) < 0.005  # scorecards show two decimals
                print(f"| {sub.stem} | {name} | {score:g} | {ours[name]:g} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
