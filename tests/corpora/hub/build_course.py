"""Builds the tiny course this corpus grades: one computed question, two questions graded by a person.

Writes course/config.yaml, course/solutions/essay/essay.ipynb and course/submissions/*.ipynb.
Run with the grader's venv python (needs nbformat).
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
COURSE = HERE / "course"

CONFIG = """\
course:
  name: Blind hub corpus course
scorecard:
  formats: [yaml, html]
review:
  graders_group: graders
assignments:
  essay:
    title: Means and explanations
    questions:
      - id: mean
        title: The mean
        points: 1
        checks:
          - value: m
      - id: explain
        title: Why is the mean 2
        points: 2
        manual: true
        rubric:
          - {text: Names the symmetry around 2, points: 1.5}
          - {text: Shows the sum, points: 0.5}
      - id: method
        title: Which method
        points: 2
        manual: true
"""


def notebook(mean_src: str, explain: str, method: str, tagged: bool = True) -> nbformat.NotebookNode:
    tags = {"tags": ["answer"]} if tagged else {}
    return new_notebook(
        cells=[
            new_code_cell("import numpy as np\nx = np.array([1.0, 2.0, 3.0])"),
            new_code_cell(mean_src),
            new_markdown_cell("**Why is the mean 2?**"),
            new_markdown_cell(explain, metadata={**tags, "grader": {"question": "explain"}}),
            new_markdown_cell("**Which method did you use?**"),
            new_markdown_cell(method, metadata={**tags, "grader": {"question": "method"}}),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )


STUDENTS = {
    "ada": ("m = x.mean()", "Symmetric around 2: (1+2+3)/3.", "np.mean"),
    "bob": ("m = x.sum() / 3", "Because 6 / 3 = 2.", "sum over count"),
    "cy": ("m = 2.5", "I guessed.", "guessing"),
    "dee": ("m = np.mean(x)", "The values are 1, 2, 3: centred on 2.", "numpy"),
    "eve": ("m = x.mean()", "<script>alert(1)</script> mean is 2", "<img src=x onerror=alert(2)>"),
    "fay": ("m = x.mean()", "Middle value.", "by hand"),
}


def main() -> None:
    (COURSE / "solutions" / "essay").mkdir(parents=True, exist_ok=True)
    (COURSE / "config.yaml").write_text(CONFIG)
    sol = notebook(
        "m = x.mean()  # SOLUTION",
        "The values are symmetric around 2, and the sum 6 over 3 values is 2.",
        "`x.mean()`, the sum over the count.",
    )
    nbformat.write(sol, COURSE / "solutions" / "essay" / "essay.ipynb")
    subs = COURSE / "submissions"
    subs.mkdir(exist_ok=True)
    for name, (mean_src, explain, method) in STUDENTS.items():
        nbformat.write(notebook(mean_src, explain, method), subs / f"{name}.ipynb")


if __name__ == "__main__":
    main()
