"""A small course whose one assignment hands every student their own data (``per_student:``): a
sentence picked from a list and a seed, from which the notebook draws a matrix. Built in a folder
for the tests of grader.judge.per_student and ``grader assign --per-student``."""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat

NAME = "wordstats"

CONFIG = """\
course:
  name: Per-student data
assignments:
  wordstats:
    given: [sentence, seed]
    variants:
      count: 1
      seed: 11
      per_submission: false
      inputs:
        sentence: "str(rng.choice(['alpha beta gamma delta', 'one two three']))"
        seed: "int(rng.integers(0, 1000))"
    per_student:
      inputs:
        sentence: ["the cat sat on the mat", "colourless green ideas sleep furiously",
                   "a stitch in time saves nine", "all that glitters is not gold",
                   "every cloud has a silver lining", "fortune favours the bold"]
        seed: "int(rng.integers(1, 10_000))"
    questions:
      - id: words
        points: 1
        checks:
          - value: n_words
      - id: lengths
        points: 1
        checks:
          - value: lengths
            properties: [shape]
      - id: norms
        points: 2
        checks:
          - value: norms
            properties: [shape, finite]
"""

SOLUTION_CELLS = [
    ("markdown", "# Word statistics\n\nYour own sentence and seed are in the data cell below."),
    ("code", "import numpy as np"),
    ("code", 'sentence = "the quick brown fox jumps"\nseed = 7'),
    ("code", "words = sentence.split()\nn_words = len(words)  # SOLUTION"),
    ("code", "lengths = np.array([len(w) for w in words])  # SOLUTION"),
    (
        "code",
        "rng = np.random.default_rng(seed)\nX = rng.normal(size=(n_words, 3))\nnorms = np.linalg.norm(X, axis=1)  # SOLUTION",
    ),
]

CORRECT = {
    "n_words": "len(words)",
    "lengths": "np.array([len(w) for w in words])",
    "norms": "np.linalg.norm(X, axis=1)",
}
ONE_MISTAKE = {**CORRECT, "lengths": "np.array([len(w) + 1 for w in words])"}


def build(root: Path, students: int = 30) -> Path:
    """Write the course into ``root`` (config.yaml, the solution, a roster of ``students``);
    returns the config file."""
    sol = root / "solutions" / NAME
    sol.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(src) if kind == "markdown" else nbformat.v4.new_code_cell(src)
        for kind, src in SOLUTION_CELLS
    ]
    for i, cell in enumerate(nb.cells):
        cell.id = f"c{i}"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(sol / f"{NAME}.ipynb"))
    (root / "config.yaml").write_text(CONFIG, encoding="utf-8")
    with open(root / "roster.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "name"])
        for k in range(students):
            w.writerow([f"s{k:03d}", f"Student {k}"])
    return root / "config.yaml"
