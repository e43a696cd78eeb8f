#!/usr/bin/env python3
"""Make the class's submissions from the notebooks the product wrote for each student.

usage: scenarios.py PER_STUDENT_DIR GENERIC_SKELETON FRENCH_NOTEBOOK OUT_DIR

PER_STUDENT_DIR is what `grader assign attention_numpy --per-student roster.csv --out DIR` wrote. Each
roster id's notebook is found as the .ipynb under it whose metadata holds the id (or, failing that,
whose path names it). A notebook is completed by replacing each blank cell of the skeleton (`Q = ?` ...)
with the answer a student writes (the code of the product's example bob_correct, which computes from the
notebook's own data); the given cells, holding that student's data, are left as the product wrote them.
Writes OUT_DIR/<folder>/attention_numpy.ipynb per truth.csv's scenario.
"""

import copy
import csv
import json
import re
import sys
from pathlib import Path

import nbformat
import numpy as np

HERE = Path(__file__).resolve().parent
ANSWERS = {
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
BLANK = re.compile(r"(^|[\s=(\[,])\?($|[\s)\],])", re.M)


def find_notebooks(root, ids):
    found = {}
    for p in sorted(Path(root).rglob("*.ipynb")):
        try:
            meta = json.dumps(json.loads(p.read_text()).get("metadata", {}))
        except (ValueError, OSError):
            continue
        for sid in ids:
            if re.search(r'"%s"' % re.escape(sid), meta) and sid not in found:
                found[sid] = p
    for p in sorted(Path(root).rglob("*.ipynb")):
        for sid in ids:
            if sid not in found and re.search(r"(^|[/_.-])%s([/_.-]|$)" % re.escape(sid), str(p.relative_to(root))):
                found[sid] = p
    return found


def complete(nb, mistake=None):
    nb = copy.deepcopy(nb)
    left = []
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        src = c.source.strip()
        if src in ANSWERS:
            c.source = ANSWERS[src]
            if mistake == "no_sqrt" and "scaled_scores" in src:
                c.source = "d_k = Q.shape[1]\nscaled_scores = scores"
        elif BLANK.search(src) and not src.startswith(("!", "%")):
            left.append(src[:60])
    if left:
        raise SystemExit(f"scenarios.py: blank cells it cannot fill: {left}")
    return nb


def run_values(nb):
    import contextlib
    import io

    ns = {}
    with contextlib.redirect_stdout(io.StringIO()):
        _exec_all(nb, ns)
    return ns


def _exec_all(nb, ns):
    for c in nb.cells:
        if c.cell_type == "code" and not c.source.lstrip().startswith(("!", "%", "pip")):
            try:
                exec(c.source, ns)
            except Exception:
                pass


def main():
    per_dir, generic, french, out = map(Path, sys.argv[1:5])
    rows = list(csv.DictReader(open(HERE / "truth.csv")))
    ids = [r["folder"] for r in rows if r["on_roster"] == "yes"]
    nbs = find_notebooks(per_dir, ids)
    missing = [i for i in ids if i not in nbs]
    if missing:
        raise SystemExit(f"scenarios.py: no notebook found for {missing[:5]} ... under {per_dir}")
    own = {sid: nbformat.read(nbs[sid], as_version=4) for sid in ids}
    done = {sid: complete(nb) for sid, nb in own.items()}
    for r in rows:
        f, scen = r["folder"], r["scenario"]
        if scen == "no_submission":
            continue
        if scen == "correct":
            nb = done[f]
        elif scen == "one_mistake":
            nb = complete(own[f], mistake="no_sqrt")
        elif scen == "classmate_notebook":
            nb = done[r["flag"].split(":")[1]]
        elif scen == "edited_id":
            other = r["flag"].split(":")[1]
            nb = copy.deepcopy(done[f])
            meta = json.dumps(nb.metadata)
            if f'"{f}"' not in meta:
                raise SystemExit(f"scenarios.py: {f}'s id not found in its notebook's metadata")
            nb.metadata = nbformat.from_dict(json.loads(meta.replace(f'"{f}"', f'"{other}"')))
        elif scen == "generic_skeleton":
            nb = complete(nbformat.read(generic, as_version=4))
        elif scen == "pasted_answer":
            src = "s03"
            vals = run_values(done[src])["output"]
            nb = copy.deepcopy(done[f])
            for c in nb.cells:
                if c.cell_type == "code" and c.source.strip() == ANSWERS["output = ?"]:
                    c.source = (
                        "output = np.array("
                        + np.array2string(np.asarray(vals), separator=", ", precision=8, floatmode="fixed").replace(
                            "\n", ""
                        )
                        + ")"
                    )
        elif scen == "another_assignment":
            nb = nbformat.read(french, as_version=4)
        elif scen == "not_on_roster":
            nb = done["s05"]
        else:
            raise SystemExit(f"unknown scenario {scen}")
        d = out / f
        d.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, d / "attention_numpy.ipynb")
    print(f"scenarios.py: {sum(1 for _ in out.glob('*/*.ipynb'))} submissions written to {out}")


if __name__ == "__main__":
    main()
