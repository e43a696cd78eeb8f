"""attention_from_scratch (PyTorch): students' ways of filling the skeleton, and their explore cells."""

from __future__ import annotations

from .core import P
from .torchops import OP_SWAP, OPS, TR2, TR3, render_mm, render_tr  # noqa: F401

NAME = "attention_from_scratch"
LIB = "torch"

NAMES = {
    "i": ["i", "idx", "k", "ii", "n_i"],
    "j": ["j", "jdx", "jj", "m_j", "col"],
    "xi": ["x_i", "input", "inp", "token_vec", "emb", "vec"],
    "xj": ["x_j", "input_j", "inp2", "other", "emb_j"],
    "w": ["w", "alpha", "weight", "a_i", "coef"],
    "lst": ["scores_list", "lst", "vals", "tmp", "res"],
    "tot": ["total", "s_sum", "denom", "norm", "Z"],
    "ql": ["queries", "q", "querys", "Q", "qs"],
    "kl": ["keys", "k_", "K", "ks", "key"],
    "vl": ["values", "v", "V", "vs", "value"],
    "sl": ["attn_scores", "scores", "s", "omega", "att_scores"],
    "wl": ["attn_weights", "weights", "attn", "alpha_", "att_w"],
    "cl": ["context_vec", "context", "out", "z", "ctx_vec"],
    "bl": ["b", "batch_size", "B", "bs"],
    "nt": ["num_tokens", "n_tokens", "T", "seq_len", "n_tok"],
    "dl": ["d_in", "_", "dim_in", "d_"],
    "head": ["head", "h", "attn_head", "mod"],
    "outs": ["outs", "outputs", "head_outputs", "results", "hs"],
    "ssm": ["scaled_softmax", "attn_softmax", "softmax_scaled", "normalize_scores", "scaled_attn"],
    "ssm_s": ["s_in", "sc", "raw", "logits", "x_s"],
    "ssm_d": ["dk", "d", "dim", "d_key"],
    "cm": ["causal_mask", "make_mask", "future_mask", "build_mask", "get_mask"],
    "cm_n": ["n", "size", "L", "length", "ctx_len"],
    "e": ["exp_s", "e", "exps", "ex", "numer"],
    "words": ["words", "labels", "toks", "sentence_words", "word_list"],
    "fig": ["fig", "f", "figure"],
    "ax": ["ax", "axes", "a_x"],
    "simple": ["mask_simple", "simple_mask", "tril", "lower", "m_simple"],
    "ms": ["masked_simple", "attn_masked", "w_masked", "tmp_masked"],
    "rs": ["row_sums", "sums", "rsum", "norm_rows"],
    "msn": ["masked_simple_norm", "renorm", "w_renorm", "normed"],
    "sa2": ["SelfAttention_v2", "SelfAttentionLinear", "SA2", "MySelfAttention"],
    "sa2i": ["sa_v2", "model2", "sa2", "m2"],
    "naive": ["softmax_naive", "naive_softmax", "my_softmax", "softmax_manual"],
    "npar": ["n_params", "num_params", "total_params", "count"],
    "wl2": ["word", "w_", "tok", "wd"],
    "rl": ["row", "r", "wrow", "att_row"],
}

TOPICS = {
    "generic": ["compute it", "as in the book", "matrix form", "shapes line up", "same as above"],
    "dot": ["dot product with every input", "score = x2 . xi", "loop over the inputs", "similarity with the query"],
    "norm": ["normalise so the weights sum to 1", "divide by the sum", "simple normalisation"],
    "ctx": ["weighted sum of the inputs", "context vector", "z2 = sum alpha_i x_i", "combine inputs"],
    "all": ["all pairs at once", "6x6 matrix", "inputs times inputs transposed", "every query vs every key"],
    "softmax": ["softmax over each row", "rows sum to 1", "normalise with softmax", "dim=-1 is the last axis"],
    "proj": ["project with the trainable weights", "x2 times W", "query key value for word 2", "projections"],
    "scale": ["scale by sqrt(d_k)", "divide by square root of key dim", "scaled dot product"],
    "mask": ["hide the future", "True above the diagonal", "upper triangle", "causal mask"],
    "masked": ["-inf where masked", "fill the future with -inf", "so softmax gives 0 there"],
    "dropout": ["dropout on the weights", "drop half the weights", "same seed as the example"],
    "class": [
        "forward pass",
        "keys queries values",
        "batched version",
        "mask the scores then softmax",
        "use the buffer",
        "apply dropout to the weights",
    ],
    "heads": ["one CausalAttention per head", "module list of heads", "concat along the last dim"],
    "check": ["sanity check", "rows should sum to 1", "check shapes", "quick test", "compare with above"],
    "plot": ["visualise the weights", "heatmap", "plot it"],
    "explore": ["try something else", "experiment", "just curious", "extra", "from the book"],
}

MD = {
    "dot": [
        "The dot product measures how similar two embeddings are.",
        "journey and starts have almost the same embedding so their score is high.",
    ],
    "softmax": [
        "softmax makes every row a probability distribution.",
        "Normalising by the sum can give negative weights; softmax can't.",
    ],
    "mask": [
        "The mask is True where the key comes after the query.",
        "Using -inf before the softmax keeps each row summing to 1.",
    ],
    "dropout": [
        "Dropout scales the kept weights by 2 so the expected sum stays the same.",
        "In eval mode dropout does nothing.",
    ],
    "heads": [
        "Each head has its own weights so they learn different things.",
        "The output has num_heads * d_out features.",
    ],
}

FILL_CELLS = [3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 39, 41, 43, 45, 47]
IMPORT_CELL = 1
ALGO_PAIR = (
    {"as": "loops", "as.loop": "enumerate"},
    {"as": "mat"},
    "all scores: a double loop of dot products vs inputs @ inputs.T",
)


def _ssm(ctx, s, dk="d_k", rank=2):
    """softmax(s / sqrt(d_k)) along rows, in the student's way (helper or inline)."""
    use = ctx.helper("ssm.helper", 0.1)
    if use:
        return f"{ctx.n('g:ssm')}({s}, {dk})"
    return _ssm_inline(ctx, s, dk, rank)


def _ssm_inline(ctx, s, dk, rank=2):
    sc = ctx.pick("scale.form", {"pow": 55, "math": 12, "tsqrt": 12, "mul": 6})
    den = {"pow": f"{dk}**0.5", "math": f"math.sqrt({dk})", "tsqrt": f"torch.sqrt(torch.tensor({dk}))", "mul": None}[sc]
    arg = f"{P(s)} / {den}" if den else f"{P(s)} * {dk}**-0.5"
    fn = ctx.pick("softmax.fn", {"torch.softmax": 60, "F.softmax": 15, "method": 10, "nn.functional": 8})
    dim = ctx.pick("softmax.dim", {"-1": 80, "pos": 20})
    if ctx.picks.get("ssm.helper"):  # the source wrote a helper: its body (dim=-1) is what gets inlined
        dim = "-1"
    if dim == "pos":
        dim = {0: "-1", 1: "0", 2: "1", 3: "2"}[rank]
    if fn == "method":
        return ctx.call(f"{P(arg)}.softmax", [], [("dim", dim, True)], "sm.kw")
    name = {"torch.softmax": "torch.softmax", "F.softmax": "F.softmax", "nn.functional": "torch.nn.functional.softmax"}[
        fn
    ]
    return ctx.call(name, [arg], [("dim", dim, True)], "sm.kw")


def _ssm_helper_def(ctx):
    f, s, d = ctx.n("g:ssm"), ctx.n("ssm_s"), ctx.n("ssm_d")
    return ctx.L(f"def {f}({s}, {d}):\n    return {_ssm_inline(ctx, s, d, rank=0)}", "scale")


def _imports(ctx):
    """Imports this student needs for their softmax / sqrt choices (placed where first used)."""
    out = []
    if ctx.pick("scale.form", {"pow": 55, "math": 12, "tsqrt": 12, "mul": 6}) == "math":
        out.append("import math")
    if ctx.pick("softmax.fn", {"torch.softmax": 60, "F.softmax": 15, "method": 10, "nn.functional": 8}) == "F.softmax":
        out.append("import torch.nn.functional as F")
    return out


# ----------------------------------------------------------------------------------------------
# blanks
# ----------------------------------------------------------------------------------------------


def f_as2(ctx):
    v = ctx.pick("as2", {"sol": 32, "mat": 25, "listcomp": 12, "mulsum": 8, "append": 8, "wrong": 3})
    i, xi = ctx.n("i"), ctx.n("xi")
    if v == "sol":
        alloc = ctx.pick(
            "as2.alloc",
            {
                "torch.empty(inputs.shape[0])": 5,
                "torch.zeros(len(inputs))": 3,
                "torch.empty(6)": 1,
                "torch.zeros(inputs.shape[0])": 2,
            },
        )
        loop = ctx.pick("as2.loop", {"enumerate": 3, "range": 2})
        d = ctx.pick("as2.dot", {"dot": 6, "mm": 2, "mulsum": 1})
        if loop == "enumerate":
            el = {
                "dot": f"torch.dot(query, {xi})",
                "mm": ctx.mm("query", xi, "as2.mm", kind="vv"),
                "mulsum": f"(query * {xi}).sum()",
            }[d]
            body = f"for {i}, {xi} in enumerate(inputs):\n    attn_scores_2[{i}] = {el}"
        else:
            el = {
                "dot": f"torch.dot(query, inputs[{i}])",
                "mm": ctx.mm("query", f"inputs[{i}]", "as2.mm", kind="vv"),
                "mulsum": f"(query * inputs[{i}]).sum()",
            }[d]
            body = f"for {i} in range(len(inputs)):\n    attn_scores_2[{i}] = {el}"
        return {"blanks": ["\n".join([f"attn_scores_2 = {alloc}", ctx.L(body, "dot")])]}
    if v == "mat":
        return {"blanks": [ctx.L(f"attn_scores_2 = {ctx.mm('inputs', 'query', 'as2.mm', kind='mv')}", "dot")]}
    if v == "wrong":
        return {"blanks": [ctx.L(f"attn_scores_2 = {ctx.mm('inputs', 'inputs[0]', 'as2.mm', kind='mv')}", "dot")]}
    if v == "listcomp":
        wrap = ctx.pick("as2.wrap", {"tensor": 3, "stack": 2})
        return {"blanks": [ctx.L(f"attn_scores_2 = torch.{wrap}([torch.dot({xi}, query) for {xi} in inputs])", "dot")]}
    if v == "mulsum":
        return {
            "blanks": [
                ctx.L("attn_scores_2 = " + ctx.call("(inputs * query).sum", [], [("dim", "1", True)], "as2.kw"), "dot")
            ]
        }
    lst = ctx.n("lst")
    return {
        "blanks": [
            "\n".join(
                [
                    f"{lst} = []",
                    ctx.L(f"for {xi} in inputs:\n    {lst}.append(torch.dot(query, {xi}))", "dot"),
                    f"attn_scores_2 = torch.tensor({lst})",
                ]
            )
        ]
    }


def f_nor2(ctx):
    v = ctx.pick("nor2", {"sum": 62, "tsum": 20, "kw": 6, "tmp": 6, "wrong": 6})
    if v == "sum":
        code = "nor_attn_2 = attn_scores_2 / attn_scores_2.sum()"
    elif v == "tsum":
        code = "nor_attn_2 = attn_scores_2 / torch.sum(attn_scores_2)"
    elif v == "kw":
        code = "nor_attn_2 = attn_scores_2 / " + ctx.call(
            "attn_scores_2.sum", [], [("dim", "-1", True), ("keepdim", "True", False)], "nor2.kw"
        )
    elif v == "tmp":
        t = ctx.n("tot")
        code = f"{t} = attn_scores_2.sum()\nnor_attn_2 = attn_scores_2 / {t}"
    else:
        code = "nor_attn_2 = " + ctx.call("torch.softmax", ["attn_scores_2"], [("dim", "0", True)], "nor2.kw")
    return {"blanks": [ctx.L(code, "norm")]}


def f_ctx2(ctx):
    v = ctx.pick("ctx2", {"sol": 30, "mat": 36, "bcast": 10, "gen": 8, "wrong": 3})
    i, xi, w = ctx.n("i"), ctx.n("xi"), ctx.n("w")
    if v == "sol":
        alloc = ctx.pick(
            "ctx2.alloc",
            {
                "torch.zeros(query.shape)": 4,
                "torch.zeros_like(query)": 3,
                "torch.zeros(3)": 1,
                "torch.zeros(inputs.shape[1])": 1,
            },
        )
        code = "\n".join(
            [
                f"context_vec_2 = {alloc}",
                ctx.L(f"for {i}, {xi} in enumerate(inputs):\n    context_vec_2 += nor_attn_2[{i}] * {xi}", "ctx"),
            ]
        )
    elif v == "mat":
        code = ctx.L(f"context_vec_2 = {ctx.mm('nor_attn_2', 'inputs', 'ctx2.mm', kind='vm')}", "ctx")
    elif v == "wrong":
        code = ctx.L(f"context_vec_2 = {ctx.mm('attn_scores_2', 'inputs', 'ctx2.mm', kind='vm')}", "ctx")
    elif v == "bcast":
        f = ctx.pick("ctx2.b", {"none": 1, "unsq": 1})
        w2 = "nor_attn_2[:, None]" if f == "none" else "nor_attn_2.unsqueeze(1)"
        code = ctx.L("context_vec_2 = " + ctx.call(f"({w2} * inputs).sum", [], [("dim", "0", True)], "ctx2.kw"), "ctx")
    else:
        code = ctx.L(f"context_vec_2 = sum({w} * {xi} for {w}, {xi} in zip(nor_attn_2, inputs))", "ctx")
    return {"blanks": [code]}


def f_as(ctx):
    v = ctx.pick("as", {"mat": 58, "loops": 15, "listcomp": 5})
    if v == "mat":
        code = ctx.L(f"attn_scores = {ctx.mm('inputs', 'inputs', 'as.mm', bt=True)}", "all")
    elif v == "wrong":
        code = ctx.L(f"attn_scores = {ctx.mm(ctx.tr('inputs', 'as.tr'), 'inputs', 'as.mm')}", "all")
    elif v == "listcomp":
        xi = ctx.n("xi")
        code = ctx.L(
            f"attn_scores = torch.stack([{ctx.mm('inputs', xi, 'as.mm', kind='mv')} for {xi} in inputs])", "all"
        )
    else:
        i, j, xi, xj = ctx.n("i"), ctx.n("j"), ctx.n("xi"), ctx.n("xj")
        alloc = ctx.pick(
            "as.alloc",
            {
                "torch.empty(6, 6)": 4,
                "torch.zeros(inputs.shape[0], inputs.shape[0])": 3,
                "torch.empty(len(inputs), len(inputs))": 2,
            },
        )
        if ctx.pick("as.loop", {"enumerate": 3, "range": 2}) == "enumerate":
            body = (
                f"for {i}, {xi} in enumerate(inputs):\n    for {j}, {xj} in enumerate(inputs):\n"
                f"        attn_scores[{i}, {j}] = torch.dot({xi}, {xj})"
            )
        else:
            body = (
                f"for {i} in range(inputs.shape[0]):\n    for {j} in range(inputs.shape[0]):\n"
                f"        attn_scores[{i}, {j}] = torch.dot(inputs[{i}], inputs[{j}])"
            )
        code = "\n".join([f"attn_scores = {alloc}", ctx.L(body, "all")])
    return {"blanks": [code]}


def f_nor(ctx):
    v = ctx.pick("nor", {"softmax": 50, "dim1": 18, "method": 8, "F": 8, "manual": 9, "wrong": 4})
    pre = []
    if v == "softmax":
        e = ctx.call("torch.softmax", ["attn_scores"], [("dim", "-1", True)], "nor.kw")
    elif v == "dim1":
        e = ctx.call("torch.softmax", ["attn_scores"], [("dim", "1", True)], "nor.kw")
    elif v == "method":
        e = ctx.call("attn_scores.softmax", [], [("dim", "-1", True)], "nor.kw")
    elif v == "F":
        pre.append("import torch.nn.functional as F")
        e = ctx.call("F.softmax", ["attn_scores"], [("dim", "-1", True)], "nor.kw")
    elif v == "wrong":
        e = ctx.call("torch.softmax", ["attn_scores"], [("dim", "0", True)], "nor.kw")
    else:
        helper = ctx.helper("nor.helper", 0.4)
        if helper:
            f, x = ctx.n("g:naive"), ctx.n("ssm_s")
            s = ctx.call(f"torch.exp({x}).sum", [], [("dim", "-1", True), ("keepdim", "True", False)], "nor.kw")
            pre.append(ctx.L(f"def {f}({x}):\n    return torch.exp({x}) / {s}", "softmax"))
            e = f"{f}(attn_scores)"
        else:
            s = ctx.call("torch.exp(attn_scores).sum", [], [("dim", "-1", True), ("keepdim", "True", False)], "nor.kw")
            e = f"torch.exp(attn_scores) / {s}"
    code = "\n".join(pre + [ctx.L(f"nor_attn = {e}", "softmax")])
    if ctx.chance("nor.check", 0.25):
        code += "\n" + ctx.pick(
            "nor.check.f",
            {
                "print(nor_attn.sum(dim=-1))": 3,
                "print(nor_attn.sum(dim=1))": 2,
                "print(torch.allclose(nor_attn.sum(dim=-1), torch.ones(6)))": 1,
            },
        )
    return {"blanks": [code]}


def f_cvec(ctx):
    v = ctx.pick("cvec", {"mat": 80, "loop": 8, "wrong_T": 3, "wrong_raw": 3})
    if v == "mat":
        code = ctx.L(f"context_vector = {ctx.mm('nor_attn', 'inputs', 'cvec.mm')}", "ctx")
    elif v == "wrong_T":
        code = ctx.L(f"context_vector = {ctx.mm(ctx.tr('nor_attn', 'cvec.tr'), 'inputs', 'cvec.mm')}", "ctx")
    elif v == "wrong_raw":
        code = ctx.L(f"context_vector = {ctx.mm('attn_scores', 'inputs', 'cvec.mm')}", "ctx")
    else:
        i = ctx.n("i")
        code = "\n".join(
            [
                "context_vector = torch.zeros(inputs.shape)",
                ctx.L(
                    f"for {i} in range(len(inputs)):\n    context_vector[{i}] = {ctx.mm(f'nor_attn[{i}]', 'inputs', 'cvec.mm', kind='vm')}",
                    "ctx",
                ),
            ]
        )
    return {"blanks": [code]}


def f_qkv2(ctx):
    v = ctx.pick("qkv2", {"sol": 72, "inp": 10, "T": 5, "wrong": 3})
    W = {"query_2": "W_query", "key_2": "W_key", "value_2": "W_value"}
    order = ctx.perm("qkv2.order", list(W), 0.93)
    lines = {}
    for k in order:
        w = W[k]
        if v == "wrong" and k == "query_2":
            w = "W_key"
        if v in ("sol", "wrong"):
            e = ctx.mm("x_2", w, "qkv2.mm", kind="vm")
        elif v == "inp":
            e = ctx.mm("inputs[1]", w, "qkv2.mm", kind="vm")
        else:
            e = ctx.mm(ctx.tr(w, "qkv2.tr"), "x_2", "qkv2.mm", kind="mv")
        lines[k] = ctx.L(f"{k} = {e}", "proj" if k == order[0] else None)
    blocks = [lines[k] for k in order]
    # the skeleton has three blank lines in the order query_2, key_2, value_2: put the whole block
    # in the first one
    return {"blanks": ["\n".join(blocks), None, None]}


def f_kv(ctx):
    v = ctx.pick("kv", {"sol": 76, "loop": 8, "wrong": 3})
    order = ctx.perm("kv.order", ["keys", "values"], 0.9)
    W = {"keys": "W_key", "values": "W_value"}
    out = []
    xi = ctx.n("xi")
    for k in order:
        w = "W_query" if (v == "wrong" and k == "keys") else W[k]
        if v == "loop":
            out.append(ctx.L(f"{k} = torch.stack([{ctx.mm(xi, w, 'kv.mm', kind='vm')} for {xi} in inputs])", "proj"))
        else:
            out.append(ctx.L(f"{k} = {ctx.mm('inputs', w, 'kv.mm')}", "proj"))
    return {"blanks": ["\n".join(out), None]}


def f_as2b(ctx):
    v = ctx.pick("as2b", {"sol": 62, "kq": 15, "loop": 5, "wrong": 3})
    if v == "sol":
        e = ctx.mm("query_2", "keys", "as2b.mm", kind="vm", bt=True)
    elif v == "kq":
        e = ctx.mm("keys", "query_2", "as2b.mm", kind="mv")
    elif v == "wrong":
        e = ctx.mm("query_2", "values", "as2b.mm", kind="vm", bt=True)
    else:
        kk = ctx.n("kl")
        e = f"torch.stack([{ctx.mm('query_2', kk, 'as2b.mm', kind='vv')} for {kk} in keys])"
    return {"blanks": [ctx.L(f"attn_scores_2 = {e}", "dot")]}


def f_aw2(ctx):
    v = ctx.pick("aw2", {"ssm": 72, "dim0": 10, "manual": 6, "wrong_noscale": 4, "wrong_dk": 3})
    pre = _imports(ctx)
    use_helper = ctx.helper("ssm.helper", 0.1)
    if use_helper:
        pre.append(_ssm_helper_def(ctx))
    if v == "ssm":
        e = _ssm(ctx, "attn_scores_2", rank=1)
    elif v == "dim0":
        e = ctx.call("torch.softmax", ["attn_scores_2 / d_k**0.5"], [("dim", "0", True)], "sm.kw")
    elif v == "manual":
        ex = ctx.n("e")
        pre.append(f"{ex} = torch.exp(attn_scores_2 / d_k**0.5)")
        e = f"{ex} / {ex}.sum()"
    elif v == "wrong_noscale":
        e = ctx.call("torch.softmax", ["attn_scores_2"], [("dim", "-1", True)], "sm.kw")
    else:
        e = ctx.call("torch.softmax", ["attn_scores_2 / d_k"], [("dim", "-1", True)], "sm.kw")
    return {"blanks": ["\n".join(pre + [ctx.L(f"attn_weights_2 = {e}", "scale")])]}


def f_cv2(ctx):
    v = ctx.pick("cv2", {"sol": 82, "loop": 5, "wrong": 3})
    if v == "sol":
        e = ctx.mm("attn_weights_2", "values", "cv2.mm", kind="vm")
    elif v == "wrong":
        e = ctx.mm("attn_weights_2", "keys", "cv2.mm", kind="vm")
    else:
        w, vv = ctx.n("w"), ctx.n("vl")
        e = f"sum({w} * {vv} for {w}, {vv} in zip(attn_weights_2, values))"
    return {"blanks": [ctx.L(f"context_vector_2 = {e}", "ctx")]}


def f_fwd(ctx):
    v = ctx.pick("fwd", {"sol": 55, "compact": 14, "noret": 12, "wrong": 4})
    q, k, vv, s, w, c = (ctx.n(x) for x in ("ql", "kl", "vl", "sl", "wl", "cl"))
    proj = {q: "self.W_query", k: "self.W_key", vv: "self.W_value"}
    order = ctx.perm("fwd.order", [k, q, vv], 0.6)
    dk = ctx.pick("fwd.dk", {f"{k}.shape[-1]": 5, f"{k}.shape[1]": 3, "self.W_key.shape[1]": 1})
    if v == "compact":
        qe = P(ctx.mm("x", "self.W_query", "fwd.mm"))
        ke = P(ctx.mm("x", "self.W_key", "fwd.mm"))
        ve = P(ctx.mm("x", "self.W_value", "fwd.mm"))
        sc = ctx.mm(qe, ke, "fwd.mm", bt=True)
        return {"blanks": [ctx.L(f"return {ctx.mm(_ssm(ctx, sc, 'self.W_key.shape[1]'), ve, 'fwd.mm')}", "class")]}
    lines = [ctx.L(f"{n} = {ctx.mm('x', proj[n], 'fwd.mm')}", "class" if n == order[0] else None) for n in order]
    if ctx.blank_habit:
        lines.append("")
    lines.append(f"{s} = {ctx.mm(q, k, 'fwd.mm', bt=True)}")
    if v == "wrong":
        lines.append(f"{w} = " + ctx.call("torch.softmax", [s], [("dim", "-1", True)], "sm.kw"))
    else:
        lines.append(ctx.L(f"{w} = {_ssm(ctx, s, dk)}", "scale"))
    if v == "noret":
        lines.append(f"return {ctx.mm(w, vv, 'fwd.mm')}")
    else:
        lines += [f"{c} = {ctx.mm(w, vv, 'fwd.mm')}", f"return {c}"]
    return {"blanks": ["\n".join(lines)]}


def f_causal_qs(ctx):
    v = ctx.pick("cq", {"sol": 85, "wrong": 3})
    q = ctx.mm("inputs", "W_query", "cq.mm")
    sc = "inputs @ inputs.T" if v == "wrong" else ctx.mm("queries", "keys", "cq.mm", bt=True)
    return {"blanks": [ctx.L(f"queries = {q}", "proj"), ctx.L(f"scores = {sc}", "all")]}


def _mask_expr(ctx, n, site):
    v = ctx.pick("mask", {"sol": 45, "float_bool": 20, "tril": 10, "eq": 7, "arange": 8, "wrong": 4})
    ones_b = ctx.call("torch.ones", [n, n], [("dtype", "torch.bool", False)], site + ".ones")
    if v == "sol":
        return ctx.call("torch.triu", [ones_b], [("diagonal", "1", True)], site)
    if v == "float_bool":
        return ctx.call("torch.triu", [f"torch.ones({n}, {n})"], [("diagonal", "1", True)], site) + ".bool()"
    if v == "tril":
        return "~" + ctx.call("torch.tril", [ones_b], [], site)
    if v == "eq":
        return f"torch.ones({n}, {n}).triu(1) == 1"
    if v == "arange":
        return f"torch.arange({n})[None, :] > torch.arange({n})[:, None]"
    return ctx.call("torch.triu", [ones_b], [("diagonal", "0", True)], site)


def f_mask(ctx):
    helper = ctx.helper("cm.helper", 0.1)
    if helper:
        f, nn_ = ctx.n("g:cm"), ctx.n("cm_n")
        code = "\n".join(
            [
                ctx.L(f"def {f}({nn_}):\n    return {_mask_expr(ctx, nn_, 'mask.call')}", "mask"),
                f"mask = {f}(context_length)",
            ]
        )
    else:
        code = ctx.L(f"mask = {_mask_expr(ctx, 'context_length', 'mask.call')}", "mask")
    return {"blanks": [code]}


def _fill_inf(ctx):
    return ctx.pick("inf", {"-torch.inf": 50, "float('-inf')": 30, "-float('inf')": 10})


def f_masked(ctx):
    v = ctx.pick("msk", {"sol": 55, "where": 10, "clone": 12, "inplace": 6, "wrong": 4})
    inf = _fill_inf(ctx)
    if v == "sol":
        code = "masked_scores = " + ctx.call("scores.masked_fill", ["mask"], [("value", inf, True)], "msk.kw")
    elif v == "where":
        code = f"masked_scores = torch.where(mask, {inf}, scores)"
    elif v == "clone":
        code = f"masked_scores = scores.clone()\nmasked_scores[mask] = {inf}"
    elif v == "inplace":
        code = f"masked_scores = scores.clone()\nmasked_scores.masked_fill_(mask, {inf})"
    else:
        code = "masked_scores = " + ctx.call("scores.masked_fill", ["mask"], [("value", "0.0", True)], "msk.kw")
    return {"blanks": [ctx.L(code, "masked")]}


def f_cw(ctx):
    v = ctx.pick("cw", {"ssm": 82, "wrong_after": 4, "wrong_noscale": 3})
    if v == "ssm":
        e = _ssm(ctx, "masked_scores")
    elif v == "wrong_after":
        e = ctx.call("torch.softmax", ["scores / d_k**0.5"], [("dim", "-1", True)], "sm.kw") + ".masked_fill(mask, 0.0)"
    else:
        e = ctx.call("torch.softmax", ["masked_scores"], [("dim", "-1", True)], "sm.kw")
    code = ctx.L(f"causal_weights = {e}", "softmax")
    if ctx.chance("cw.check", 0.2):
        code += "\n" + ctx.pick(
            "cw.check.f",
            {
                "print(causal_weights.sum(dim=-1))": 2,
                "assert torch.allclose(causal_weights.sum(dim=-1), torch.ones(6))": 1,
            },
        )
    return {"blanks": [code]}


def f_cc(ctx):
    v = ctx.pick("cc", {"sol": 92, "wrong": 3})
    e = ctx.mm("causal_weights", "keys" if v == "wrong" else "values", "cc.mm")
    return {"blanks": [ctx.L(f"causal_context = {e}", "ctx")]}


def f_drop(ctx):
    v = ctx.pick("drop", {"sol": 85, "new": 9, "F": 5})
    if v == "sol":
        e = "dropout(causal_weights)"
    elif v == "new":
        e = "torch.nn.Dropout(0.5)(causal_weights)"
    else:
        e = ctx.call(
            "torch.nn.functional.dropout",
            ["causal_weights"],
            [("p", "0.5", True), ("training", "True", True)],
            "drop.kw",
        )
    return {"blanks": [ctx.L(f"dropped_weights = {e}", "dropout")]}


def f_causal_class(ctx):
    n = "context_length"
    h = ctx.helper("cm.helper", 0.1)
    if h:
        mv = "helper"
        m = f"{ctx.n('g:cm')}({n})"
    elif ctx.picks["cm.helper"]:  # the source used its helper here: inline it
        mv = "inlined"
        m = _mask_expr(ctx, n, "mask.call")
    else:
        mv = ctx.pick("cls.mask", {"sol": 60, "float": 30, "tril": 10})
        if mv == "sol":
            m = ctx.call(
                "torch.triu",
                [ctx.call("torch.ones", [n, n], [("dtype", "torch.bool", False)], "cls.ones")],
                [("diagonal", "1", True)],
                "cls.triu",
            )
        elif mv == "float":
            m = ctx.call("torch.triu", [f"torch.ones({n}, {n})"], [("diagonal", "1", True)], "cls.triu")
        else:
            m = "~" + ctx.call(
                "torch.tril",
                [ctx.call("torch.ones", [n, n], [("dtype", "torch.bool", False)], "cls.ones")],
                [],
                "cls.tril",
            )
    init = ctx.L(f"self.register_buffer('mask', {m})", "mask")

    fv = ctx.pick("cls.fwd", {"sol": 55, "book": 20, "compact": 8, "where": 7, "wrong": 4})
    q, k, vv, s, w, c = (ctx.n(x) for x in ("ql", "kl", "vl", "sl", "wl", "cl"))
    b, nt, dl = ctx.n("bl"), ctx.n("nt"), ctx.n("dl")
    head = (
        f"{b}, {nt}, {dl} = x.shape"
        if ctx.pick("cls.unpack", {"full": 3, "shape1": 1}) == "full"
        else f"{nt} = x.shape[1]"
    )
    maskref = f"self.mask[:{nt}, :{nt}]" if mv != "float" else f"self.mask.bool()[:{nt}, :{nt}]"
    inf = _fill_inf(ctx)
    order = ctx.perm("cls.order", [k, q, vv], 0.6)
    proj = {q: "self.W_query", k: "self.W_key", vv: "self.W_value"}
    lines = [head]
    if fv == "compact":
        sc = ctx.mm("self.W_query(x)", "self.W_key(x)", "cls.mm", kind="bmm", bt=True)
        lines.append(ctx.L(f"{s} = {P(sc)}.masked_fill({maskref}, {inf})", "class"))
        lines.append(f"{w} = self.dropout({_ssm(ctx, s, 'self.d_out', rank=3)})")
        lines.append(f"return {ctx.mm(w, 'self.W_value(x)', 'cls.mm', kind='bmm')}")
        body = "\n".join(lines)
    else:
        for nme in order:
            lines.append(ctx.L(f"{nme} = {proj[nme]}(x)", "class" if nme == order[0] else None))
        if ctx.blank_habit:
            lines.append("")
        lines.append(f"{s} = {ctx.mm(q, k, 'cls.mm', kind='bmm', bt=True)}")
        if fv == "book":
            lines.append(ctx.L(f"{s}.masked_fill_({maskref}, {inf})", "masked"))
        elif fv == "where":
            lines.append(ctx.L(f"{s} = torch.where({maskref}, torch.tensor(float('-inf')), {s})", "masked"))
        else:
            lines.append(
                ctx.L(f"{s} = " + ctx.call(f"{s}.masked_fill", [maskref], [("value", inf, True)], "msk.kw"), "masked")
            )
        dk = ctx.pick("cls.dk", {f"{k}.shape[-1]": 5, "self.d_out": 2, f"{k}.size(-1)": 1})
        if fv == "wrong":
            lines.append(f"{w} = " + ctx.call("torch.softmax", [s], [("dim", "-1", True)], "sm.kw"))
        else:
            lines.append(ctx.L(f"{w} = {_ssm(ctx, s, dk, rank=3)}", "scale"))
        lines.append(ctx.L(f"{w} = self.dropout({w})", "dropout"))
        if ctx.blank_habit:
            lines.append("")
        if ctx.pick("cls.ret", {"var": 3, "direct": 2}) == "var":
            lines += [f"{c} = {ctx.mm(w, vv, 'cls.mm', kind='bmm')}", f"return {c}"]
        else:
            lines.append(f"return {ctx.mm(w, vv, 'cls.mm', kind='bmm')}")
        body = "\n".join(lines)
    return {"blanks": [init, body]}


def f_cvecs(ctx):
    v = ctx.pick("cvecs", {"call": 94, "forward": 6})
    return {"blanks": ["context_vecs = ca(batch)" if v == "call" else "context_vecs = ca.forward(batch)"]}


def f_mha(ctx):
    hv = ctx.pick("mha.heads", {"comp": 70, "loop": 20, "list": 6})
    args = ctx.call(
        "CausalAttention", ["d_in", "d_out", "context_length", "dropout"], [("qkv_bias", "qkv_bias", True)], "mha.kw"
    )
    if hv == "comp":
        heads = ctx.L(f"self.heads = nn.ModuleList([{args} for _ in range(num_heads)])", "heads")
    elif hv == "loop":
        heads = "\n".join(
            [
                "self.heads = nn.ModuleList()",
                ctx.L(f"for _ in range(num_heads):\n    self.heads.append({args})", "heads"),
            ]
        )
    else:
        heads = "\n".join(
            [f"heads = [{args} for _ in range(num_heads)]", ctx.L("self.heads = nn.ModuleList(heads)", "heads")]
        )
    fv = ctx.pick("mha.fwd", {"comp": 74, "loop": 15, "concat": 5, "wrong": 3})
    h, outs = ctx.n("head"), ctx.n("outs")
    if fv == "comp":
        fwd = ctx.L(
            "return " + ctx.call("torch.cat", [f"[{h}(x) for {h} in self.heads]"], [("dim", "-1", True)], "mha.cat"),
            "heads",
        )
    elif fv == "concat":
        fwd = ctx.L(
            "return " + ctx.call("torch.concat", [f"[{h}(x) for {h} in self.heads]"], [("dim", "-1", True)], "mha.cat"),
            "heads",
        )
    elif fv == "wrong":
        fwd = ctx.L(
            "return " + ctx.call("torch.cat", [f"[{h}(x) for {h} in self.heads]"], [("dim", "1", True)], "mha.cat"),
            "heads",
        )
    else:
        fwd = "\n".join(
            [
                f"{outs} = []",
                f"for {h} in self.heads:\n    {outs}.append({h}(x))",
                ctx.L("return " + ctx.call("torch.cat", [outs], [("dim", "-1", True)], "mha.cat"), "heads"),
            ]
        )
    return {"blanks": [heads, fwd]}


def f_mha_out(ctx):
    v = ctx.pick("mhao", {"call": 95, "forward": 5})
    return {"blanks": ["context_vecs_mha = mha(batch)" if v == "call" else "context_vecs_mha = mha.forward(batch)"]}


FILLERS = [
    f_as2,
    f_nor2,
    f_ctx2,
    f_as,
    f_nor,
    f_cvec,
    f_qkv2,
    f_kv,
    f_as2b,
    f_aw2,
    f_cv2,
    f_fwd,
    f_causal_qs,
    f_mask,
    f_masked,
    f_cw,
    f_cc,
    f_drop,
    f_causal_class,
    f_cvecs,
    f_mha,
    f_mha_out,
]


# ----------------------------------------------------------------------------------------------
# explore cells
# ----------------------------------------------------------------------------------------------

WORDS = "['Your', 'journey', 'starts', 'with', 'one', 'step']"


def x_heatmap(ctx):
    target = ctx.pick("x.heat.t", {"nor_attn": 5, "attn_scores": 1})
    words, fig, ax = ctx.n("words"), ctx.n("fig"), ctx.n("ax")
    lines = [ctx.L("import matplotlib.pyplot as plt", "plot"), f"{words} = {WORDS}"]
    api = ctx.pick("x.heat.api", {"plt": 5, "oo": 4, "matshow": 2})
    cmap = ctx.pick("x.heat.cmap", {"": 4, "viridis": 2, "Blues": 2, "magma": 1})
    cm = f", cmap='{cmap}'" if cmap else ""
    if api == "oo":
        lines += [
            f"{fig}, {ax} = plt.subplots()",
            f"{ax}.imshow({target}.detach().numpy(){cm})",
            f"{ax}.set_xticks(range(6))",
            f"{ax}.set_xticklabels({words}, rotation=45)",
            f"{ax}.set_yticks(range(6))",
            f"{ax}.set_yticklabels({words})",
        ]
    else:
        lines.append(f"plt.{'imshow' if api == 'plt' else 'matshow'}({target}{cm})")
        if ctx.chance("x.heat.ticks", 0.6):
            lines += [f"plt.xticks(range(6), {words}, rotation=45)", f"plt.yticks(range(6), {words})"]
        if ctx.chance("x.heat.cbar", 0.6):
            lines.append("plt.colorbar()")
    if ctx.chance("x.heat.title", 0.6):
        lines.append(
            f"plt.title('{ctx.pick('x.heat.tt', {'Attention weights': 3, 'Causal attention': 1, 'softmax(scores)': 1})}')"
        )
    lines.append("plt.show()")
    return "\n".join(lines)


def x_causal_heat(ctx):
    words = ctx.n("words")
    lines = [
        ctx.L("import matplotlib.pyplot as plt", "plot"),
        f"{words} = {WORDS}",
        "plt.imshow(causal_weights"
        + (".detach()" if ctx.chance("x.ch.det", 0.5) else "")
        + ", cmap='"
        + ctx.pick("x.ch.cm", {"viridis": 2, "Blues": 2, "gray": 1})
        + "')",
        f"plt.xticks(range(6), {words})",
        f"plt.yticks(range(6), {words})",
    ]
    if ctx.chance("x.ch.t", 0.6):
        lines.append("plt.title('Causal attention weights')")
    lines.append("plt.show()")
    return "\n".join(lines)


def x_rowsum(ctx):
    return ctx.L(
        ctx.pick(
            "x.rowsum",
            {
                "nor_attn.sum(dim=-1)": 4,
                "torch.allclose(nor_attn.sum(dim=-1), torch.ones(6))": 3,
                "print('Row sums:', nor_attn.sum(dim=-1))": 3,
                "print(nor_attn.sum(dim=1))": 2,
                "row_2_sum = sum([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])\nprint('Row 2 sum:', row_2_sum)": 2,
            },
        ),
        "check",
    )


def x_ctxcheck(ctx):
    return ctx.L(
        ctx.pick(
            "x.ctxchk",
            {
                "torch.allclose(context_vec_2, context_vector[1])": 4,
                "print(context_vector[1], context_vec_2)": 2,
                "assert torch.allclose(context_vector[1], context_vec_2, atol=1e-4)": 1,
                "print('Previous 2nd context vector:', context_vec_2)": 2,
            },
        ),
        "check",
    )


def x_naive(ctx):
    f, x = ctx.n("naive"), ctx.n("ssm_s")
    lines = [
        ctx.L(f"def {f}({x}):\n    return torch.exp({x}) / torch.exp({x}).sum(dim=0)", "explore"),
        f"print({f}(attn_scores_2))",
    ]
    if ctx.chance("x.naive.cmp", 0.6):
        lines.append(
            ctx.pick(
                "x.naive.c",
                {
                    "print(torch.softmax(attn_scores_2, dim=0))": 3,
                    f"print(torch.allclose({f}(attn_scores_2), torch.softmax(attn_scores_2, dim=0)))": 2,
                },
            )
        )
    if ctx.chance("x.naive.sum", 0.4):
        lines.append(f"print({f}(attn_scores_2).sum())")
    return "\n".join(lines)


def x_tril(ctx):
    sm, ms, rs, msn = ctx.n("simple"), ctx.n("ms"), ctx.n("rs"), ctx.n("msn")
    fw = ctx.pick("x.tril.w", {"full": 1, "sm": 1})
    lines = []
    src = "nor_attn"
    if fw == "full":
        src = "torch.softmax(scores / d_k**0.5, dim=-1)"
    lines += [
        ctx.L(f"{sm} = torch.tril(torch.ones(context_length, context_length))", "explore"),
        f"{ms} = {P(src)} * {sm}",
    ]
    if ctx.chance("x.tril.print", 0.5):
        lines.append(f"print({ms})")
    lines += [
        f"{rs} = " + ctx.call(f"{ms}.sum", [], [("dim", "-1", True), ("keepdim", "True", False)], "x.tril.kw"),
        f"{msn} = {ms} / {rs}",
        f"print({msn})",
    ]
    return "\n".join(lines)


def x_v2(ctx):
    cls, inst = ctx.n("g:sa2"), ctx.n("sa2i")
    q, k, v, s, w = (ctx.n(x) for x in ("ql", "kl", "vl", "sl", "wl"))
    bias = ctx.call("nn.Linear", ["d_in", "d_out"], [("bias", "qkv_bias", True)], "x.v2.kw")
    body = "\n".join(
        [
            f"class {cls}(nn.Module):",
            "    def __init__(self, d_in, d_out, qkv_bias=False):",
            "        super().__init__()",
            f"        self.W_query = {bias}",
            f"        self.W_key = {bias}",
            f"        self.W_value = {bias}",
            "",
            "    def forward(self, x):",
            f"        {k} = self.W_key(x)",
            f"        {q} = self.W_query(x)",
            f"        {v} = self.W_value(x)",
            f"        {s} = {ctx.mm(q, k, 'x.v2.mm', bt=True)}",
            f"        {w} = torch.softmax({s} / {k}.shape[-1]**0.5, dim=-1)",
            f"        return {ctx.mm(w, v, 'x.v2.mm')}",
            "",
            "torch.manual_seed(789)",
            f"{inst} = {cls}(d_in, d_out)",
            f"print({inst}(inputs))",
        ]
    )
    return ctx.L(body, "explore")


def x_eval(ctx):
    return ctx.L(
        ctx.pick(
            "x.eval",
            {
                "ca.eval()\nprint(ca(batch))\nca.train()": 3,
                "with torch.no_grad():\n    print(ca(batch))": 2,
                "print(ca.mask)": 2,
            },
        ),
        "explore",
    )


def x_shorter(ctx):
    return ctx.L(
        ctx.pick(
            "x.short",
            {
                "print(ca(batch[:, :4]).shape)": 3,
                "short = torch.rand(1, 3, 3)\nprint(ca(short))": 2,
                "print(ca(inputs[:4].unsqueeze(0)))": 2,
            },
        ),
        "explore",
    )


def x_nparams(ctx):
    n = ctx.n("npar")
    return "\n".join(
        [ctx.L(f"{n} = sum(p.numel() for p in mha.parameters())", "explore"), f"print({n})"]
        + (["print(mha)"] if ctx.chance("x.np.print", 0.4) else [])
    )


def x_argmax(ctx):
    words, wd, r = ctx.n("words"), ctx.n("wl2"), ctx.n("rl")
    return "\n".join(
        [
            f"{words} = {WORDS}",
            ctx.L(f"for {wd}, {r} in zip({words}, nor_attn):\n    print({wd}, '->', {words}[{r}.argmax()])", "explore"),
        ]
    )


def x_printopts(ctx):
    return ctx.pick(
        "x.po",
        {
            "torch.set_printoptions(precision=4, sci_mode=False)": 4,
            "torch.set_printoptions(precision=3)": 2,
            "torch.set_printoptions(sci_mode=False)": 2,
        },
    )


def x_shapes(ctx):
    return ctx.L(
        ctx.pick(
            "x.shapes",
            {
                "print(inputs.shape, W_query.shape, keys.shape, values.shape)": 3,
                "print(query_2.shape, keys.shape)": 2,
                "for t in (query_2, key_2, value_2):\n    print(t.shape)": 1,
            },
        ),
        "check",
    )


def x_dropcount(ctx):
    return ctx.L(
        ctx.pick(
            "x.dc",
            {
                "print((dropped_weights == 0).sum())": 3,
                "print(dropped_weights.sum(dim=-1))": 2,
                "print(torch.count_nonzero(dropped_weights))": 1,
            },
        ),
        "explore",
    )


EXPLORES = [
    ("heatmap", 30, 4, x_heatmap),
    ("rowsum", 30, 4, x_rowsum),
    ("causal_heat", 12, 15, x_causal_heat),
    ("ctxcheck", 22, 5, x_ctxcheck),
    ("naive", 14, 1, x_naive),
    ("tril", 16, 15, x_tril),
    ("v2", 10, 11, x_v2),
    ("eval", 9, 19, x_eval),
    ("shorter", 8, 19, x_shorter),
    ("nparams", 8, 21, x_nparams),
    ("argmax", 10, 4, x_argmax),
    ("printopts", 15, -1, x_printopts),
    ("shapes", 14, 7, x_shapes),
    ("dropcount", 8, 17, x_dropcount),
]
MD_TOPICS = [("dot", 0), ("softmax", 4), ("mask", 14), ("dropout", 17), ("heads", 20)]
