#!/usr/bin/env python3
"""Development check: execute generated notebooks and compare their graded values with the
solution's (students whose picks include a 'wrong' way are expected to differ).

    .venv/bin/python check_exec.py classes/attention_numpy-48 [--course the repository]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import types
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402

plt.show = lambda *a, **k: None

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# scipy and seaborn are not installed here: stand-ins good enough for the students' calls
sp = types.ModuleType("scipy")
sps = types.ModuleType("scipy.special")


def _softmax(x, axis=None):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


sps.softmax = _softmax
sp.special = sps
sys.modules.setdefault("scipy", sp)
sys.modules.setdefault("scipy.special", sps)

GRADED = {
    "attention_numpy": ["Q", "K", "V", "scores", "scaled_scores", "attention_weights", "output"],
    "attention_from_scratch": [
        "attn_scores_2",
        "nor_attn_2",
        "context_vec_2",
        "attn_scores",
        "nor_attn",
        "context_vector",
        "query_2",
        "key_2",
        "value_2",
        "keys",
        "values",
        "attn_weights_2",
        "context_vector_2",
        "queries",
        "scores",
        "mask",
        "masked_scores",
        "causal_weights",
        "causal_context",
        "dropped_weights",
        "context_vecs",
        "context_vecs_mha",
        "_model_out",
        "_ca_eval",
        "_mha3",
    ],
    "attention_french": [
        "W_Q",
        "Q",
        "K",
        "V",
        "attention_scores",
        "attention_weights",
        "output",
        "all_attention_weights",
        "all_outputs",
        "_sa",
        "heads",
        "multihead_output",
    ],
}
EXTRA = {
    "attention_from_scratch": (
        "import torch as _t\n_t.manual_seed(123)\n_model_out = SelfAttention_v1(3, 2)(inputs)\n"
        "_t.manual_seed(7)\n_ca_eval = CausalAttention(4, 3, 8, 0.0)(_t.rand(3, 5, 4))\n"
        "_t.manual_seed(7)\n_mha3 = MultiHeadAttentionWrapper(4, 3, 8, 0.0, num_heads=3)(_t.rand(2, 5, 4))\n"
        "_t.manual_seed(123)\n_ca_drop = CausalAttention(3, 2, 6, 0.5)(batch)\n"
    ),
    "attention_french": "_sa = self_attention(torch.eye(3), W_Q2, W_K2, W_V2)\n",
}


def run(path: Path, cwd: Path):
    nb = nbformat.read(str(path), as_version=4)
    ns = {"__name__": "__main__"}
    old = os.getcwd()
    os.chdir(cwd)
    try:
        for c in nb.cells:
            if c.cell_type != "code" or "instructor" in c.metadata.get("tags", []):
                continue
            src = "\n".join(l for l in c.source.split("\n") if not l.lstrip().startswith(("%", "!")))
            try:
                exec(compile(src, str(path), "exec"), ns)
            except Exception:
                if os.environ.get("VERBOSE"):
                    print("---- failing cell of", path.name, "\n" + src)
                raise
        name = nb_assignment(nb)
        if name in EXTRA:
            exec(EXTRA[name], ns)
    finally:
        os.chdir(old)
        plt.close("all")
    return ns


def nb_assignment(nb):
    t = nb.cells[0].source
    if "NumPy" in t:
        return "attention_numpy"
    if "journey" in t or "Coding the attention" in t:
        return "attention_from_scratch"
    return "attention_french"


def same(a, b):
    try:
        import torch

        if isinstance(a, torch.Tensor):
            a = a.detach().numpy()
        if isinstance(b, torch.Tensor):
            b = b.detach().numpy()
    except ImportError:
        pass
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    try:
        a = np.asarray(a, dtype=float)
        b = np.asarray(b, dtype=float)
        return a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True)
    except Exception:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--course", default=str(Path(__file__).resolve().parents[3]))
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    folder = Path(args.folder)
    truth = json.loads((folder / "truth.json").read_text())
    name = truth["assignment"]
    course = Path(args.course)
    cwd = course / "assignments" / name
    ref = run(course / "solutions" / name / f"{name}.ipynb", cwd)
    bad = 0
    files = sorted(folder.glob("s*.ipynb"))
    if args.limit:
        files = files[: args.limit]
    for p in files:
        try:
            with (
                contextlib.redirect_stdout(io.StringIO()) if not os.environ.get("VERBOSE") else contextlib.nullcontext()
            ):
                ns = run(p, cwd)
        except Exception as e:  # noqa: BLE001
            print(f"{p.name}: ERROR {type(e).__name__}: {e}")
            bad += 1
            continue
        diffs = [v for v in GRADED[name] if v in ref and not same(ns.get(v), ref[v])]
        if diffs:
            print(f"{p.name}: differs on {', '.join(diffs)}")
    print(f"{len(files)} notebooks run, {bad} errors")


if __name__ == "__main__":
    main()
