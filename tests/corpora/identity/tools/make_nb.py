"""Build a student notebook from the attention_numpy solution with chosen answers broken.

Breaks (each replaces one answer's right-hand side with a wrong value):
  Q, K, V, scores   -> 1 point each
  scaled, weights, output -> 2 points each
The score of a notebook with breaks B is expected to be 11 - sum(points of B)
(downstream steps keep their points through error-carried-forward); the real score of
each notebook is measured individually and recorded in truth.json.
"""

import json
import sys
from pathlib import Path

SOLUTION = Path(__file__).resolve().parents[4] / "solutions/attention_numpy/attention_numpy.ipynb"

REPLACE = {
    "Q": ("Q = X @ W_q.T  # SOLUTION", "Q = X @ W_q.T + 1.0"),
    "K": ("K = X @ W_k.T  # SOLUTION", "K = X @ W_k.T + 1.0"),
    "V": ("V = X @ W_v.T  # SOLUTION", "V = X @ W_v.T + 1.0"),
    "scores": ("scores = Q @ K.T  # SOLUTION", "scores = Q @ K.T + 1.0"),
    "scaled": ("scaled_scores = scores / np.sqrt(d_k)  # SOLUTION", "scaled_scores = scores + 1.0"),
    "weights": (
        "attention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores)  # SOLUTION",
        "attention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores) * 0.5",
    ),
    "output": ("output = attention_weights @ V  # SOLUTION", "output = attention_weights @ V + 1.0"),
}


def build(breaks, tag=""):
    nb = json.loads(SOLUTION.read_text())
    done = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        src = "".join(cell["source"])
        for b in breaks:
            old, new = REPLACE[b]
            if old in src:
                src = src.replace(old, new)
                done.add(b)
        src = src.replace("  # SOLUTION", "")
        src = src.replace("    # BEGIN SOLUTION\n", "").replace("    # END SOLUTION\n", "")
        cell["source"] = src
        cell["outputs"] = []
        cell["execution_count"] = None
    assert done == set(breaks), (breaks, done)
    if tag:  # a harmless comment so that two notebooks with one score differ in bytes
        nb["cells"].insert(1, {"cell_type": "markdown", "metadata": {}, "source": f"Submitted by {tag}."})
    return nb


if __name__ == "__main__":
    out = Path(sys.argv[1])
    breaks = [b for b in sys.argv[2].split(",") if b]
    tag = sys.argv[3] if len(sys.argv) > 3 else ""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(build(breaks, tag), indent=1))
