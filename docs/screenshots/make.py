"""Screenshots of every page type, in headless Chromium, for docs/outputs.md.

    .venv/bin/python docs/screenshots/make.py

Grades four submissions of attention_numpy (one with math, a saved image and a long output:
tests/pages_notebook.py), with the *Scaled scores* question titled with a formula so the class
report has math too, then photographs the feedback page (top, and the part with the math and the
carried-forward marks) and the class report. Chromium runs with no network and no emoji font
needed: what a student's laptop or a server shows.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))

import pages_notebook  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
WIDTH = 1000


def shoot(page: Path, out: Path, height: int, crop: tuple[int, int] | None = None) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=5000",
                f"--window-size={WIDTH},{height}",
                f"--screenshot={out}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    if crop is not None:
        Image.open(out).crop((0, crop[0], WIDTH, crop[1])).save(out, optimize=True)
    print(f"wrote {out.relative_to(ROOT)}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        shutil.copytree(ROOT / "solutions", base / "solutions")
        config = (ROOT / "config.yaml").read_text(encoding="utf-8")
        config = config.replace("title: Scaled scores\n", "title: Scaled scores $S / \\sqrt{d_k}$\n", 1)
        (base / "config.yaml").write_text(config, encoding="utf-8")
        subs = base / "subs"
        pages_notebook.write(subs / "attention_numpy.ipynb")
        for name in ("bob_correct", "dave_wrong_axis", "frank_raises"):
            shutil.copyfile(ROOT / f"examples/attention_numpy/{name}.ipynb", subs / f"{name}.ipynb")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "grader.cli",
                "grade",
                str(subs),
                "-a",
                "attention_numpy",
                "--config",
                str(base / "config.yaml"),
                "-f",
                "html,report",
                "-o",
                str(base / "out"),
            ],
            check=True,
            cwd=base,
        )
        shoot(base / "out/attention_numpy.html", HERE / "feedback-top.png", 1000)
        shoot(base / "out/attention_numpy.html", HERE / "feedback-math.png", 4000, crop=(1640, 2900))
        shoot(base / "out/report.html", HERE / "report.png", 1900)


if __name__ == "__main__":
    main()
