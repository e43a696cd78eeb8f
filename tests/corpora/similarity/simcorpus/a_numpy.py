"""attention_numpy: students' ways of filling the skeleton, and their explore cells."""

from __future__ import annotations

from .core import P

NAME = "attention_numpy"
LIB = "np"

OPS = {"@": 62, "dot": 18, "matmul": 9, "method": 6, "einsum": 5}
OP_SWAP = ["@", "dot", "matmul"]
TR2 = {".T": 82, "transpose": 11, "np.transpose": 7}
TR3 = TR2

# disjoint pools: first entry is the most common name
NAMES = {
    "e": ["e_x", "exps", "e", "ex", "exp_x", "numer", "exp_vals", "ez", "expd"],
    "tot": ["total", "s", "denom", "summ", "Z", "sum_e", "tot", "norm_const"],
    "m": ["m", "mx", "x_max", "max_val", "shift", "c"],
    "row": ["row", "r", "s_row", "vec", "line", "srow"],
    "i": ["i", "idx", "t", "ii", "n_i", "row_i"],
    "j": ["j", "jdx", "col", "jj", "c_j"],
    "w": ["w", "a", "alpha", "wt", "p"],
    "v": ["v", "val", "v_j", "vv", "value"],
    "proj": ["project", "proj", "linear", "transform", "apply_weights", "lin"],
    "scale": ["scale", "scale_scores", "scaled", "do_scale", "scale_by_dk"],
    "rows": ["softmax_rows", "row_softmax", "softmax2d", "apply_softmax", "softmax_each_row", "rowwise_softmax"],
    "attend": ["attend", "weighted_sum", "combine", "mix_values", "apply_attention"],
    "Wl": ["W", "w_mat", "M", "weights", "Wm"],
    "xl": ["x_tok", "x_i", "tok", "xi", "emb"],
    "pa": ["inp", "a_in", "X_in", "mat", "A"],
    "pb": ["wgt", "b_w", "W_in", "B", "kernel"],
    "sa_in": ["sco", "sc", "raw", "s_in", "mat_in"],
    "sd_in": ["dk", "d", "dim", "d_key", "kdim"],
    "n": ["n", "n_tokens", "seq_len", "L", "num", "T"],
    "sq": ["sqrt_dk", "scale_factor", "denom_dk", "root", "sq"],
    "ex_s": ["xs", "vals", "lst", "items", "v_list"],
    "fig": ["fig", "f", "figure"],
    "ax": ["ax", "axes", "a_x", "axis_"],
    "im": ["im", "img", "hm", "cax", "mappable"],
    "big": ["big", "large", "huge", "x_big", "test_vec", "extreme"],
    "rng": ["rng", "gen", "random_state", "g"],
    "X2": ["X2", "X_test", "X_rand", "X_new", "inp2"],
    "Q2": ["Q2", "Q_t", "Qr", "q_new"],
    "K2": ["K2", "K_t", "Kr", "k_new"],
    "V2": ["V2", "V_t", "Vr", "v_new"],
    "w2": ["w2", "A2", "weights2", "att2", "W_att"],
    "o2": ["out2", "O2", "res2", "y2"],
    "sa": ["self_attention", "attention", "self_attn", "my_attention", "sa"],
    "tokl": ["tok_", "word", "token", "name_"],
    "rowl": ["wrow", "weights_row", "r_w", "att_row"],
    "nm": ["name", "label", "key_", "lbl"],
    "Ml": ["mat_", "arr", "M_", "value_"],
    "ent": ["entropy", "ent", "H", "h_row"],
    "man": ["manual", "by_hand", "check_val", "hand"],
    "naive": ["naive", "plain", "unstable", "no_shift"],
    "unsc": ["unscaled", "w_raw", "raw_w", "w_unscaled"],
}

TOPICS = {
    "generic": ["compute it", "this part", "as in the notes", "matrix form", "shapes line up"],
    "qkv": [
        "project X into queries, keys and values",
        "multiply by the transposed weights",
        "one row per token",
        "Q = X W_q^T",
        "linear projections",
        "queries keys values",
        "apply the weight matrices",
        "transpose so shapes work",
    ],
    "scores": [
        "every query against every key",
        "dot products between queries and keys",
        "scores = Q K^T",
        "attention scores",
        "similarity of each token pair",
        "(3x2) @ (2x3) -> (3x3)",
    ],
    "scale": [
        "divide by sqrt of d_k",
        "scale so softmax doesn't saturate",
        "scaling step",
        "normalise by sqrt(d_k)",
        "keep variance in check",
    ],
    "softmax": [
        "subtract the max for numerical stability",
        "stable softmax",
        "exponentiate",
        "normalise so it sums to 1",
        "avoid overflow in exp",
        "softmax of a vector",
        "max trick",
    ],
    "weights": [
        "softmax on each row",
        "row-wise softmax",
        "each row sums to one",
        "apply softmax to every token's scores",
        "attention weights",
    ],
    "output": [
        "weighted sum of the values",
        "mix the values",
        "output = weights @ V",
        "final step",
        "combine value vectors",
    ],
    "check": [
        "sanity check",
        "rows should sum to 1",
        "check shapes",
        "quick test",
        "make sure it works",
        "debug print",
    ],
    "plot": ["visualise the weights", "heatmap", "plot it", "look at the attention pattern"],
    "explore": [
        "try something else",
        "experiment",
        "just curious",
        "playing around",
        "check with other inputs",
        "extra",
    ],
}

MD = {
    "qkv": [
        "I multiply by the transpose of each weight matrix so every token gets one row.",
        "Q, K and V are just three linear maps of the same X.",
        "The shapes are (3, 2) for all of them.",
        "Forgot the transpose at first and got different numbers.",
    ],
    "softmax": [
        "Subtracting the max does not change the result because it cancels out.",
        "Without the max trick exp(1000) overflows to inf.",
        "My softmax works on one vector at a time.",
        "Each row of the weights is a probability distribution.",
    ],
    "output": [
        "The output for each token is a mix of the value vectors.",
        "Batman attends mostly to itself.",
        "Row 2 (am) is all zeros in X so its query is zero and its weights are uniform.",
    ],
    "scale": [
        "Scaling by sqrt(d_k) keeps the scores from growing with the dimension.",
        "With d_k = 2 the scaling is small but it matters for big models.",
    ],
}

FILL_CELLS = [7, 11, 14, 17, 20]  # skeleton cells with blanks, in order (anchor 0..4)
GRADED = ["Q", "K", "V", "scores", "scaled_scores", "attention_weights", "output"]
ALGO_PAIR = (
    {"sm": "loop", "aw": "loop", "sm.loop": "for"},
    {"sm": "matrix", "aw": "direct"},
    "softmax / attention weights: pure-Python loops vs a vectorised matrix softmax",
)


def render_mm(ctx, a, b, site, kind, bt):
    op = ctx.op_at(site)
    if op == "einsum":
        subs = {
            ("mm", False): "ij,jk->ik",
            ("mm", True): "ij,kj->ik",
            ("mv", False): "ij,j->i",
            ("vm", False): "i,ij->j",
            ("vv", False): "i,i->",
        }[(kind, bt)]
        return f"np.einsum('{subs}', {a}, {b})"
    if bt:
        b = ctx.tr(b, site)
    if op == "@":
        return f"{P(a)} @ {P(b)}"
    if op == "dot":
        return f"np.dot({a}, {b})"
    if op == "matmul":
        return f"np.matmul({a}, {b})"
    return f"{P(a)}.dot({b})"


def render_tr(ctx, a, t, site):
    if t == ".T":
        return f"{P(a)}.T"
    if t == "transpose":
        return f"{P(a)}.transpose()"
    return f"np.transpose({a})"


# ----------------------------------------------------------------------------------------------
# blanks
# ----------------------------------------------------------------------------------------------


def f_qkv(ctx):
    v = ctx.pick("qkv", {"mat": 66, "wT": 4, "listcomp": 6, "gen": 6, "wrong": 7, "loops": 4, "sep_T": 7})
    W = {"Q": "W_q", "K": "W_k", "V": "W_v"}
    order = ctx.perm("qkv.order", ["Q", "K", "V"], 0.92)
    helper = v in ("mat", "wT", "wrong") and ctx.helper("qkv.helper", 0.12)
    pre = []

    def expr(x, w):
        if v == "mat":
            return ctx.mm(x, w, "qkv.mm", bt=True)
        if v == "wT":
            return ctx.tr(ctx.mm(w, ctx.tr(x, "qkv.tr2"), "qkv.mm"), "qkv.tr3")
        if v == "wrong":
            return ctx.mm(x, w, "qkv.mm")
        raise AssertionError

    blocks = {}
    if v in ("mat", "wT", "wrong"):
        if helper:
            f, pa, pb = ctx.n("g:proj"), ctx.n("pa"), ctx.n("pb")
            pre.append(ctx.L(f"def {f}({pa}, {pb}):\n    return {expr(pa, pb)}", "qkv"))
            for k in order:
                blocks[k] = ctx.L(f"{k} = {f}(X, {W[k]})", None)
        else:
            for k in order:
                blocks[k] = ctx.L(f"{k} = {expr('X', W[k])}", "qkv" if k == order[0] else None)
        lines = pre + [blocks[k] for k in order]
    elif v == "sep_T":
        # transpose the weights first, into their own names
        lines = []
        tn = {k: W[k] + ctx.pick("qkv.sep_T.suffix", {"_T": 6, "T": 2, "_t": 2}) for k in W}
        for k in order:
            lines.append(f"{tn[k]} = {ctx.tr(W[k], 'qkv.tr')}")
        for k in order:
            lines.append(ctx.L(f"{k} = {ctx.mm('X', tn[k], 'qkv.mm')}", "qkv" if k == order[0] else None))
    elif v == "listcomp":
        xl = ctx.n("xl")
        lines = [
            ctx.L(
                f"{k} = np.array([{ctx.mm(W[k], xl, 'qkv.mm', kind='mv')} for {xl} in X])",
                "qkv" if k == order[0] else None,
            )
            for k in order
        ]
    elif v == "gen":
        Wl = ctx.n("Wl")
        br = ctx.pick("qkv.gen.br", {"(": 1, "[": 1})
        inner = f"{ctx.mm('X', Wl, 'qkv.mm', bt=True)} for {Wl} in {br}W_q, W_k, W_v{')' if br == '(' else ']'}"
        lines = [ctx.L(f"Q, K, V = {br}{inner}{')' if br == '(' else ']'}", "qkv")]
        order = ["Q", "K", "V"]
    else:  # loops
        n, i = ctx.n("n"), ctx.n("i")
        lines = [f"{n} = X.shape[0]"]
        for k in order:
            lines.append(f"{k} = np.zeros(({n}, {W[k]}.shape[0]))")
        body = [f"    {k}[{i}] = {ctx.mm(W[k], f'X[{i}]', 'qkv.mm', kind='mv')}" for k in order]
        lines.append(ctx.L(f"for {i} in range({n}):\n" + "\n".join(body), "qkv"))
    if ctx.chance("qkv.print", 0.22):
        lines.append(
            ctx.L(
                ctx.pick(
                    "qkv.print.f",
                    {
                        "print(Q.shape, K.shape, V.shape)": 5,
                        "print(Q)\nprint(K)\nprint(V)": 3,
                        "print('Q', Q.shape)": 1,
                        "assert Q.shape == K.shape == V.shape": 2,
                    },
                ),
                "check",
            )
        )
    return {"blanks": ["\n".join(lines), None, None]}


def f_scores(ctx):
    v = ctx.pick("scores", {"mat": 70, "inner": 4, "loops": 8, "listcomp": 6, "broadcast": 3, "wrong": 5})
    if v == "mat":
        code = ctx.L(f"scores = {ctx.mm('Q', 'K', 'scores.mm', bt=True)}", "scores")
    elif v == "wrong":
        code = ctx.L(f"scores = {ctx.mm('K', 'Q', 'scores.mm', bt=True)}", "scores")
    elif v == "inner":
        code = ctx.L("scores = np.inner(Q, K)", "scores")
    elif v == "listcomp":
        q, k = ctx.n("row"), ctx.n("v")
        code = ctx.L(
            f"scores = np.array([[{ctx.mm(q, k, 'scores.mm', kind='vv')} for {k} in K] for {q} in Q])", "scores"
        )
    elif v == "broadcast":
        code = ctx.L(
            "scores = " + ctx.call("(Q[:, None, :] * K[None, :, :]).sum", [], [("axis", "-1", True)], "scores.kw"),
            "scores",
        )
    else:
        i, j = ctx.n("i"), ctx.n("j")
        alloc = ctx.pick("scores.alloc", {"zeros": 5, "empty": 2, "zeros_shape": 3})
        a = {
            "zeros": "np.zeros((Q.shape[0], K.shape[0]))",
            "empty": "np.empty((len(Q), len(K)))",
            "zeros_shape": "np.zeros((3, 3))",
        }[alloc]
        el = ctx.pick("scores.el", {"mm": 6, "sum": 3})
        e = ctx.mm(f"Q[{i}]", f"K[{j}]", "scores.mm", kind="vv") if el == "mm" else f"np.sum(Q[{i}] * K[{j}])"
        code = "\n".join(
            [
                f"scores = {a}",
                ctx.L(
                    f"for {i} in range(len(Q)):\n    for {j} in range(len(K)):\n        scores[{i}, {j}] = {e}",
                    "scores",
                ),
            ]
        )
    if ctx.chance("scores.print", 0.15):
        code += "\n" + ctx.pick("scores.print.f", {"print(scores.shape)": 3, "print(scores)": 2})
    return {"blanks": [code]}


def f_scaled(ctx):
    v = ctx.pick(
        "scaled",
        {
            "sqrt": 50,
            "pow": 18,
            "math": 7,
            "mul": 5,
            "divide": 4,
            "tmp": 6,
            "wrong_dk": 5,
            "wrong_none": 3,
            "kshape": 5,
        },
    )
    helper = v in ("sqrt", "pow", "math", "divide") and ctx.helper("scaled.helper", 0.08)
    pre = []
    if v == "math":
        pre.append("import math")
    den = {"sqrt": "np.sqrt(d_k)", "pow": "d_k ** 0.5", "math": "math.sqrt(d_k)", "divide": "np.sqrt(d_k)"}.get(v)
    if helper:
        f, a, d = ctx.n("g:scale"), ctx.n("sa_in"), ctx.n("sd_in")
        dd = den.replace("d_k", d)
        body = f"np.divide({a}, {dd})" if v == "divide" else f"{a} / {dd}"
        pre.append(ctx.L(f"def {f}({a}, {d}):\n    return {body}", "scale"))
        line = f"scaled_scores = {f}(scores, d_k)"
    elif v in ("sqrt", "pow", "math"):
        line = f"scaled_scores = scores / {P(den) if v == 'pow' and ctx.chance('scaled.paren', 0.4) else den}"
    elif v == "divide":
        line = "scaled_scores = np.divide(scores, np.sqrt(d_k))"
    elif v == "mul":
        line = "scaled_scores = scores * " + ctx.pick("scaled.mul", {"(1 / np.sqrt(d_k))": 3, "d_k ** -0.5": 1})
    elif v == "tmp":
        sq = ctx.n("sq")
        pre.append(f"{sq} = " + ctx.pick("scaled.tmp", {"np.sqrt(d_k)": 3, "d_k ** 0.5": 1}))
        line = f"scaled_scores = scores / {sq}"
    elif v == "kshape":
        line = "scaled_scores = scores / np.sqrt(K.shape[-1])"
    elif v == "wrong_dk":
        line = "scaled_scores = scores / d_k"
    else:
        line = "scaled_scores = scores"
    code = "\n".join(pre + [ctx.L(line, "scale")])
    if ctx.chance("scaled.print", 0.12):
        code += "\nprint(d_k)"
    return {"blanks": [code]}


def _softmax_body(ctx, v):
    e, tot, m = ctx.n("e"), ctx.n("tot"), ctx.n("m")
    if v == "sol":
        mx = ctx.pick("sm.max", {"np.max(x)": 5, "x.max()": 3, "max(x)": 1})
        sm = ctx.pick("sm.sum", {"np": 4, "method": 3, "np_kw": 3, "method_kw": 2})
        s = {
            "np": f"np.sum({e})",
            "method": f"{e}.sum()",
            "np_kw": ctx.call("np.sum", [e], [("axis", "-1", True), ("keepdims", "True", False)], "sm.kw"),
            "method_kw": ctx.call(f"{e}.sum", [], [("axis", "-1", True), ("keepdims", "True", False)], "sm.kw"),
        }[sm]
        return [ctx.L(f"{e} = np.exp(x - {mx})", "softmax"), ctx.L(f"return {e} / {s}", "softmax")]
    if v == "nomax":
        if ctx.chance("sm.nomax.one", 0.4):
            return [ctx.L("return np.exp(x) / np.sum(np.exp(x))", "softmax")]
        return [f"{e} = np.exp(x)", ctx.L(f"return {e} / {e}.sum()", "softmax")]
    if v == "oneliner":
        return [ctx.L("return np.exp(x - np.max(x)) / np.sum(np.exp(x - np.max(x)))", "softmax")]
    if v == "matrix":
        mcall = ctx.call("np.max", ["x"], [("axis", "-1", True), ("keepdims", "True", False)], "sm.kw")
        scall = ctx.call("np.sum", [e], [("axis", "-1", True), ("keepdims", "True", False)], "sm.kw")
        return [ctx.L(f"{m} = {mcall}", "softmax"), f"{e} = np.exp(x - {m})", ctx.L(f"return {e} / {scall}", "softmax")]
    if v == "expand":
        s = ctx.pick("sm.expand", {f"{e}.sum(axis=-1)[..., None]": 3, f"np.expand_dims({e}.sum(axis=-1), -1)": 2})
        return [ctx.L(f"{e} = np.exp(x - x.max(axis=-1, keepdims=True))", "softmax"), f"return {e} / {s}"]
    if v == "loop":
        vv = ctx.n("v")
        lp = ctx.pick("sm.loop", {"comp": 3, "for": 2})
        if lp == "comp":
            return [
                ctx.L(f"{m} = max(x)", "softmax"),
                f"{e} = [np.exp({vv} - {m}) for {vv} in x]",
                f"{tot} = sum({e})",
                f"return np.array([{vv} / {tot} for {vv} in {e}])",
            ]
        return [
            ctx.L(f"{m} = max(x)", "softmax"),
            f"{e} = []",
            f"for {vv} in x:\n    {e}.append(np.exp({vv} - {m}))",
            f"{tot} = 0.0",
            f"for {vv} in {e}:\n    {tot} += {vv}",
            f"return np.array({e}) / {tot}",
        ]
    if v == "logsumexp":
        return [ctx.L("return np.exp(x - np.log(np.sum(np.exp(x))))", "softmax")]
    if v == "tmp_shift":
        sh = ctx.n("m")
        return [
            f"{sh} = x - np.max(x)",
            f"{e} = np.exp({sh})",
            f"{tot} = np.sum({e})",
            ctx.L(f"return {e} / {tot}", "softmax"),
        ]
    raise AssertionError(v)


def f_softmax(ctx):
    v = ctx.pick(
        "sm",
        {"sol": 30, "nomax": 16, "oneliner": 8, "matrix": 12, "expand": 4, "loop": 8, "logsumexp": 3, "tmp_shift": 9},
    )
    body = _softmax_body(ctx, v)
    if ctx.blank_habit and len(body) > 2:
        body.insert(len(body) - 1, "")
    matrix_ok = v in ("matrix", "expand") or (v == "sol" and ctx.picks.get("sm.sum") in ("np_kw", "method_kw"))
    aw = ctx.pick(
        "aw",
        {
            "apply": 30,
            "listcomp": 25,
            "direct": 12,
            "loop": 15,
            "vstack": 5,
            "map": 4,
            "wrong_axis0": 4,
            "wrong_unscaled": 3,
        },
    )
    if aw == "direct" and not matrix_ok:
        aw = "listcomp"
        ctx.picks["aw"] = aw
    src = "scores" if aw == "wrong_unscaled" else "scaled_scores"
    helper = aw in ("listcomp", "vstack", "map", "apply") and ctx.helper("aw.helper", 0.08)
    row, i = ctx.n("row"), ctx.n("i")

    def rows_expr(M):
        if aw == "apply" or aw == "wrong_unscaled":
            return ctx.call("np.apply_along_axis", ["softmax"], [("axis", "1", True), ("arr", M, True)], "aw.kw")
        if aw == "wrong_axis0":
            return ctx.call("np.apply_along_axis", ["softmax"], [("axis", "0", True), ("arr", M, True)], "aw.kw")
        if aw == "listcomp":
            return f"np.array([softmax({row}) for {row} in {M}])"
        if aw == "vstack":
            return f"np.vstack([softmax({row}) for {row} in {M}])"
        if aw == "map":
            return f"np.array(list(map(softmax, {M})))"
        raise AssertionError

    after = []
    if aw == "direct":
        after.append(ctx.L("attention_weights = softmax(scaled_scores)", "weights"))
    elif aw == "loop":
        alloc = ctx.pick(
            "aw.alloc",
            {"np.zeros_like(scaled_scores)": 5, "np.zeros(scaled_scores.shape)": 3, "np.empty_like(scaled_scores)": 1},
        )
        style = ctx.pick("aw.loop", {"range": 3, "enumerate": 2})
        after.append(f"attention_weights = {alloc}")
        if style == "range":
            after.append(
                ctx.L(
                    f"for {i} in range(scaled_scores.shape[0]):\n    attention_weights[{i}] = softmax(scaled_scores[{i}])",
                    "weights",
                )
            )
        else:
            after.append(
                ctx.L(
                    f"for {i}, {row} in enumerate(scaled_scores):\n    attention_weights[{i}] = softmax({row})",
                    "weights",
                )
            )
    elif helper:
        f, M = ctx.n("g:rows"), ctx.n("pa")
        after.append(ctx.L(f"def {f}({M}):\n    return {rows_expr(M)}", "weights"))
        after.append(f"attention_weights = {f}({src})")
    else:
        after.append(ctx.L(f"attention_weights = {rows_expr(src)}", "weights"))
    if ctx.chance("aw.check", 0.35):
        chk = ctx.pick(
            "aw.check.f",
            {
                "print(attention_weights.sum(axis=1))": 4,
                "assert np.allclose(attention_weights.sum(axis=-1), 1)": 3,
                "np.allclose(attention_weights.sum(-1), 1)": 2,
                "print(np.allclose(attention_weights.sum(axis=1), np.ones(3)))": 2,
                "print(attention_weights.sum(axis=1), attention_weights.shape)": 1,
            },
        )
        after.append(ctx.L(chk, "check"))
    # the skeleton's cell: def softmax(x):\n    ?\n\nattention_weights = ?
    return {"blanks": ["\n".join(body), "\n".join(after)]}


def f_output(ctx):
    v = ctx.pick("out", {"mat": 72, "loop": 7, "listcomp": 6, "broadcast": 4, "wrong_X": 4, "wrong_T": 3})
    helper = v in ("mat",) and ctx.helper("out.helper", 0.06)
    if v == "mat" and helper:
        f, a, b = ctx.n("g:attend"), ctx.n("pa"), ctx.n("pb")
        code = "\n".join(
            [
                ctx.L(f"def {f}({a}, {b}):\n    return {ctx.mm(a, b, 'out.mm')}", "output"),
                f"output = {f}(attention_weights, V)",
            ]
        )
    elif v == "mat":
        code = ctx.L(f"output = {ctx.mm('attention_weights', 'V', 'out.mm')}", "output")
    elif v == "wrong_X":
        code = ctx.L(f"output = {ctx.mm('attention_weights', 'X', 'out.mm')}", "output")
    elif v == "wrong_T":
        code = ctx.L(f"output = {ctx.mm(ctx.tr('attention_weights', 'out.tr'), 'V', 'out.mm')}", "output")
    elif v == "listcomp":
        w, vv, row = ctx.n("w"), ctx.n("v"), ctx.n("row")
        code = ctx.L(
            f"output = np.array([sum({w} * {vv} for {w}, {vv} in zip({row}, V)) for {row} in attention_weights])",
            "output",
        )
    elif v == "broadcast":
        code = ctx.L(
            "output = "
            + ctx.call("(attention_weights[:, :, None] * V[None, :, :]).sum", [], [("axis", "1", True)], "out.kw"),
            "output",
        )
    else:
        i, j = ctx.n("i"), ctx.n("j")
        code = "\n".join(
            [
                "output = np.zeros((len(tokens), V.shape[1]))",
                ctx.L(
                    f"for {i} in range(len(tokens)):\n    for {j} in range(len(tokens)):\n        output[{i}] += attention_weights[{i}, {j}] * V[{j}]",
                    "output",
                ),
            ]
        )
    if ctx.chance("out.print", 0.12):
        code += "\n" + ctx.pick("out.print.f", {"print(output.shape)": 3, "print(output)": 1})
    return {"blanks": [code]}


FILLERS = [f_qkv, f_scores, f_scaled, f_softmax, f_output]


# ----------------------------------------------------------------------------------------------
# explore cells: (weight, min anchor, function)
# ----------------------------------------------------------------------------------------------


def x_heatmap(ctx):
    api = ctx.pick("x.heat.api", {"plt": 50, "oo": 35, "matshow": 15})
    cmap = ctx.pick("x.heat.cmap", {"": 40, "viridis": 20, "Blues": 15, "hot": 8, "magma": 7, "coolwarm": 10})
    target = ctx.pick("x.heat.target", {"attention_weights": 80, "scaled_scores": 10, "scores": 10})
    cm = f", cmap='{cmap}'" if cmap else ""
    lines = [ctx.L("import matplotlib.pyplot as plt", "plot")]
    fig, ax, im = ctx.n("fig"), ctx.n("ax"), ctx.n("im")
    if api == "oo":
        fs = ", figsize=(4, 4)" if ctx.chance("x.heat.fs", 0.5) else ""
        lines.append(f"{fig}, {ax} = plt.subplots({fs.lstrip(', ')})")
        lines.append(f"{im} = {ax}.imshow({target}{cm})")
        if ctx.chance("x.heat.ticks", 0.6):
            lines += [
                f"{ax}.set_xticks(range(len(tokens)))",
                f"{ax}.set_xticklabels(tokens)",
                f"{ax}.set_yticks(range(len(tokens)))",
                f"{ax}.set_yticklabels(tokens)",
            ]
        if ctx.chance("x.heat.annot", 0.3):
            i, j = ctx.n("i"), ctx.n("j")
            lines.append(
                f"for {i} in range(len(tokens)):\n    for {j} in range(len(tokens)):\n        {ax}.text({j}, {i}, f'{{{target}[{i}, {j}]:.2f}}', ha='center', va='center')"
            )
        if ctx.chance("x.heat.cbar", 0.7):
            lines.append(f"{fig}.colorbar({im}, ax={ax})")
        if ctx.chance("x.heat.title", 0.7):
            lines.append(
                f"{ax}.set_title('{ctx.pick('x.heat.tt', {'Attention weights': 5, 'Self-attention': 2, 'Who attends to whom': 1, 'weights heatmap': 1})}')"
            )
        if ctx.chance("x.heat.lab", 0.4):
            lines += [f"{ax}.set_xlabel('key')", f"{ax}.set_ylabel('query')"]
    else:
        if ctx.chance("x.heat.fs", 0.3):
            lines.append("plt.figure(figsize=(5, 4))")
        lines.append(f"plt.{'imshow' if api == 'plt' else 'matshow'}({target}{cm})")
        if ctx.chance("x.heat.cbar", 0.7):
            lines.append("plt.colorbar()")
        if ctx.chance("x.heat.ticks", 0.55):
            lines += ["plt.xticks(range(3), tokens)", "plt.yticks(range(3), tokens)"]
        if ctx.chance("x.heat.title", 0.7):
            lines.append(
                f"plt.title('{ctx.pick('x.heat.tt', {'Attention weights': 5, 'Self-attention': 2, 'Who attends to whom': 1, 'weights heatmap': 1})}')"
            )
        if ctx.chance("x.heat.lab", 0.35):
            lines += ["plt.xlabel('keys')", "plt.ylabel('queries')"]
    if ctx.chance("x.heat.show", 0.75):
        lines.append("plt.show()")
    return "\n".join(lines)


def x_rowsum(ctx):
    return ctx.L(
        ctx.pick(
            "x.rowsum",
            {
                "attention_weights.sum(axis=1)": 4,
                "np.allclose(attention_weights.sum(-1), 1)": 4,
                "print(attention_weights.sum(axis=-1))": 3,
                "assert np.allclose(attention_weights.sum(axis=1), 1.0)": 2,
                "for row in attention_weights:\n    print(row, row.sum())": 1,
            },
        ),
        "check",
    )


def x_shapes(ctx):
    f = ctx.pick("x.shapes", {"plain": 4, "loop": 2, "fstr": 2})
    if f == "plain":
        return ctx.L("print(X.shape, Q.shape, K.shape, V.shape, scores.shape, output.shape)", "check")
    if f == "loop":
        nm, M = ctx.n("nm"), ctx.n("Ml")
        return ctx.L(
            f"for {nm}, {M} in [('Q', Q), ('K', K), ('V', V), ('scores', scores), ('output', output)]:\n    print({nm}, {M}.shape)",
            "check",
        )
    return ctx.L(
        "print(f'Q {Q.shape}, K {K.shape}, V {V.shape}')\nprint(f'weights {attention_weights.shape}, output {output.shape}')",
        "check",
    )


def x_overflow(ctx):
    big = ctx.n("big")
    vals = ctx.pick(
        "x.of.vals",
        {"[1000.0, 1000.0, 999.0]": 3, "[1000, 1001, 1002]": 3, "[710.0, 0.0, -5.0]": 1, "[500.0, 800.0, 1000.0]": 1},
    )
    lines = [ctx.L(f"{big} = np.array({vals})", "explore"), f"print(softmax({big}))"]
    if ctx.chance("x.of.naive", 0.5):
        nv = ctx.n("naive")
        lines += [f"{nv} = np.exp({big}) / np.sum(np.exp({big}))", ctx.L(f"print({nv})", "explore")]
    if ctx.chance("x.of.sum", 0.4):
        lines.append(f"print(softmax({big}).sum())")
    if ctx.chance("x.of.zero", 0.3):
        lines.append("print(softmax(np.zeros(4)))")
    return "\n".join(lines)


def x_random(ctx):
    rng, X2, Q2, K2, V2, w2, o2 = (ctx.n(k) for k in ("rng", "X2", "Q2", "K2", "V2", "w2", "o2"))
    n = ctx.pick("x.rand.n", {"5": 3, "4": 2, "6": 1, "10": 1})
    gen = ctx.pick("x.rand.gen", {"default_rng": 3, "seed": 2, "rand": 2})
    lines = []
    if gen == "default_rng":
        lines += [
            f"{rng} = np.random.default_rng({ctx.pick('x.rand.s', {'0': 3, '42': 3, '1': 1, '123': 1})})",
            f"{X2} = {rng}.normal(size=({n}, 2))",
        ]
    elif gen == "seed":
        lines += [
            f"np.random.seed({ctx.pick('x.rand.s', {'0': 3, '42': 3, '1': 1, '123': 1})})",
            f"{X2} = np.random.randn({n}, 2)",
        ]
    else:
        lines += [f"{X2} = np.random.rand({n}, 2)"]
    lines[0] = ctx.L(lines[0], "explore")
    lines += [
        f"{Q2} = {ctx.mm(X2, 'W_q', 'x.rand.mm', bt=True)}",
        f"{K2} = {ctx.mm(X2, 'W_k', 'x.rand.mm', bt=True)}",
        f"{V2} = {ctx.mm(X2, 'W_v', 'x.rand.mm', bt=True)}",
    ]
    sc = f"{ctx.mm(Q2, K2, 'x.rand.mm', bt=True)} / np.sqrt(d_k)"
    row = ctx.n("row")
    if ctx.chance("x.rand.apply", 0.5):
        lines.append(
            f"{w2} = "
            + ctx.call("np.apply_along_axis", ["softmax"], [("axis", "1", True), ("arr", sc, True)], "x.rand.kw")
        )
    else:
        lines.append(f"{w2} = np.array([softmax({row}) for {row} in {sc}])")
    lines.append(f"{o2} = {ctx.mm(w2, V2, 'x.rand.mm')}")
    lines.append(ctx.pick("x.rand.p", {f"print({o2}.shape)": 3, f"print({w2}.sum(axis=1))": 2, f"print({o2})": 1}))
    return "\n".join(lines)


def x_library(ctx):
    lines = [ctx.L("from scipy.special import softmax as sp_softmax", "check")]
    lines.append(
        ctx.pick(
            "x.lib.f",
            {
                "print(np.allclose(attention_weights, sp_softmax(scaled_scores, axis=1)))": 3,
                "assert np.allclose(softmax(np.array([1.0, 2.0, 3.0])), sp_softmax([1.0, 2.0, 3.0]))": 2,
                "sp_softmax(scaled_scores, axis=-1) - attention_weights": 1,
            },
        )
    )
    return "\n".join(lines)


def x_pertoken(ctx):
    t, r = ctx.n("tokl"), ctx.n("rowl")
    f = ctx.pick("x.tok.f", {"round": 3, "fmt": 2, "argmax": 3})
    if f == "round":
        return ctx.L(f"for {t}, {r} in zip(tokens, attention_weights):\n    print({t}, np.round({r}, 3))", "explore")
    if f == "fmt":
        return ctx.L(
            f"for {t}, {r} in zip(tokens, attention_weights):\n    print(f'{{{t}:>8}}: ' + ' '.join(f'{{x:.3f}}' for x in {r}))",
            "explore",
        )
    return ctx.L(
        f"for {t}, {r} in zip(tokens, attention_weights):\n    print({t}, '->', tokens[np.argmax({r})])", "explore"
    )


def x_scaling(ctx):
    un, ent = ctx.n("unsc"), ctx.n("ent")
    lines = [
        ctx.L(f"{un} = np.apply_along_axis(softmax, 1, scores)", "explore"),
        f"print({un})",
        "print(attention_weights)",
    ]
    if ctx.chance("x.scal.ent", 0.5):
        lines += [f"{ent} = -(attention_weights * np.log(attention_weights)).sum(axis=1)", f"print({ent})"]
    if ctx.chance("x.scal.diff", 0.4):
        lines.append(f"print(np.abs({un} - attention_weights).max())")
    return "\n".join(lines)


def x_wrapup(ctx):
    sa = ctx.n("g:sa")
    q, k, v2, w2 = ctx.n("Q2"), ctx.n("K2"), ctx.n("V2"), ctx.n("w2")
    body = [
        f"{q} = {ctx.mm('X_', 'Wq', 'x.wrap.mm', bt=True)}",
        f"{k} = {ctx.mm('X_', 'Wk', 'x.wrap.mm', bt=True)}",
        f"{v2} = {ctx.mm('X_', 'Wv', 'x.wrap.mm', bt=True)}",
    ]
    row = ctx.n("row")
    sc = f"{ctx.mm(q, k, 'x.wrap.mm', bt=True)} / np.sqrt({k}.shape[1])"
    if ctx.chance("x.wrap.apply", 0.5):
        body.append(f"{w2} = np.apply_along_axis(softmax, 1, {sc})")
    else:
        body.append(f"{w2} = np.array([softmax({row}) for {row} in {sc}])")
    body.append(f"return {ctx.mm(w2, v2, 'x.wrap.mm')}")
    lines = [ctx.L(f"def {sa}(X_, Wq, Wk, Wv):\n" + "\n".join("    " + b for b in body), "explore")]
    lines.append(
        ctx.pick(
            "x.wrap.chk",
            {
                f"print(np.allclose({sa}(X, W_q, W_k, W_v), output))": 3,
                f"assert np.allclose({sa}(X, W_q, W_k, W_v), output)": 2,
                f"{sa}(X, W_q, W_k, W_v)": 1,
            },
        )
    )
    return "\n".join(lines)


def x_manual(ctx):
    man = ctx.n("man")
    f = ctx.pick("x.man.f", {"dot": 3, "sum": 2})
    e = "np.dot(Q[0], K[2])" if f == "dot" else "np.sum(Q[0] * K[2])"
    return "\n".join(
        [ctx.L(f"{man} = {e}", "check"), f"print({man}, scores[0, 2])"]
        + ([f"print(np.isclose({man}, scores[0, 2]))"] if ctx.chance("x.man.isclose", 0.5) else [])
    )


def x_printopts(ctx):
    return ctx.pick(
        "x.po",
        {
            "np.set_printoptions(precision=3, suppress=True)": 5,
            "np.set_printoptions(precision=4)": 2,
            "np.set_printoptions(suppress=True)": 2,
        },
    )


EXPLORES = [
    # key, weight, min anchor (-1: right after the imports), function
    ("heatmap", 40, 3, x_heatmap),
    ("rowsum", 30, 3, x_rowsum),
    ("shapes", 22, 4, x_shapes),
    ("overflow", 14, 3, x_overflow),
    ("random", 12, 3, x_random),
    ("library", 7, 3, x_library),
    ("pertoken", 18, 3, x_pertoken),
    ("scaling", 9, 3, x_scaling),
    ("wrapup", 8, 4, x_wrapup),
    ("manual", 10, 1, x_manual),
    ("printopts", 15, -1, x_printopts),
]
MD_TOPICS = [("qkv", 0), ("scale", 2), ("softmax", 3), ("output", 4)]
IMPORT_CELL = 1
