#!/usr/bin/env python3
"""A stand-in for `grader assign --per-student`, to check scenarios.py and the truth without the product:
writes one notebook per roster id from the generic skeleton, X/W_q/W_k drawn from a seed of the id, the id
in metadata (grader.student) with a dummy signature. Not a model of the product's format.

usage: fake_assign.py SKELETON OUT_DIR
"""

import csv
import hashlib
import sys
from pathlib import Path

import nbformat
import numpy as np

HERE = Path(__file__).resolve().parent
sk, out = Path(sys.argv[1]), Path(sys.argv[2])
for r in csv.DictReader(open(HERE / "roster.csv")):
    sid = r["submission"]
    rng = np.random.default_rng(int(hashlib.sha256(sid.encode()).hexdigest()[:8], 16))
    nb = nbformat.read(sk, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code" and c.source.startswith("tokens ="):
            c.source = "tokens = ['I', 'am', 'Batman']\nX = np.array(%r)" % rng.uniform(-1, 1, (3, 2)).round(3).tolist()
        if c.cell_type == "code" and c.source.startswith("W_q ="):
            c.source = "W_q = np.array(%r)\nW_k = np.array(%r)\nW_v = np.array([[1.0, 0.5], [0.5, 1.0]])" % (
                rng.uniform(-1, 1, (2, 2)).round(3).tolist(),
                rng.uniform(-1, 1, (2, 2)).round(3).tolist(),
            )
    nb.metadata["grader"] = {"student": sid, "signature": hashlib.sha256(b"k" + sid.encode()).hexdigest()}
    (out / sid).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out / sid / "attention_numpy.ipynb")
