"""attention_french (PyTorch): "Le chat noir mange la souris blanche"."""

from __future__ import annotations

from .core import P
from .torchops import OP_SWAP, OPS, TR2, TR3, render_mm, render_tr  # noqa: F401

NAME = "attention_french"
LIB = "torch"

NAMES = {
    "Wl": ["W", "w", "M", "weight", "Wm"],
    "i": ["i", "idx", "k_i", "ii", "row_i"],
    "kr": ["k", "key", "k_row", "kv"],
    "ql": ["Q", "q", "queries", "Qx", "q_mat"],
    "kl": ["K", "k_", "keys", "Kx", "k_mat"],
    "vl": ["V", "v", "values", "Vx", "v_mat"],
    "sl": ["scores", "s", "att_scores", "logits", "raw"],
    "wl": ["weights", "w_", "attn", "alpha", "att_w"],
    "ol": ["outs", "out_list", "rows", "res", "collected"],
    "qr": ["q_i", "qrow", "qq", "query"],
    "sa_all": ["all_scores", "scores_all", "S", "full_scores", "score_matrix"],
    "p": ["p", "params", "wts", "triple", "hp"],
    "wq": ["W_q", "wq", "Wq", "q_w"],
    "wk": ["W_k", "wk", "Wk", "k_w"],
    "wv": ["W_v", "wv", "Wv", "v_w"],
    "cat": ["concat", "concatenated", "H", "stacked", "joined"],
    "ssm": ["scaled_softmax", "attn_softmax", "softmax_scaled", "normalize"],
    "ssm_s": ["s_in", "sc", "x_s", "z"],
    "ssm_d": ["dk", "d", "dim", "d_key"],
    "fig": ["fig", "f", "figure"],
    "ax": ["ax", "axes", "a_x"],
    "tok": ["tok", "t", "word", "w_tok"],
    "row": ["row", "r", "wrow", "att_row"],
    "xr": ["x_rand", "X_test", "rand_x", "xt"],
}

TOPICS = {
    "generic": ["compute it", "same as before", "matrix form", "shapes line up"],
    "float": ["make the weights float32", "cast to float", "same dtype as the embeddings", "int -> float"],
    "proj": ["project the embeddings", "(7x3) @ (3x2) -> (7x2)", "no transpose needed", "queries keys values"],
    "scores": ["query of Le against every key", "dot products with all keys", "scores for the first word"],
    "softmax": ["scale by sqrt(d_k) and softmax", "normalise the scores", "weights sum to 1"],
    "output": ["weighted sum of the values", "1x7 @ 7x2", "make it a row vector first"],
    "all": ["every word at once", "whole matrix", "softmax along each row"],
    "sa": ["the same steps as above", "scaled dot-product attention", "works for any input"],
    "heads": ["one output per head", "run every head", "loop over the head parameters"],
    "mh": ["concat then project with W_O", "concatenate feature-wise", "(7x4) @ (4x3)"],
    "check": ["sanity check", "rows should sum to 1", "check shapes", "compare with above"],
    "plot": ["visualise", "heatmap of the weights", "plot it"],
    "explore": ["experiment", "just curious", "extra"],
}

MD = {
    "float": [
        "The weights were int64 and matmul needs the same dtype on both sides.",
        "The transpose was the other bug: W_Q is already 3x2.",
    ],
    "softmax": [
        "Dividing by sqrt(d_k) keeps the scores small.",
        "Le and la get the same weights because their embeddings are equal.",
    ],
    "heads": [
        "Each head looks at the sentence differently.",
        "Concatenating gives 4 features and W_O maps them back to 3.",
    ],
}

FILL_CELLS = [8, 11, 13, 15, 17, 19, 23, 25]
IMPORT_CELL = 1
ALGO_PAIR = ({"sa": "loop"}, {"sa": "sol"}, "self_attention: a loop over the query rows vs the matrix form")


def _ssm(ctx, s, dk="d_k", site="sm"):
    if ctx.helper("ssm.helper", 0.08):
        return f"{ctx.n('g:ssm')}({s}, {dk})"
    return _ssm_inline(ctx, s, dk, site)


def _ssm_inline(ctx, s, dk, site="sm"):
    sc = ctx.pick("scale.form", {"pow": 60, "math": 12, "tsqrt": 10})
    den = {"pow": f"{dk} ** 0.5", "math": f"math.sqrt({dk})", "tsqrt": f"torch.sqrt(torch.tensor({dk}))"}[sc]
    fn = ctx.pick("softmax.fn", {"torch.softmax": 50, "F.softmax": 15, "nn.functional": 25, "method": 10})
    dim = ctx.pick("softmax.dim", {"-1": 80, "pos": 20})
    if ctx.picks.get("ssm.helper"):  # the source wrote a helper: its body (dim=-1) is what gets inlined
        dim = "-1"
    if dim == "pos":
        dim = {"vec": "0", "sm": "1", "any": "-1"}[site]
    arg = f"{P(s)} / {den}"
    if fn == "method":
        return ctx.call(f"{P(arg)}.softmax", [], [("dim", dim, True)], "sm.kw")
    name = {"torch.softmax": "torch.softmax", "F.softmax": "F.softmax", "nn.functional": "torch.nn.functional.softmax"}[
        fn
    ]
    return ctx.call(name, [arg], [("dim", dim, True)], "sm.kw")


def f_qkv(ctx):
    wf = ctx.pick("wf", {"float": 45, "to32": 20, "todtype": 10, "type": 5, "literal": 10, "tensor": 5})
    lines_w = []
    for w in ["W_Q", "W_K", "W_V"]:
        e = {
            "float": f"{w}.float()",
            "to32": f"{w}.to(torch.float32)",
            "todtype": f"{w}.to(embeddings.dtype)",
            "type": f"{w}.type(torch.FloatTensor)",
            "literal": "torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])",
            "tensor": ctx.call("torch.tensor", [f"{w}.tolist()"], [("dtype", "torch.float32", False)], "wf.kw"),
        }[wf]
        lines_w.append(ctx.L(f"{w} = {e}", "float" if w == "W_Q" else None))
    v = ctx.pick("qkv", {"sol": 80, "gen": 8, "sep": 6})
    order = ctx.perm("qkv.order", ["Q", "K", "V"], 0.92)
    W = {"Q": "W_Q", "K": "W_K", "V": "W_V"}
    if v == "gen":
        Wl = ctx.n("Wl")
        q = [ctx.L(f"Q, K, V = [{ctx.mm('embeddings', Wl, 'qkv.mm')} for {Wl} in (W_Q, W_K, W_V)]", "proj")]
        order = ["Q", "K", "V"]
    elif v == "sep":
        q = [f"{k} = {ctx.mm('embeddings', W[k], 'qkv.mm' + k)}" for k in order]
    else:
        q = [ctx.L(f"{k} = {ctx.mm('embeddings', W[k], 'qkv.mm')}", "proj" if k == order[0] else None) for k in order]
    if ctx.chance("qkv.print", 0.2):
        q.append(ctx.pick("qkv.print.f", {"print(Q.shape, K.shape, V.shape)": 3, "print(W_Q.dtype)": 2}))
    return {"blanks": ["\n".join(lines_w), None, None, "\n".join(q), None, None]}


def f_scores(ctx):
    v = ctx.pick("sc", {"sol": 60, "kq": 15, "row": 12, "loop": 8, "keep": 4})
    if v == "sol":
        e = ctx.mm("Q[0]", "K", "sc.mm", kind="vm", bt=True)
    elif v == "kq":
        e = ctx.mm("K", "Q[0]", "sc.mm", kind="mv")
    elif v == "row":
        e = P(ctx.mm("Q", "K", "sc.mm", bt=True)) + "[0]"
    elif v == "keep":
        e = P(ctx.mm("Q[0:1]", "K", "sc.mm", bt=True)) + "[0]"
    else:
        kr = ctx.n("kr")
        e = f"torch.tensor([torch.dot(Q[0], {kr}) for {kr} in K])"
    return {"blanks": [ctx.L(f"attention_scores = {e}", "scores")]}


def f_weights(ctx):
    v = ctx.pick("aw", {"ssm": 75, "manual": 8, "wrong_noscale": 5, "wrong_dk": 4})
    pre = []
    if ctx.pick("scale.form", {"pow": 60, "math": 12, "tsqrt": 10}) == "math":
        pre.append("import math")
    if ctx.pick("softmax.fn", {"torch.softmax": 50, "F.softmax": 15, "nn.functional": 25, "method": 10}) == "F.softmax":
        pre.append("import torch.nn.functional as F")
    if ctx.helper("ssm.helper", 0.08):
        f, s, d = ctx.n("g:ssm"), ctx.n("ssm_s"), ctx.n("ssm_d")
        pre.append(ctx.L(f"def {f}({s}, {d}):\n    return {_ssm_inline(ctx, s, d, site='any')}", "softmax"))
    if v == "ssm":
        e = _ssm(ctx, "attention_scores", site="vec")
    elif v == "manual":
        pre.append("e = torch.exp(attention_scores / d_k ** 0.5)")
        e = "e / e.sum()"
    elif v == "wrong_noscale":
        e = ctx.call("torch.softmax", ["attention_scores"], [("dim", "-1", True)], "sm.kw")
    else:
        e = ctx.call("torch.softmax", ["attention_scores / d_k"], [("dim", "-1", True)], "sm.kw")
    return {"blanks": ["\n".join(pre + [ctx.L(f"attention_weights = {e}", "softmax")])]}


def f_output(ctx):
    v = ctx.pick("out", {"unsq": 35, "view": 10, "reshape": 8, "none": 8, "vec": 10, "sum": 6, "wrong_1d": 10})
    if v == "unsq":
        e = ctx.mm("attention_weights.unsqueeze(0)", "V", "out.mm")
    elif v == "view":
        e = ctx.mm("attention_weights.view(1, -1)", "V", "out.mm")
    elif v == "reshape":
        e = ctx.mm("attention_weights.reshape(1, 7)", "V", "out.mm")
    elif v == "none":
        e = ctx.mm("attention_weights[None, :]", "V", "out.mm")
    elif v == "vec":
        e = P(ctx.mm("attention_weights", "V", "out.mm", kind="vm")) + ".unsqueeze(0)"
    elif v == "sum":
        e = ctx.call(
            "torch.sum", ["attention_weights[:, None] * V"], [("dim", "0", True), ("keepdim", "True", False)], "out.kw"
        )
    else:
        e = ctx.mm("attention_weights", "V", "out.mm", kind="vm")
    return {"blanks": [ctx.L(f"output = {e}", "output")]}


def f_all(ctx):
    v = ctx.pick("all", {"sol": 55, "two": 25, "loop": 8, "wrong": 4})
    pre = []
    if v == "sol":
        e = _ssm(ctx, ctx.mm("Q", "K", "all.mm", bt=True))
    elif v == "two":
        s = ctx.n("sa_all")
        pre.append(ctx.L(f"{s} = {ctx.mm('Q', 'K', 'all.mm', bt=True)}", "all"))
        e = _ssm(ctx, s)
    elif v == "loop":
        i = ctx.n("i")
        e = f"torch.stack([{_ssm(ctx, ctx.mm(f'Q[{i}]', 'K', 'all.mm', kind='vm', bt=True), site='vec')} for {i} in range(len(tokens))])"
    else:
        e = ctx.call(
            "torch.softmax", [ctx.mm("Q", "K", "all.mm", bt=True) + " / d_k ** 0.5"], [("dim", "0", True)], "sm.kw"
        )
    first = "\n".join(pre + [ctx.L(f"all_attention_weights = {e}", "all")])
    second = ctx.L(f"all_outputs = {ctx.mm('all_attention_weights', 'V', 'all.mm2')}", "output")
    if ctx.chance("all.check", 0.25):
        second += "\n" + ctx.pick(
            "all.check.f",
            {
                "print(torch.allclose(all_attention_weights[0], attention_weights))": 3,
                "print(all_attention_weights.sum(dim=-1))": 2,
            },
        )
    return {"blanks": [first, second]}


def f_sa(ctx):
    v = ctx.pick("sa", {"sol": 52, "compact": 15, "loop": 8, "wrong_dk": 4, "names": 12})
    q, k, vv, s, w = (ctx.n(x) for x in ("ql", "kl", "vl", "sl", "wl"))
    if v == "names":  # the skeleton's own names, Q K V
        q, k, vv = "Q", "K", "V"
    order = ctx.perm("sa.order", [q, k, vv], 0.85)
    proj = {q: "W_Q", k: "W_K", vv: "W_V"}
    dk = ctx.pick("sa.dk", {f"{k}.shape[-1]": 5, f"{k}.shape[1]": 2, "W_K.shape[1]": 1})
    if v == "compact":
        sc = ctx.mm(P(ctx.mm("x", "W_Q", "sa.mm")), P(ctx.mm("x", "W_K", "sa.mm")), "sa.mm", bt=True)
        return {
            "blanks": [
                ctx.L(f"return {ctx.mm(_ssm(ctx, sc, 'W_K.shape[1]'), P(ctx.mm('x', 'W_V', 'sa.mm')), 'sa.mm')}", "sa")
            ]
        }
    lines = [ctx.L(f"{n} = {ctx.mm('x', proj[n], 'sa.mm')}", "sa" if n == order[0] else None) for n in order]
    if v == "loop":
        ol, qr = ctx.n("ol"), ctx.n("qr")
        lines += [
            f"{ol} = []",
            ctx.L(
                f"for {qr} in {q}:\n    {w} = {_ssm(ctx, ctx.mm(qr, k, 'sa.mm', kind='vm', bt=True), dk, site='vec')}\n"
                f"    {ol}.append({ctx.mm(w, vv, 'sa.mm', kind='vm')})",
                "sa",
            ),
            f"return torch.stack({ol})",
        ]
    else:
        d = "x.shape[-1]" if v == "wrong_dk" else dk
        if ctx.chance("sa.tmp", 0.4):
            lines.append(f"{s} = {ctx.mm(q, k, 'sa.mm', bt=True)}")
            lines.append(f"{w} = {_ssm(ctx, s, d)}")
        else:
            lines.append(f"{w} = {_ssm(ctx, ctx.mm(q, k, 'sa.mm', bt=True), d)}")
        lines.append(f"return {ctx.mm(w, vv, 'sa.mm')}")
    return {"blanks": ["\n".join(lines)]}


def f_heads(ctx):
    v = ctx.pick("heads", {"comp": 55, "star": 15, "loop": 15, "explicit": 12})
    wq, wk, wv, p = ctx.n("wq"), ctx.n("wk"), ctx.n("wv"), ctx.n("p")
    if v == "comp":
        code = f"heads = [self_attention(embeddings, {wq}, {wk}, {wv}) for {wq}, {wk}, {wv} in head_params]"
    elif v == "star":
        code = f"heads = [self_attention(embeddings, *{p}) for {p} in head_params]"
    elif v == "loop":
        code = f"heads = []\nfor {wq}, {wk}, {wv} in head_params:\n    heads.append(self_attention(embeddings, {wq}, {wk}, {wv}))"
    else:
        code = "heads = [self_attention(embeddings, W_Q, W_K, W_V), self_attention(embeddings, W_Q2, W_K2, W_V2)]"
    return {"blanks": [ctx.L(code, "heads")]}


def f_mh(ctx):
    v = ctx.pick("mh", {"sol": 58, "dim1": 20, "hstack": 8, "var": 10, "wrong": 3})
    if v in ("sol", "var"):
        cat = ctx.call("torch.cat", ["heads"], [("dim", "-1", True)], "mh.kw")
    elif v == "dim1":
        cat = ctx.call("torch.cat", ["heads"], [("dim", "1", True)], "mh.kw")
    elif v == "hstack":
        cat = "torch.hstack(heads)"
    else:
        cat = "(heads[0] + heads[1])"
    if v == "var":
        c = ctx.n("cat")
        code = f"{c} = {cat}\nmultihead_output = {ctx.mm(c, 'W_O', 'mh.mm')}"
    elif v == "wrong":
        code = f"multihead_output = {ctx.mm(cat, 'W_O[:2]', 'mh.mm')}"
    else:
        code = f"multihead_output = {ctx.mm(cat, 'W_O', 'mh.mm')}"
    return {"blanks": [ctx.L(code, "mh")]}


FILLERS = [f_qkv, f_scores, f_weights, f_output, f_all, f_sa, f_heads, f_mh]


def x_heatmap(ctx):
    fig, ax = ctx.n("fig"), ctx.n("ax")
    api = ctx.pick("x.heat.api", {"plt": 5, "oo": 4})
    lines = [ctx.L("import matplotlib.pyplot as plt", "plot")]
    if api == "oo":
        lines += [
            f"{fig}, {ax} = plt.subplots(figsize=(6, 5))",
            f"{ax}.imshow(all_attention_weights)",
            f"{ax}.set_xticks(range(len(tokens)))",
            f"{ax}.set_xticklabels(tokens, rotation=45)",
            f"{ax}.set_yticks(range(len(tokens)))",
            f"{ax}.set_yticklabels(tokens)",
        ]
    else:
        lines += [
            "plt.imshow(all_attention_weights" + (", cmap='viridis')" if ctx.chance("x.heat.cm", 0.4) else ")"),
            "plt.xticks(range(7), tokens)",
            "plt.yticks(range(7), tokens)",
        ]
        if ctx.chance("x.heat.cbar", 0.6):
            lines.append("plt.colorbar()")
    if ctx.chance("x.heat.title", 0.6):
        lines.append("plt.title('Self-attention weights')")
    lines.append("plt.show()")
    return "\n".join(lines)


def x_rowsum(ctx):
    return ctx.L(
        ctx.pick(
            "x.rowsum",
            {
                "all_attention_weights.sum(dim=-1)": 3,
                "torch.allclose(all_attention_weights.sum(dim=-1), torch.ones(7))": 3,
                "print(attention_weights.sum())": 2,
            },
        ),
        "check",
    )


def x_row0(ctx):
    return ctx.L(
        ctx.pick(
            "x.row0",
            {
                "torch.allclose(all_attention_weights[0], attention_weights)": 4,
                "print(all_outputs[0], output)": 2,
                "assert torch.allclose(all_outputs[0], output[0])": 2,
            },
        ),
        "check",
    )


def x_same(ctx):
    return ctx.L(
        ctx.pick(
            "x.same",
            {
                "print(torch.equal(all_outputs[0], all_outputs[4]))": 3,
                "print(all_attention_weights[2], all_attention_weights[6])": 2,
                "torch.allclose(Q[2], Q[6])": 1,
            },
        ),
        "explore",
    )


def x_dtype(ctx):
    return ctx.L(
        ctx.pick(
            "x.dtype",
            {
                "print(embeddings.dtype, W_Q.dtype)": 4,
                "print(W_Q.dtype, W_Q.shape)": 2,
                "assert W_Q.dtype == embeddings.dtype": 1,
            },
        ),
        "check",
    )


def x_argmax(ctx):
    t, r = ctx.n("tok"), ctx.n("row")
    return ctx.L(
        f"for {t}, {r} in zip(tokens, all_attention_weights):\n    print({t}, '->', tokens[{r}.argmax()])", "explore"
    )


def x_random(ctx):
    xr = ctx.n("xr")
    lines = [
        ctx.L("torch.manual_seed(" + ctx.pick("x.rand.s", {"0": 3, "42": 2, "1": 1}) + ")", "explore"),
        f"{xr} = torch.rand(" + ctx.pick("x.rand.n", {"5": 2, "4": 1, "10": 1}) + ", 3)",
        f"print(self_attention({xr}, W_Q, W_K, W_V).shape)",
    ]
    if ctx.chance("x.rand.chk", 0.4):
        lines.append("print(torch.allclose(self_attention(embeddings, W_Q, W_K, W_V), all_outputs))")
    return "\n".join(lines)


def x_printopts(ctx):
    return ctx.pick(
        "x.po", {"torch.set_printoptions(precision=3)": 3, "torch.set_printoptions(precision=4, sci_mode=False)": 2}
    )


EXPLORES = [
    ("heatmap", 30, 4, x_heatmap),
    ("rowsum", 25, 4, x_rowsum),
    ("row0", 22, 4, x_row0),
    ("same", 12, 4, x_same),
    ("dtype", 18, 0, x_dtype),
    ("argmax", 10, 4, x_argmax),
    ("random", 12, 5, x_random),
    ("printopts", 12, -1, x_printopts),
]
MD_TOPICS = [("float", 0), ("softmax", 2), ("heads", 7)]
