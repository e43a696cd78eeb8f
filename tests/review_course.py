"""A small course with two questions graded by a person, for the review app's tests.

``build(root)`` writes config.yaml and the solution; ``student(skeleton, ...)`` fills a copy of the
skeleton the way a student does: the blank, and the written answers (or not), with edits students
make (a dropped tag, an added cell), and optionally hostile markdown and outputs. ``graded_class``
grades the class the review tests share (tests/conftest.py: once per worker, each module working on
a copy of its own, ``copy_class``); ``Chromium`` is the headless browser their pages share.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat

V4 = nbformat.v4

CONFIG = """course:
  name: Review practice
scorecard:
  formats: [yaml, json, md, gradescope, gradebook, report]
assignments:
  rv:
    title: Reading a mean
    questions:
      - id: mean
        title: The mean
        points: 2
        checks:
          - value: m
      - id: explain
        title: Why the mean is 2
        points: 3
        manual: true
      - id: weights
        title: What the weights mean
        points: 2
        manual: true
"""

HOSTILE = (
    '<script>document.title="pwned-md"</script>\n<img src="x" onerror="document.title=\'pwned-img\'">\n'
    '[click](javascript:document.title="pwned-link")'
)


def md(src: str, tags: tuple[str, ...] = ()):
    cell = V4.new_markdown_cell(src)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def solution() -> nbformat.NotebookNode:
    nb = V4.new_notebook()
    nb.cells = [
        md("# Reading a mean"),
        V4.new_code_cell("import numpy as np\nx = np.arange(5.0)"),
        md("## Question 1: the mean\nCompute `m`, the mean of `x`."),
        V4.new_code_cell("m = x.mean()  # SOLUTION"),
        md("## Question 2: why the mean is 2\nExplain in a sentence why the mean of `x` is 2."),
        md("The values 0 to 4 are symmetric around 2.", ("answer",)),
        md("## Question 3: what the weights mean\nWhat would weights that sum to one change?"),
        md("A weighted mean: each value counts by its weight.", ("answer",)),
        md("The end."),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def build(root: Path) -> Path:
    (root / "solutions" / "rv").mkdir(parents=True, exist_ok=True)
    (root / "config.yaml").write_text(CONFIG, encoding="utf-8")
    nbformat.write(solution(), str(root / "solutions" / "rv" / "rv.ipynb"))
    return root


def student(
    skeleton: Path,
    out: Path,
    *,
    mean: str = "x.mean()",
    explain: str | None = None,
    weights: str | None = None,
    drop_tags: bool = False,
    hostile: bool = False,
    extra_cell: str | None = None,
) -> Path:
    nb = nbformat.read(str(skeleton), as_version=4)
    answers = [explain, weights]
    k = 0
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code" and "m = ?" in cell.source:
            cell.source = cell.source.replace("m = ?", f"m = {mean}")
        if "answer" in cell.get("metadata", {}).get("tags", []):
            if answers[k] is not None:
                cell.source = answers[k]
            if drop_tags:
                cell.metadata.pop("tags")
            cells.append(cell)
            if k == 0 and extra_cell is not None:
                cells.append(md(extra_cell))
            if k == 0 and hostile:
                cells.append(md(HOSTILE))
                bad = V4.new_code_cell("print('hi')")
                bad.outputs = [
                    V4.new_output(
                        "display_data",
                        data={
                            "text/html": '<script>document.title="pwned-out"</script><b onmouseover="x()">bold</b>',
                            "text/plain": "bold",
                        },
                    )
                ]
                cells.append(bad)
            k += 1
            continue
        cells.append(cell)
    nb.cells = cells
    nbformat.write(nb, str(out))
    return out


def _grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True, cwd=cwd)


def graded_class(root: Path) -> Path:
    """The course in ``root``, assigned, and a class of three graded through ``grader grade`` into
    ``root/out``: ada answered both questions, bob one (tags dropped, a cell added, hostile HTML),
    cy none."""
    build(root)
    done = _grader("assign", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    skeleton = root / "assignments" / "rv" / "rv.ipynb"
    subs = root / "subs"
    subs.mkdir()
    student(skeleton, subs / "ada.ipynb", explain="Symmetric values around 2.", weights="A weighted mean.")
    student(
        skeleton,
        subs / "bob.ipynb",
        mean="2.0",
        explain="Because 10/5 = 2.",
        drop_tags=True,
        extra_cell="And a second thought.\n\n$\\bar x = \\frac{10}{5}$",
        hostile=True,
    )
    student(skeleton, subs / "cy.ipynb", mean="x.sum()")
    done = _grader(
        "grade", "subs", "--out", "out", "--formats", "yaml,json,md,html,gradescope,gradebook,report", cwd=root
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def copy_class(graded: Path, dest: Path) -> Path:
    """A copy of a graded class (course, submissions, outputs, the grader's cache and the review
    database), file modes kept, for a module to write in."""
    shutil.copytree(graded, dest, symlinks=True)
    return dest


# --------------------------------------------------------------------------------------------
# A real browser: Debian's Chromium driven through chromedriver (Selenium).

CHROMIUM = next(
    (p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome") if Path(p).exists()), None
)
CHROMEDRIVER = shutil.which("chromedriver")


def _browser_missing() -> str:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    if CHROMIUM is None:
        return "no Chromium here (apt-get install chromium)"
    if CHROMEDRIVER is None:
        return "no chromedriver here (apt-get install chromium-driver; `make test-setup` does it as root)"
    return ""


class Chromium:
    """One headless Chromium, started at the first page that needs it and kept for the next: a
    start costs more CPU than most tests of a page do. Each page leaves it on one blank tab with its
    origin's storage and cookies cleared; one that cannot be put back so is ended, and the next page
    starts another."""

    def __init__(self) -> None:
        self.driver: Any = None

    def get(self) -> Any:
        if self.driver is None:
            from selenium import webdriver
            from selenium.webdriver.chrome.service import Service

            options = webdriver.ChromeOptions()
            options.binary_location = CHROMIUM
            for arg in (
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--window-size=1280,900",
            ):
                options.add_argument(arg)
            self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        return self.driver

    def reset(self) -> None:
        driver = self.driver
        try:
            first, *others = driver.window_handles
            for handle in others:
                driver.switch_to.window(handle)
                driver.close()
            driver.switch_to.window(first)
            driver.execute_script("window.localStorage.clear(); window.sessionStorage.clear();")
            driver.delete_all_cookies()
            driver.execute_cdp_cmd("Network.clearBrowserCookies", {})  # every host's, not the current page's alone
            driver.get("about:blank")
        except Exception:  # noqa: BLE001 (whatever failed, a browser not put back is not used again)
            self.quit()

    def quit(self) -> None:
        if self.driver is not None:
            driver, self.driver = self.driver, None
            with contextlib.suppress(Exception):
                driver.quit()
