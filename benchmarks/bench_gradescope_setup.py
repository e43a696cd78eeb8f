"""The Gradescope zip, installed and run the way Gradescope does, on this machine.

    .venv/bin/python benchmarks/bench_gradescope_setup.py [ASSIGNMENT ...]   (default: attention_numpy)

For each assignment: builds the zip (`grader gradescope-zip`), unpacks it as ROOT/source in a
temporary folder, runs its `setup.sh` with AUTOGRADER_ROOT=ROOT (a fresh virtual environment; the
packages come from wherever this machine's pip configuration says, with pip's cache; PyPI's torch
index only if it answers), then `run_autograder` on an example submission. Prints the time of each
step, what the environment holds (torch or not), and the score. Too slow for the test suite (the
install downloads or unpacks every dependency); tests/test_render.py checks the generated files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBMISSIONS = {"attention_numpy": ROOT / "examples/attention_numpy/carol_no_sqrt.ipynb"}


def main(names: list[str]) -> int:
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores"
    )
    status = 0
    for name in names:
        with tempfile.TemporaryDirectory(prefix="gradescope-") as tmp:
            base = Path(tmp)
            base.chmod(0o755)  # the sandbox's uid starts the environment's Python, as on Gradescope
            t = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "grader.cli",
                    "gradescope-zip",
                    name,
                    "--config",
                    str(ROOT / "config.yaml"),
                    "--out",
                    str(base),
                ],
                check=True,
                capture_output=True,
            )
            zipped = base / f"{name}-gradescope.zip"
            print(f"{name}: zip built in {time.perf_counter() - t:.1f} s, {zipped.stat().st_size // 1024} KB")
            root = base / "autograder"
            with zipfile.ZipFile(zipped) as z:
                z.extractall(root / "source")
                for info in z.infolist():  # with the modes Gradescope keeps (scripts executable)
                    (root / "source" / info.filename).chmod(info.external_attr >> 16 & 0o777 or 0o644)
            print(
                "  requirements.txt: "
                + "; ".join(
                    line
                    for line in (root / "source/requirements.txt").read_text().splitlines()
                    if not line.startswith("#")
                )
            )
            env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
            env["AUTOGRADER_ROOT"] = str(root)
            t = time.perf_counter()
            proc = subprocess.run(["bash", str(root / "source/setup.sh")], env=env, capture_output=True, text=True)
            took = time.perf_counter() - t
            print(
                f"  setup.sh: exit {proc.returncode} in {took:.1f} s; last lines: "
                + " | ".join(proc.stdout.strip().splitlines()[-3:] + proc.stderr.strip().splitlines()[-3:])
            )
            if proc.returncode:
                status = 1
                continue
            listed = subprocess.run(
                [str(root / "venv/bin/python"), "-m", "pip", "list", "--format=json"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            installed = {d["name"].lower(): d["version"] for d in json.loads(listed)}
            heavy = sorted(n for n in ("torch", "pandas", "matplotlib", "nbconvert", "pytest") if n in installed)
            print(
                f"  environment: {len(installed)} distributions; of torch, pandas, matplotlib, nbconvert, "
                f"pytest: {', '.join(f'{n} {installed[n]}' for n in heavy) or 'none'}"
            )
            submission = SUBMISSIONS.get(name, ROOT / f"assignments/{name}/{name}.ipynb")
            (root / "submission").mkdir()
            shutil.copyfile(submission, root / "submission" / f"{name}.ipynb")
            t = time.perf_counter()
            proc = subprocess.run(
                ["bash", str(root / "source/run_autograder")], env=env, capture_output=True, text=True
            )
            results = json.loads((root / "results/results.json").read_text())
            print(
                f"  run_autograder ({submission.name}): {time.perf_counter() - t:.1f} s, score "
                f"{results['score']:g}; {proc.stdout.strip()}"
            )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["attention_numpy"]))
