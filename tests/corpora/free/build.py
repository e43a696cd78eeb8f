"""Write notebooks/<assignment>/<case>.ipynb and truth/<assignment>/<case>.json from cases_*.py.

    /work/main/.venv/bin/python build.py [--main /work/main]

Notebooks marked run=True get the outputs of a real run (plain Python, harness.py), with execution counts;
the others are saved as never run (no outputs, no execution counts)."""

import argparse
import base64
import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cases_french
import cases_numpy  # noqa: E402,E401
import cases_scratch
import cases_similarity
import cases_tokens
import harness  # noqa: E402
from roots import HINTS, ROOTS  # noqa: E402

MODULES = [cases_numpy, cases_french, cases_scratch, cases_similarity, cases_tokens]


def png_bytes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2), dpi=40)
    ax.imshow([[0.2, 0.8], [0.6, 0.4]], cmap="Blues")
    ax.set_axis_off()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def solution_value(main, assignment, name):
    nb = json.load(open(os.path.join(main, "solutions", assignment, assignment + ".ipynb")))
    srcs = [s.replace("# SOLUTION", "") for s in harness.cell_sources(nb)]
    ns, _, _ = harness.run(srcs, assignment, main)
    return ns[name]


def make_nb(case, main):
    cells = []
    run_results = None
    code = [c for c in case["cells"] if not c.startswith("md:")]
    if case.get("run"):
        _, run_results, _ = harness.run(code, case["assignment"], main)
    k = 0
    count = 0
    for i, c in enumerate(case["cells"]):
        cid = f"c{i:02d}"
        if c.startswith("md:"):
            cell = {"cell_type": "markdown", "id": cid, "metadata": {}, "source": c[3:]}
            if case.get("attach") and "attachment:" in c:
                cell["attachments"] = {"attention.png": {"image/png": base64.b64encode(png_bytes()).decode()}}
            cells.append(cell)
            continue
        cell = {"cell_type": "code", "id": cid, "metadata": {}, "execution_count": None, "outputs": [], "source": c}
        if run_results is not None:
            out, err = run_results[k]
            count += 1
            cell["execution_count"] = count
            if out:
                cell["outputs"].append({"output_type": "stream", "name": "stdout", "text": out})
            if err:
                ename, _, evalue = err.partition(": ")
                cell["outputs"].append({"output_type": "error", "ename": ename, "evalue": evalue, "traceback": [err]})
        k += 1
        cells.append(cell)
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def all_cases():
    out = []
    for m in MODULES:
        out.extend(m.CASES)
    return out


def main():
    names = [c["name"] for c in all_cases()]
    assert len(names) == len(set(names))
    for table in (ROOTS, HINTS):
        assert set(table) <= set(names), set(table) - set(names)
    ap = argparse.ArgumentParser()
    ap.add_argument("--main", default="/work/main")
    a = ap.parse_args()
    typed = str(solution_value(a.main, "tokens_to_multihead", "bank_most_attended"))
    cfg = harness.load_config(a.main)
    for case in all_cases():
        case["cells"] = [c.replace("{TYPED}", typed) for c in case["cells"]]
        asg = case["assignment"]
        qids = [q["id"] for q in cfg["assignments"][asg]["questions"]]
        assert set(case["truth"]) == set(qids), (case["name"], set(qids) ^ set(case["truth"]))
        nb = make_nb(case, a.main)
        d = os.path.join(HERE, "notebooks", asg)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, case["name"] + ".ipynb"), "w") as f:
            json.dump(nb, f, indent=1, ensure_ascii=False)
        td = os.path.join(HERE, "truth", asg)
        os.makedirs(td, exist_ok=True)
        truth = {q: {"points": case["truth"][q][0], "reason": case["truth"][q][1]} for q in qids}
        for q, root in ROOTS.get(case["name"], {}).items():
            truth[q]["root"] = root
        for q, words in HINTS.get(case["name"], {}).items():
            truth[q]["hint"] = words
        with open(os.path.join(td, case["name"] + ".json"), "w") as f:
            json.dump(
                {
                    "notebook": f"notebooks/{asg}/{case['name']}.ipynb",
                    "assignment": asg,
                    "ran": bool(case.get("run")),
                    "questions": truth,
                },
                f,
                indent=1,
            )
        print(asg, case["name"], "run" if case.get("run") else "never run")


if __name__ == "__main__":
    main()
