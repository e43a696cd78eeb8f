"""A small course with two questions graded by a person, for the review app's tests.

``build(root)`` writes config.yaml and the solution; ``student(skeleton, ...)`` fills a copy of the
skeleton the way a student does: the blank, and the written answers (or not), with edits students
make (a dropped tag, an added cell), and optionally hostile markdown and outputs.
"""

from __future__ import annotations

from pathlib import Path

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
