"""Builds the example submissions of attention_numpy from its skeleton (run: python examples/build.py).

Each example is what a real student might hand in: a correct one in torch, typical mistakes,
one that raises, one left blank, and a file that is not a notebook at all.
"""

from pathlib import Path

from grader.testing import fill, write

HERE = Path(__file__).parent / "attention_numpy"
SKELETON = Path(__file__).parent.parent / "assignments/attention_numpy/attention_numpy.ipynb"

CORRECT = {
    "Q": "X @ W_q.T",
    "K": "X @ W_k.T",
    "V": "X @ W_v.T",
    "scores": "Q @ K.T",
    "scaled_scores": "scores / np.sqrt(d_k)",
    "?1": "e_x = np.exp(x - np.max(x))\nreturn e_x / np.sum(e_x, axis=-1, keepdims=True)",
    "attention_weights": "np.apply_along_axis(softmax, axis=1, arr=scaled_scores)",
    "output": "attention_weights @ V",
}

EXAMPLES = {
    # torch instead of numpy, float32, torch.softmax: equivalent, full marks
    "alice_torch": {
        **CORRECT,
        "Q": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_q, dtype=torch.float32).T",
        "K": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_k, dtype=torch.float32).T",
        "V": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_v, dtype=torch.float32).T",
        "scaled_scores": "scores / d_k ** 0.5",
        "?1": "return torch.softmax(torch.as_tensor(x), dim=-1).numpy()",
        "attention_weights": "torch.softmax(scaled_scores, dim=-1)",
    },
    "bob_correct": CORRECT,
    "carol_no_sqrt": {**CORRECT, "scaled_scores": "scores"},
    "dave_wrong_axis": {**CORRECT, "attention_weights": "np.apply_along_axis(softmax, axis=0, arr=scaled_scores)"},
    "erin_untransposed": {**CORRECT, "Q": "X @ W_q", "K": "X @ W_k"},
    "frank_raises": {**CORRECT, "scores": "Q @ K"},  # (3,2) @ (3,2): shapes do not align
    "grace_half_done": {k: v for k, v in CORRECT.items() if k in ("Q", "K", "V", "scores")},
}


def main() -> None:
    for name, answers in EXAMPLES.items():
        nb = fill(SKELETON, answers)
        if name == "alice_torch":
            first = next(c for c in nb.cells if c.cell_type == "code")
            first.source += "\nimport torch"
        write(nb, HERE / f"{name}.ipynb")
    (HERE / "henry_not_a_notebook.ipynb").write_text("I could not get Jupyter to work, sorry!\n", encoding="utf-8")
    print(f"wrote {len(EXAMPLES) + 1} examples to {HERE}")


if __name__ == "__main__":
    main()
