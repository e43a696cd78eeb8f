"""attention_french cases (15: fix_projections 4, scores 1, weights 2, output 1, all_words 2, self_attention_fn 2, multihead 3)."""

A = "attention_french"

G1 = """import torch
import torch.nn as nn

# Define the vocabulary and embeddings
tokens = ["Le", "chat", "noir", "mange", "la", "souris", "blanche"]

embeddings_dict = {
    "Le": [0.1, 0.2, 0.3],
    "chat": [0.4, 0.5, 0.6],
    "noir": [0.7, 0.8, 0.9],
    "mange": [0.1, 0.4, 0.7],
    "la": [0.1, 0.2, 0.3],
    "souris": [0.3, 0.6, 0.9],
    "blanche": [0.7, 0.8, 0.9],
}"""
G2 = """# Convert tokens to embeddings
embeddings = torch.tensor([embeddings_dict[token] for token in tokens])
print("Embeddings:\\n", embeddings)"""
G4 = """# Define weight matrices for Q, K, V (for simplicity, fixed small values)
W_Q = torch.tensor([[1, 0], [0, 1], [1, 1]])
W_K = torch.tensor([[1, 0], [0, 1], [1, 1]])
W_V = torch.tensor([[1, 0], [0, 1], [1, 1]])"""
G21 = """# Head 2's weights (3 -> 2)
W_Q2 = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.5, -0.5]])
W_K2 = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
W_V2 = torch.tensor([[0.0, 1.0], [1.0, 0.0], [-1.0, 1.0]])
head_params = [(W_Q, W_K, W_V), (W_Q2, W_K2, W_V2)]

# Output projection: 4 concatenated features -> 3
W_O = torch.tensor([[1.0, 0.0, 0.5],
                    [0.0, 1.0, 0.5],
                    [0.5, 0.0, 1.0],
                    [0.0, 0.5, 1.0]])"""

FIX = """W_Q = W_Q.float()
W_K = W_K.float()
W_V = W_V.float()
Q = torch.matmul(embeddings, W_Q)
K = torch.matmul(embeddings, W_K)
V = torch.matmul(embeddings, W_V)"""
SCORES = "attention_scores = torch.matmul(Q[0], K.T)"
WEIGHTS = "d_k = K.shape[-1]\nattention_weights = torch.softmax(attention_scores / d_k ** 0.5, dim=-1)"
OUTPUT = "output = torch.matmul(attention_weights.unsqueeze(0), V)"
ALL = "all_attention_weights = torch.softmax(Q @ K.T / d_k ** 0.5, dim=-1)\nall_outputs = all_attention_weights @ V"
SA = """def self_attention(x, W_Q, W_K, W_V):
    Q = x @ W_Q
    K = x @ W_K
    V = x @ W_V
    weights = torch.softmax(Q @ K.T / K.shape[-1] ** 0.5, dim=-1)
    return weights @ V"""
HEADS = "heads = [self_attention(embeddings, a, b, c) for a, b, c in head_params]"
MH = "multihead_output = torch.cat(heads, dim=-1) @ W_O\nprint(multihead_output.shape)"

FULL = {
    "fix_projections": (4, "float weights, Q K V right"),
    "scores": (1, "right"),
    "weights": (2, "right"),
    "output": (1, "right"),
    "all_words": (2, "right"),
    "self_attention_fn": (2, "right"),
    "multihead": (3, "right"),
}


def T(**over):
    t = dict(FULL)
    t.update(over)
    return t


def std(**repl):
    parts = dict(FIX=FIX, SCORES=SCORES, WEIGHTS=WEIGHTS, OUTPUT=OUTPUT, ALL=ALL, SA=SA, HEADS=HEADS, MH=MH)
    parts.update(repl)
    return [
        G1,
        G2,
        G4,
        parts["FIX"],
        "print(Q, K, V)",
        parts["SCORES"],
        parts["WEIGHTS"],
        parts["OUTPUT"],
        parts["ALL"],
        parts["SA"],
        G21,
        parts["HEADS"],
        parts["MH"],
    ]


CASES = []

CASES.append(
    dict(
        assignment=A,
        name="f01_one_big_cell",
        run=True,
        cells=[
            "md:# Attention in French\n(all in one cell, sorry)",
            "\n\n".join(
                [
                    G1,
                    G2,
                    G4,
                    """def my_softmax(v):
    e = torch.exp(v - v.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)

W_Q, W_K, W_V = W_Q.to(torch.float32), W_K.to(torch.float32), W_V.to(torch.float32)
Q = embeddings @ W_Q
K = embeddings @ W_K
V = embeddings @ W_V
attention_scores = Q[0] @ K.T
d_k = K.shape[1]
attention_weights = my_softmax(attention_scores / d_k ** 0.5)
output = (attention_weights @ V).unsqueeze(0)
all_attention_weights = my_softmax(Q @ K.T / d_k ** 0.5)
all_outputs = all_attention_weights @ V

def self_attention(x, W_Q, W_K, W_V):
    q, k, v = x @ W_Q, x @ W_K, x @ W_V
    return my_softmax(q @ k.T / k.shape[-1] ** 0.5) @ v
""",
                    G21,
                    """heads = []
for params in head_params:
    heads.append(self_attention(embeddings, *params))
multihead_output = torch.cat(heads, dim=1) @ W_O
print(multihead_output)""",
                ]
            ),
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f02_float64",
        run=True,
        cells=std(
            FIX="""embeddings = embeddings.to(torch.float64)   # I like double precision
W_Q = W_Q.double()
W_K = W_K.double()
W_V = W_V.double()
Q = embeddings @ W_Q
K = embeddings @ W_K
V = embeddings @ W_V""",
            HEADS="heads = [self_attention(embeddings, *(w.double() for w in p)) for p in head_params]",
            MH="multihead_output = torch.cat(heads, dim=-1) @ W_O.double()\nprint(multihead_output)",
        ),
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f03_loops_manual_softmax",
        run=True,
        cells=std(
            SCORES="""attention_scores = torch.zeros(len(tokens))
for j in range(len(tokens)):
    attention_scores[j] = torch.dot(Q[0], K[j])""",
            WEIGHTS="""import math
d_k = K.shape[-1]
exps = [math.exp(s / math.sqrt(d_k)) for s in attention_scores.tolist()]
attention_weights = torch.tensor([e / sum(exps) for e in exps])""",
            OUTPUT="""acc = torch.zeros(V.shape[1])
for j in range(len(tokens)):
    acc += attention_weights[j] * V[j]
output = acc.reshape(1, -1)""",
            ALL="""n = Q.shape[0]
all_attention_weights = torch.zeros(n, n)
for i in range(n):
    row = torch.exp(torch.stack([torch.dot(Q[i], K[j]) for j in range(n)]) / math.sqrt(d_k))
    all_attention_weights[i] = row / row.sum()
all_outputs = torch.zeros(n, V.shape[1])
for i in range(n):
    for j in range(n):
        all_outputs[i] += all_attention_weights[i, j] * V[j]""",
            SA="""def self_attention(x, W_Q, W_K, W_V):
    Q = x @ W_Q
    K = x @ W_K
    V = x @ W_V
    s = Q @ K.T / math.sqrt(K.shape[-1])
    e = torch.exp(s)
    return (e / e.sum(dim=1, keepdim=True)) @ V""",
            HEADS="""heads = []
for (wq, wk, wv) in head_params:
    heads.append(self_attention(embeddings, wq, wk, wv))""",
            MH="""multihead_output = torch.hstack(heads) @ W_O""",
        ),
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f04_no_sqrt_anywhere",
        run=True,
        cells=std(
            WEIGHTS="attention_weights = torch.softmax(attention_scores, dim=-1)",
            ALL="all_attention_weights = torch.softmax(Q @ K.T, dim=-1)\nall_outputs = all_attention_weights @ V",
            SA="""def self_attention(x, W_Q, W_K, W_V):
    Q = x @ W_Q
    K = x @ W_K
    V = x @ W_V
    return torch.softmax(Q @ K.T, dim=-1) @ V""",
        ),
        truth=T(
            weights=(0, "no division by sqrt(d_k)"),
            output=(1, "right given own weights (carried)"),
            all_words=(1, "weights unscaled (0); all_outputs right given them (carried, 1)"),
            self_attention_fn=(0, "function omits the sqrt(d_k) scaling"),
            multihead=(3, "heads and projection right given own self_attention (carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f05_reshape_hack",
        run=True,
        cells=std(
            FIX="""W_Q = W_Q.float()
W_K = W_K.float()
W_V = W_V.float()
# the shapes did not fit, so I reshaped the transpose
Q = torch.matmul(embeddings, W_Q.T.reshape(3, 2))
K = torch.matmul(embeddings, W_K.T.reshape(3, 2))
V = torch.matmul(embeddings, W_V.T.reshape(3, 2))"""
        ),
        truth=T(
            fix_projections=(1, "weights made float (1); Q, K, V scrambled by reshape (0/3)"),
            scores=(1, "right given own Q, K (carried)"),
            weights=(2, "carried"),
            output=(1, "carried"),
            all_words=(2, "carried"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f06_scores_typed_in",
        run=True,
        cells=std(
            SCORES="""print(torch.matmul(Q[0], K.T))
# copied from the output above
attention_scores = torch.tensor([0.4100, 0.9500, 1.4900, 0.8700, 0.4100, 1.2300, 1.4900])"""
        ),
        truth=T(
            scores=(0, "typed in from the printout: does not follow new embeddings"),
            weights=(2, "softmax code right given own (typed) scores (carried)"),
            output=(1, "right given own weights (carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f07_restructured_unrun",
        run=False,
        cells=[
            "md:# Le chat noir\nMy notes first, then everything. Functions at the top.",
            """import torch
import torch.nn as nn
import torch.nn.functional as F

def self_attention(x, W_Q, W_K, W_V):
    q = torch.matmul(x, W_Q)
    k = torch.matmul(x, W_K)
    v = torch.matmul(x, W_V)
    w = F.softmax(torch.matmul(q, k.transpose(0, 1)) / (k.size(-1) ** 0.5), dim=1)
    return torch.matmul(w, v)""",
            G1.replace("import torch\nimport torch.nn as nn\n\n", ""),
            G2,
            G4 + "\n" + """W_Q, W_K, W_V = [w.type(torch.FloatTensor) for w in (W_Q, W_K, W_V)]""",
            """# exploring
print(embeddings.shape, W_Q.dtype)
print(embeddings.mean(dim=0))""",
            """qs = embeddings @ W_Q
ks = embeddings @ W_K
vs = embeddings @ W_V
le_scores = ks @ qs[0]
scale = ks.shape[-1] ** 0.5
le_w = F.softmax(le_scores / scale, dim=0)
le_out = (le_w @ vs).reshape(1, -1)
A_all = F.softmax(qs @ ks.T / scale, dim=-1)
out_all = A_all @ vs""",
            G21,
            """heads = [self_attention(embeddings, *p) for p in head_params]
multihead_output = torch.hstack(heads) @ W_O""",
            """# graded names
Q, K, V = qs, ks, vs
attention_scores = le_scores
attention_weights = le_w
output = le_out
all_attention_weights, all_outputs = A_all, out_all""",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f08_dk_from_embedding_size",
        run=True,
        cells=std(
            SA="""def self_attention(x, W_Q, W_K, W_V):
    d = x.shape[-1]              # size of the embeddings
    Q = x @ W_Q
    K = x @ W_K
    V = x @ W_V
    return torch.softmax(Q @ K.T / d ** 0.5, dim=-1) @ V"""
        ),
        truth=T(
            self_attention_fn=(0, "scales by sqrt(embedding size), not sqrt(d_k)"),
            multihead=(3, "right given own self_attention (carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f09_heads_reversed",
        run=True,
        cells=std(MH="multihead_output = torch.cat([heads[1], heads[0]], dim=-1) @ W_O"),
        truth=T(multihead=(1, "heads right (1); concatenated in the wrong order (0/2)")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f10_all_words_dim0",
        run=True,
        cells=std(
            ALL="all_attention_weights = torch.softmax(Q @ K.T / d_k ** 0.5, dim=0)\nall_outputs = all_attention_weights @ V"
        ),
        truth=T(all_words=(1, "softmax over columns (0); all_outputs right given own weights (carried, 1)")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f11_self_attention_row_loop",
        run=True,
        cells=std(
            SA="""def self_attention(x, W_Q, W_K, W_V):
    Q, K, V = x @ W_Q, x @ W_K, x @ W_V
    rows = []
    for i in range(x.shape[0]):            # one query at a time, like for "Le"
        s = torch.matmul(Q[i], K.T) / K.shape[-1] ** 0.5
        rows.append(torch.softmax(s, dim=0) @ V)
    return torch.stack(rows)"""
        ),
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f12_scaling_in_scores_step",
        run=True,
        cells=std(
            SCORES="d_k = K.shape[-1]\nattention_scores = torch.matmul(Q[0], K.T) / d_k ** 0.5     # scaled scores",
            WEIGHTS="attention_weights = torch.softmax(attention_scores, dim=-1)",
        ),
        truth=T(
            scores=(0, "scaled already: the scores asked for are the plain dot products"),
            weights=(2, "the weights equal the reference (the scaling is there, one step early)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="f13_function_uses_global_dk",
        run=True,
        cells=std(
            SA="""def self_attention(x, W_Q, W_K, W_V):
    Q = x @ W_Q
    K = x @ W_K
    V = x @ W_V
    return torch.softmax(Q @ K.T / d_k ** 0.5, dim=-1) @ V     # d_k from above"""
        ),
        truth=T(
            self_attention_fn=(1, "uses the notebook's global d_k = 2: right for 2-d keys (1), wrong for 4-d keys (0)"),
            multihead=(3, "both heads have 2-d keys: right"),
        ),
    )
)
