"""Run notebook cells in plain Python (no grader code), optionally with the given inputs replaced by
values of my own (a "variant"), and evaluate the config's checks in the resulting namespace.

Used by build.py (to save real outputs into the notebooks that were "run") and by check.py (to confirm
what each notebook computes against the solution, on its own data and on unseen data)."""

import ast
import contextlib
import io
import os
import re
import shutil
import tempfile
import traceback

import numpy as np
import yaml

os.environ.setdefault("MPLBACKEND", "Agg")

HERE = os.path.dirname(os.path.abspath(__file__))


def load_config(main):
    with open(os.path.join(main, "config.yaml")) as f:
        return yaml.safe_load(f)


def bound_names(node):
    out = []

    def targ(t):
        if isinstance(t, ast.Name):
            out.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targ(e)
        elif isinstance(t, ast.Starred):
            targ(t.value)

    if isinstance(node, ast.Assign):
        for t in node.targets:
            targ(t)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targ(node.target)
    elif isinstance(node, (ast.For,)):
        targ(node.target)
    elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        out.append(node.name)
    return out


def read_names(node):
    val = getattr(node, "value", None)
    if val is None:
        return set()
    return {n.id for n in ast.walk(val) if isinstance(n, ast.Name)}


def make_variant(assignment, name, value, k):
    """Deterministic unseen values for a given input (same for the student and the solution)."""
    import torch

    rng = np.random.default_rng(1000 * k + sum(map(ord, assignment + name)))
    if assignment == "attention_numpy":
        shapes = {"X": (5, 2), "W_q": (3, 2), "W_k": (3, 2), "W_v": (2, 2)}
        return rng.uniform(-1, 1, shapes[name])
    if assignment == "tokens_to_multihead":
        return torch.tensor(rng.uniform(-1, 1, (1, 5, 8))[:, [0, 1, 2, 0, 4]], dtype=torch.float32)
    if assignment == "attention_similarity":
        if name == "loaded_word_vectors":
            return {w: rng.normal(0, 1, 50) for w in value}
        return torch.tensor(rng.uniform(0, 1, tuple(value.shape)), dtype=value.dtype)
    if assignment == "attention_french":
        if name in ("W_Q", "W_K", "W_V"):
            return torch.tensor(rng.integers(-2, 3, tuple(value.shape)))
        return torch.tensor(rng.uniform(-1, 1, tuple(value.shape)), dtype=torch.float32)
    if assignment == "attention_from_scratch":
        t = torch.tensor(rng.uniform(0, 1, tuple(value.shape)), dtype=torch.float32)
        if name != "inputs":
            return torch.nn.Parameter(t, requires_grad=False)
        return t
    raise KeyError(assignment)


def cell_sources(nb):
    out = []
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        tags = c.get("metadata", {}).get("tags", [])
        if "skip-grading" in tags:
            continue
        src = c["source"] if isinstance(c["source"], str) else "".join(c["source"])
        out.append(src)
    return out


def run(sources, assignment, main, variant=0, before=None, capture=True):
    """Execute code cells; return (namespace, per-cell (stdout, error), snapshots for `before` names).

    before: {target: before_name}: the target's value is copied just before the first statement binding
    before_name."""
    import copy

    import torch  # noqa: F401

    cfg = load_config(main)
    given = set(cfg["assignments"][assignment].get("given", []))
    before = before or {}
    snaps = {}
    seen_before = set()
    work = tempfile.mkdtemp(prefix="freecorp-")
    ddir = os.path.join(main, "assignments", assignment, "data")
    if os.path.isdir(ddir):
        shutil.copytree(ddir, os.path.join(work, "data"))
    old = os.getcwd()
    os.chdir(work)
    ns = {"__name__": "__main__"}
    results = []
    try:
        for src in sources:
            buf = io.StringIO()
            err = None
            src = "\n".join(
                (ln[: len(ln) - len(ln.lstrip())] + "pass")
                if ln.lstrip()[:1] in ("%", "!") or re.match(r"^\s*[\w.]+\?{1,2}\s*$", ln)
                else ln
                for ln in src.splitlines()
            )  # IPython magics, shell lines, obj? help: not run here
            try:
                tree = ast.parse(src)
            except SyntaxError as e:
                results.append(("", f"SyntaxError: {e}"))
                continue
            try:
                with contextlib.redirect_stdout(buf) if capture else contextlib.nullcontext():
                    for node in tree.body:
                        names = bound_names(node)
                        for tgt, bname in before.items():
                            if bname in names and bname not in seen_before:
                                if tgt in ns:
                                    try:
                                        snaps[tgt] = copy.deepcopy(ns[tgt])
                                    except Exception:
                                        snaps[tgt] = ns[tgt]
                        for bname in names:
                            if bname in before.values():
                                seen_before.add(bname)
                        mod = ast.Module(body=[node], type_ignores=[])
                        exec(compile(mod, "<cell>", "exec"), ns)
                        if variant:
                            reads = read_names(node)
                            for nm in names:
                                if nm in given and nm not in reads and nm in ns:
                                    ns[nm] = make_variant(assignment, nm, ns[nm], variant)
            except Exception as e:  # a cell that raises: record, go on (as Jupyter "run all" would not, but graders do)
                err = "".join(traceback.format_exception_only(type(e), e)).strip()
            results.append((buf.getvalue(), err))
    finally:
        os.chdir(old)
        shutil.rmtree(work, ignore_errors=True)
        try:
            import matplotlib.pyplot as plt

            plt.close("all")
        except Exception:
            pass
    for tgt in before:
        if tgt not in snaps and tgt in ns:
            snaps[tgt] = ns[tgt]
    return ns, results, snaps


def checks_of(cfg, assignment):
    """[(question id, check index, kind, target, points, seed, before)]"""
    out = []
    for q in cfg["assignments"][assignment]["questions"]:
        chks = q.get("checks", [])
        explicit = sum(c.get("points", 0) for c in chks if "points" in c)
        rest = [c for c in chks if "points" not in c]
        # checks without their own points share the rest of the question's points all or nothing
        # (config.md: `points` on a check is "optional: split a question's points across checks");
        # marked here by a negative share: -(points of the whole group)
        group = -(q["points"] - explicit) if rest else 0
        for i, c in enumerate(chks):
            kind = "value" if "value" in c else "expr"
            out.append((q["id"], i, kind, c.get(kind), c.get("points", group), c.get("seed"), c.get("before")))
    return out


def evaluate(ns, snaps, kind, target, seed, before):
    import torch

    if kind == "value":
        if before and target in snaps:
            return snaps[target]
        if target not in ns:
            raise NameError(target)
        return ns[target]
    if seed is not None:
        torch.manual_seed(seed)
    env = dict(ns)
    env.setdefault("np", np)
    env.setdefault("torch", torch)
    return eval(target, env)


def to_plain(v):
    import torch

    try:
        import pandas as pd
    except ImportError:
        pd = None
    if isinstance(v, torch.Tensor):
        return v.detach().cpu().double().numpy() if v.dtype.is_floating_point else v.detach().cpu().numpy()
    if pd is not None and isinstance(v, (pd.DataFrame, pd.Series)):
        return v.values
    if isinstance(v, (list, tuple)):
        if all(isinstance(x, str) for x in v):
            return list(v)
        if any(isinstance(x, list) and x and isinstance(x[0], str) for x in v):
            return [to_plain(x) for x in v]
        try:
            return np.array([to_plain(x) for x in v], dtype=float)
        except Exception:
            return [to_plain(x) for x in v]
    return v


def same(a, b, rtol=1e-5, atol=1e-6):
    a, b = to_plain(a), to_plain(b)
    if isinstance(a, str) or isinstance(b, str) or isinstance(a, list) or isinstance(b, list):
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        try:
            return bool(np.all(np.asarray(a, dtype=object) == np.asarray(b, dtype=object))) and np.shape(a) == np.shape(
                b
            )
        except Exception:
            return False
    try:
        a = np.asarray(a, dtype=float)
        b = np.asarray(b, dtype=float)
    except Exception:
        return bool(a == b)
    if a.shape != b.shape:
        return False
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
