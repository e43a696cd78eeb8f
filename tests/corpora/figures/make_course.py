#!/usr/bin/env python3
"""Write course/: config.yaml with one assignment, attention_heatmap (the attention_numpy assignment of the
product's config.yaml plus a plot question, `heatmap`, graded by a person), and its solution notebook
(the product's attention_numpy solution plus the question's cells).

The plot question, as a course writes it (docs/review.md: "a plot. Mark them `manual: true`; tag the
cell holding the model answer `answer`"): a markdown cell with the question, then a code cell tagged
`answer` whose body is between BEGIN/END SOLUTION markers.
"""

import copy
from pathlib import Path

import nbformat
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

QUESTION = (
    "## Step 8: look at the weights\n**Draw a heat map of `attention_weights`** (one row per query "
    "token, one column per key token, the tokens as tick labels, a colour bar). Which token does "
    "*Batman* attend to most?"
)
ANSWER = """import matplotlib.pyplot as plt

# BEGIN SOLUTION
fig, ax = plt.subplots(figsize=(4, 3.5))
im = ax.imshow(attention_weights, cmap="viridis", vmin=0, vmax=1)
ax.set_xticks(range(len(tokens)), tokens)
ax.set_yticks(range(len(tokens)), tokens)
ax.set_xlabel("key")
ax.set_ylabel("query")
fig.colorbar(im, ax=ax)
plt.show()
# END SOLUTION"""


def main():
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    a = copy.deepcopy(cfg["assignments"]["attention_numpy"])
    a["title"] = "Self-attention by hand, with a heat map of the weights"
    a["questions"].append(
        {
            "id": "heatmap",
            "title": "Heat map of the attention weights",
            "points": 2,
            "manual": True,
            "rubric": [
                {"text": "Rows are queries, columns keys, tokens as labels", "points": 1},
                {"text": "The weights of this notebook, with a colour bar", "points": 1},
            ],
        }
    )
    out = {"course": cfg["course"], "scorecard": cfg.get("scorecard", {}), "assignments": {"attention_heatmap": a}}
    (HERE / "course/solutions/attention_heatmap").mkdir(parents=True, exist_ok=True)
    (HERE / "course/config.yaml").write_text(yaml.safe_dump(out, sort_keys=False, allow_unicode=True))
    nb = nbformat.read(REPO / "solutions/attention_numpy/attention_numpy.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell(QUESTION))
    c = nbformat.v4.new_code_cell(ANSWER)
    c.metadata["tags"] = ["answer"]
    nb.cells.append(c)
    for c in nb.cells:
        c.pop("id", None)
    nb.nbformat_minor = 4
    nbformat.write(nb, HERE / "course/solutions/attention_heatmap/attention_heatmap.ipynb")
    print("course/ written")


if __name__ == "__main__":
    main()
