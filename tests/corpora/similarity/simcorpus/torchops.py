"""Matrix products and transposes the PyTorch way (shared by the PyTorch assignments)."""

from __future__ import annotations

from .core import P

OPS = {"@": 64, "matmul": 26, "mm": 5, "einsum": 5}
OP_SWAP = ["@", "matmul"]
TR2 = {".T": 70, ".t()": 10, ".transpose(0, 1)": 12, "torch.transpose": 4, ".mT": 4}
TR3 = {".transpose(1, 2)": 70, ".transpose(-2, -1)": 20, ".mT": 10}

EINSUM = {
    ("mm", False): "ij,jk->ik",
    ("mm", True): "ij,kj->ik",
    ("mv", False): "ij,j->i",
    ("vm", False): "i,ij->j",
    ("vm", True): "j,kj->k",
    ("vv", False): "i,i->",
    ("bmm", False): "bij,bjk->bik",
    ("bmm", True): "bij,bkj->bik",
}


def render_mm(ctx, a, b, site, kind, bt):
    op = ctx.op_at(site)
    if op == "einsum":
        return f"torch.einsum('{EINSUM[(kind, bt)]}', {a}, {b})"
    if bt:
        b = ctx.tr(b, site, dims=3 if kind == "bmm" else 2)
    if op == "@":
        return f"{P(a)} @ {P(b)}"
    if op == "mm":
        fn = {"mm": "torch.mm", "mv": "torch.mv", "vv": "torch.dot", "bmm": "torch.bmm"}.get(kind, "torch.matmul")
        return f"{fn}({a}, {b})"
    return f"torch.matmul({a}, {b})"


def render_tr(ctx, a, t, site):
    if t == ".T":
        return f"{P(a)}.T"
    if t == ".t()":
        return f"{P(a)}.t()"
    if t == ".mT":
        return f"{P(a)}.mT"
    if t == "torch.transpose":
        return ctx.call("torch.transpose", [a], [("dim0", "0", True), ("dim1", "1", True)], site + ".trkw")
    d0, d1 = {".transpose(0, 1)": ("0", "1"), ".transpose(1, 2)": ("1", "2"), ".transpose(-2, -1)": ("-2", "-1")}[t]
    return ctx.call(f"{P(a)}.transpose", [], [("dim0", d0, True), ("dim1", d1, True)], site + ".trkw")
