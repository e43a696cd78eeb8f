#!/usr/bin/env python3
"""Build the figures corpus: notebooks/*.ipynb (five submissions of attention_heatmap) and truth.json.

Needs course/ (make_course.py) and the product's `grader assign` to make the skeleton the students got;
then each submission is the skeleton completed as a student would: every `?` blank of the autograded
steps filled with the answer code of the product's example bob_correct, and the plot cell as the case says.
Run notebooks are executed here with nbclient (ipykernel of this venv, matplotlib's inline backend), so
their saved outputs are real.

usage: build.py [--grader PATH]
"""

import argparse
import base64
import copy
import io
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
FILL = {
    "Q = ?\nK = ?\nV = ?": "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T",
    "scores = ?": "scores = Q @ K.T",
    "d_k = Q.shape[1]\nscaled_scores = ?": "d_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
    "def softmax(x):\n    ?\n\nattention_weights = ?": (
        "def softmax(x):\n    e_x = np.exp(x - np.max(x))\n"
        "    return e_x / np.sum(e_x, axis=-1, keepdims=True)\n\n"
        "attention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores)"
    ),
    "output = ?": "output = attention_weights @ V",
}
# what a student writes for the plot (not the solution's text: own names, seaborn-free, pcolormesh-free)
STUDENT_PLOT = """import matplotlib.pyplot as plt

plt.figure(figsize=(4, 3))
plt.imshow(attention_weights, cmap="magma")
plt.xticks(range(3), tokens)
plt.yticks(range(3), tokens)
plt.colorbar()
plt.title("attention weights")
plt.show()"""


def skeleton(grader):
    work = Path(tempfile.mkdtemp(prefix="figures-build-"))
    shutil.copytree(HERE / "course", work / "course")
    subprocess.run([grader, "assign", "attention_heatmap"], cwd=work / "course", check=True, capture_output=True)
    nb = nbformat.read(work / "course/assignments/attention_heatmap/attention_heatmap.ipynb", as_version=4)
    shutil.rmtree(work)
    return nb


def filled(sk):
    nb = copy.deepcopy(sk)
    for c in nb.cells:
        if c.cell_type == "code" and c.source.strip() in FILL:
            c.source = FILL[c.source.strip()]
    return nb


def plot_cell(nb):
    return [c for c in nb.cells if "answer" in c.metadata.get("tags", []) and c.cell_type == "code"][0]


def execute(nb):
    from nbclient import NotebookClient

    nb = copy.deepcopy(nb)
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": tempfile.gettempdir()}}
    ).execute()
    return nb


def pasted_png():
    """A screenshot-like PNG of another heat map (a classmate's, other numbers): what a student pastes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(3, 2.5), dpi=60)
    ax.imshow(np.array([[0.5, 0.2, 0.3], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]]), cmap="Blues")
    ax.set_title("heat map")
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grader", default=str(HERE.parents[2] / ".venv/bin/grader"))
    args = ap.parse_args()
    sk = skeleton(args.grader)
    out = HERE / "notebooks"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    base = filled(sk)

    # 1. a correct run: plot written, the notebook run top to bottom and saved with its outputs
    nb = copy.deepcopy(base)
    plot_cell(nb).source = STUDENT_PLOT
    nb = execute(nb)
    nbformat.write(nb, out / "correct_run.ipynb")

    # 2. never run: the same code, no outputs at all
    nb = copy.deepcopy(base)
    plot_cell(nb).source = STUDENT_PLOT
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    nbformat.write(nb, out / "never_run.ipynb")

    # 3. a pasted image: the plot cell turned into a markdown cell holding a pasted PNG (Jupyter attachment)
    nb = execute(copy.deepcopy(base))
    i = nb.cells.index(plot_cell(nb))
    md = nbformat.v4.new_markdown_cell("Here is my heat map:\n\n![heatmap.png](attachment:heatmap.png)")
    md.metadata["tags"] = ["answer"]
    md["attachments"] = {"heatmap.png": {"image/png": base64.b64encode(pasted_png()).decode()}}
    nb.cells[i] = md
    nbformat.write(nb, out / "pasted_image.ipynb")

    # 4. restructured: the question's cells deleted; at the end, under a heading of the student's own, the plot (run)
    nb = copy.deepcopy(base)
    pc = plot_cell(nb)
    j = nb.cells.index(pc)
    del nb.cells[j - 1 : j + 1]  # the question's markdown and the tagged answer cell
    nb.cells.append(nbformat.v4.new_markdown_cell("# My extra: what the weights look like"))
    nb.cells.append(nbformat.v4.new_code_cell(STUDENT_PLOT))
    nb = execute(nb)
    nbformat.write(nb, out / "restructured.ipynb")

    # 5. the plot cell left as the skeleton's blank; every other step answered, run
    nb = copy.deepcopy(base)
    nb_run = copy.deepcopy(nb)
    plot_cell(nb_run).source = "import matplotlib.pyplot as plt\n"
    nb_run = execute(nb_run)
    plot_cell(nb_run).source = plot_cell(sk).source  # the blank, as handed out (it cannot run)
    plot_cell(nb_run).outputs = []
    nbformat.write(nb_run, out / "blank_plot.ipynb")

    for p in out.glob("*.ipynb"):
        d = json.loads(p.read_text())
        for c in d["cells"]:
            c.pop("id", None)
        d["nbformat_minor"] = 4
        p.write_text(json.dumps(d, indent=1) + "\n")

    truth = {
        "assignment": "attention_heatmap",
        "question": "heatmap",
        "autograded_score": 11,
        "reference": {
            "figure": True,
            "markers_anywhere": False,
            "why": "issue 41: 'the reference figure comes from the solution's run; no solution markers anywhere'",
        },
        "cases": {
            "correct_run": {
                "run_figure": True,
                "check": "answered",
                "saved_images": 1,
                "why": "the plot cell draws; the grader's run of it gives a figure (the saved one may be shown too)",
            },
            "never_run": {
                "run_figure": True,
                "check": "answered",
                "saved_images": 0,
                "why": "the notebook has no output at all, but its code draws: the TA must see the figure from the grader's run",
            },
            "pasted_image": {
                "run_figure": False,
                "check": None,
                "saved_images": 0,
                "attachment": True,
                "why": "no code draws: the grader's run gives no figure; the pasted PNG is an attachment, shown as such, never as the run's figure",
            },
            "restructured": {
                "run_figure": True,
                "check": None,
                "saved_images": 1,
                "why": "the cell drawing the heat map is the student's own, at the end under their heading: the whole notebook is shown and its run draws the figure",
            },
            "blank_plot": {
                "run_figure": False,
                "check": "not answered",
                "saved_images": 0,
                "why": "issue 41: '`grader check` says \"not answered\" while the cell is a blank'",
            },
        },
    }
    (HERE / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print("5 notebooks,", sum(p.stat().st_size for p in out.glob("*")), "bytes")


if __name__ == "__main__":
    main()
