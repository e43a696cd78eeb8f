#!/usr/bin/env python3
"""Write the student notebooks of the carry-forward corpus (notebooks/<assignment>/<name>.ipynb) and
meta.json (assignment, class of case, declared upstream mistakes `roots`, declared downstream own
mistakes `own`, description).  The truth itself is decided by truth.py, by execution.

A notebook is either the assignment's notebook (markdown of the solution/skeleton, the given cells,
the blanks filled; `over` replaces the code cell of that index, `drop` removes cells) or a freely
restructured one (`cells`: the given cells listed by index, then the student's own code).
"""

import json
import re
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
COURSE = HERE / "_course"

CLASSES = {
    "A": "one upstream mistake, notebook layout kept, later steps right given it",
    "B": "restructured: one big cell, helpers, loops, torch for numpy, einsum",
    "C": "mistake in the student's own function / class / torch module, later steps call it",
    "D": "later step is an expression or a loop over the student's own list",
    "E": "upstream mistake breaks a property (rows sum to 1, causal, finite) the reference breaks too",
    "F": "upstream mistake plus a later step wrong on its own",
    "G": "two upstream mistakes",
    "H": "upstream value typed in (right on the notebook's data only), later steps computed from it",
    "I": "root mistake that later steps absorb or never read (later steps plainly correct)",
    "J": "the student's function / class raises (docked in its own question): a later step that cannot be computed is carried if right with the solution's callable in its place, else wrong",
    "K": "later step right given the upstream mistake, its value equal to one of its own hint expressions",
}

STUDENTS = []


def S(name, asg, cls, roots, desc, over=None, own=(), drop=(), cells=None, keep=None):
    STUDENTS.append(
        dict(
            name=name,
            asg=asg,
            cls=cls,
            roots=list(roots),
            own=list(own),
            desc=desc,
            over=over or {},
            drop=set(drop),
            cells=cells,
            keep=keep,
        )
    )


def clean(src):
    src = re.sub(r"[ \t]*# (BEGIN|END) SOLUTION\n", "", src)
    src = src.replace("  # SOLUTION", "")
    return src


def build(st):
    sol = nbformat.read(COURSE / "solutions" / st["asg"] / f"{st['asg']}.ipynb", as_version=4)
    nb = nbformat.v4.new_notebook()
    nb.metadata = sol.metadata
    if st["cells"] is None:
        for i, c in enumerate(sol.cells):
            tags = c.get("metadata", {}).get("tags", [])
            if "instructor" in tags or i in st["drop"]:
                continue
            if c.cell_type == "markdown":
                nb.cells.append(nbformat.v4.new_markdown_cell(c.source))
            else:
                src = st["over"].get(i, clean(c.source))
                cell = nbformat.v4.new_code_cell(src)
                if "skip-grading" in tags:
                    cell.metadata["tags"] = ["skip-grading"]
                nb.cells.append(cell)
    else:
        nb.cells.append(nbformat.v4.new_markdown_cell(sol.cells[0].source))
        for item in st["cells"]:
            if isinstance(item, int):
                nb.cells.append(nbformat.v4.new_code_cell(clean(sol.cells[item].source)))
            else:
                nb.cells.append(nbformat.v4.new_code_cell(item))
    return nb


# =============================================================== attention_numpy
A = "attention_numpy"
LOGSOFT = """def softmax(x):
    x = x - np.max(x)
    return x - np.log(np.sum(np.exp(x)))   # log of the softmax, stable

attention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores)"""

S(
    "numpy_div_dk",
    A,
    "A",
    ["scaled"],
    "scores divided by d_k instead of sqrt(d_k)",
    over={14: "d_k = Q.shape[1]\nscaled_scores = scores / d_k"},
)
S(
    "numpy_log_softmax",
    A,
    "E",
    ["softmax"],
    "softmax returns log-softmax; weights rows do not sum to 1 (nor would the reference's on it)",
    over={17: LOGSOFT},
)
S(
    "numpy_linear_softmax",
    A,
    "E",
    ["softmax"],
    "softmax as x/sum(x): NaN row for the zero token 'am'",
    over={
        17: "def softmax(x):\n    return x / np.sum(x)\n\nattention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores)"
    },
)
S(
    "numpy_torch_bigcell",
    A,
    "B",
    ["qkv"],
    "torch for numpy, one big cell, Q from W_k, softmax applied row by row in a loop",
    cells=[
        1,
        3,
        5,
        """import torch
Xt, Wq, Wk, Wv = (torch.tensor(a) for a in (X, W_q, W_k, W_v))
Q = Xt @ Wk.T        # slip: the key weights for the queries
K = Xt @ Wk.T
V = Xt @ Wv.T
scores = Q @ K.T
d_k = Q.shape[1]
scaled_scores = scores / d_k ** 0.5

def softmax(x):
    x = torch.as_tensor(x)
    e = torch.exp(x - x.max())
    return e / e.sum()

attention_weights = torch.stack([softmax(row) for row in scaled_scores])
output = attention_weights @ V
print(output)""",
    ],
)
S(
    "numpy_helpers_project",
    A,
    "B",
    ["qkv"],
    "projection helper; V left untransposed ('W_v is symmetric'): shows on variants only; scores by double loop; output as a sum over tokens",
    over={
        7: "def project(X, W, transpose=True):\n    # one row per token\n    return X @ W.T if transpose else X @ W\n\nQ = project(X, W_q)\nK = project(X, W_k)\nV = project(X, W_v, transpose=False)  # W_v is symmetric",
        11: "n = Q.shape[0]\nscores = np.zeros((n, n))\nfor i in range(n):\n    for j in range(n):\n        scores[i, j] = np.dot(Q[i], K[j])",
        14: "d_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(K.shape[-1])",
        17: "def softmax(x):\n    e = np.exp(x - x.max())\n    return e / e.sum()\n\nattention_weights = np.array([softmax(r) for r in scaled_scores])",
        20: "output = sum(attention_weights[:, [j]] * V[j] for j in range(n))",
    },
)
S(
    "numpy_scores_swapped_output_T",
    A,
    "F",
    ["scores"],
    "scores = K Q^T (root); output uses the transposed weights (own)",
    own=["output"],
    over={11: "scores = K @ Q.T", 20: "output = attention_weights.T @ V"},
)
S(
    "numpy_nosqrt_weights_axis0",
    A,
    "F",
    ["scaled"],
    "no scaling (root); softmax over axis 0 (own); output right given those weights",
    own=["weights"],
    over={
        14: "d_k = Q.shape[1]\nscaled_scores = scores",
        17: "def softmax(x):\n    e_x = np.exp(x - np.max(x))\n    return e_x / e_x.sum()\n\nattention_weights = np.apply_along_axis(softmax, 0, scaled_scores)",
    },
)
S(
    "numpy_two_roots",
    A,
    "G",
    ["qkv", "softmax"],
    "Q from W_k (slip) and a log-softmax",
    over={7: "Q = X @ W_k.T\nK = X @ W_k.T\nV = X @ W_v.T", 17: LOGSOFT},
)
S(
    "numpy_class_scale_dk",
    A,
    "C",
    ["scaled"],
    "the student's own (plain) class; its scale() divides by d_k; everything after from its output",
    drop=[8, 9, 12, 15],
    over={
        7: """class SelfAttention:
    def __init__(self, W_q, W_k, W_v):
        self.W_q, self.W_k, self.W_v = W_q, W_k, W_v

    def qkv(self, X):
        return X @ self.W_q.T, X @ self.W_k.T, X @ self.W_v.T

    def scores(self, Q, K):
        return Q @ K.T

    def scale(self, s, d_k):
        return s / d_k

attn = SelfAttention(W_q, W_k, W_v)
Q, K, V = attn.qkv(X)""",
        11: "scores = attn.scores(Q, K)",
        14: "d_k = Q.shape[1]\nscaled_scores = attn.scale(scores, d_k)",
    },
)
S(
    "numpy_K_from_Wq_output_X",
    A,
    "F",
    ["qkv"],
    "K from W_q (root); output = weights @ X (own)",
    own=["output"],
    over={7: "Q = X @ W_q.T\nK = X @ W_q.T\nV = X @ W_v.T", 20: "output = attention_weights @ X"},
)
S(
    "numpy_matrix_softmax_cols",
    A,
    "A",
    ["weights"],
    "softmax applied to the whole matrix, normalising columns (root at weights); output right given it",
    over={
        17: "def softmax(x):\n    e = np.exp(x - np.max(x))\n    return e / e.sum(axis=0, keepdims=True)\n\nattention_weights = softmax(scaled_scores)"
    },
)

S(
    "numpy_softmax_temperature",
    A,
    "C",
    ["softmax"],
    "softmax with a temperature of 2 (rows still sum to 1); weights from it",
    over={
        17: "def softmax(x, T=2.0):\n    e = np.exp((x - np.max(x)) / T)\n    return e / e.sum()\n\nattention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores)"
    },
)
S(
    "numpy_no_sqrt_hint",
    A,
    "K",
    ["scaled"],
    "scaled_scores = scores; weights right given it equal weights' hint 'softmax of the unscaled scores'",
    over={14: "d_k = Q.shape[1]\nscaled_scores = scores  # scaling later"},
)
S(
    "numpy_V_is_X",
    A,
    "K",
    ["qkv"],
    "V = X (no value projection); output right given it equals output's hint 'weights @ X'",
    over={7: "Q = X @ W_q.T\nK = X @ W_k.T\nV = X  # the values are the tokens themselves"},
)

S(
    "numpy_concat_parts",
    A,
    "D",
    ["scores"],
    "scores = K Q^T (root); output concatenated from per-token parts in a list",
    over={
        11: "scores = K @ Q.T",
        20: "parts = [attention_weights[i:i + 1] @ V for i in range(len(attention_weights))]\noutput = np.concatenate(parts, axis=0)",
    },
)

# =============================================================== attention_similarity
A = "attention_similarity"
S(
    "sim_S_scaled_by_sqrt_d",
    A,
    "A",
    ["similarity_matrix"],
    "part 1: S divided by sqrt(50)",
    over={13: "S = torch.matmul(X, X.T) / np.sqrt(X.shape[1])\nprint(S[-1])"},
)
S(
    "sim_softmax_dim0",
    A,
    "E",
    ["softmax_scaling"],
    "S_scaled with softmax over dim 0 (columns sum to 1); y_swam and Y right given it",
    over={15: "S_scaled = torch.softmax(S, dim=0)\nprint(S_scaled[1])"},
)
S(
    "sim_part2_bigcell_transposed",
    A,
    "B",
    ["q2_qkv"],
    "part 2 in one big cell; Q, K, V with transposed weights; top-2 by sorting",
    drop=[24, 26, 29, 30, 32, 34, 36],
    over={
        38: """S = torch.softmax(X @ X.T, dim=-1)
sim_bank_interest = S[1, 3]
Q = X @ W_q.T
K = X @ W_k.T
V = X @ W_v.T
q_bank, k_bank, v_bank = Q[1], K[1], V[1]
q_interest, k_interest, v_interest = Q[3], K[3], V[3]
d_k = K.shape[-1]
S_learned = torch.softmax(Q @ K.T / d_k ** 0.5, dim=-1)
sim_bank_interest_learned = S_learned[1, 3]
Y = S_learned @ V
vals, idx = S_learned[1].sort(descending=True)
top2_words = [words[i] for i in idx[:2].tolist()]
top2_weights = vals[:2].tolist()
print(top2_words, top2_weights)"""
    },
)
S(
    "sim_no_scaling_learned",
    A,
    "A",
    ["q3_learned"],
    "S_learned without 1/sqrt(d_k); q4's hint expression equals the carried value",
    over={32: "d_k = K.shape[-1]\nS_learned = torch.softmax(Q @ K.T, dim=-1)\nprint(S_learned)"},
)
S(
    "sim_helpers_wk_for_q",
    A,
    "B",
    ["q2_qkv"],
    "projection helper fed W_k for the queries; scores by double loop in a helper; top-2 by sorted()",
    over={
        29: "def project(M, W):\n    return torch.matmul(M, W)\n\nQ, K, V = (project(X, W) for W in (W_k, W_k, W_v))",
        30: "idx = {w: i for i, w in enumerate(words)}\nq_bank, k_bank, v_bank = (M[idx['bank']] for M in (Q, K, V))\nq_interest, k_interest, v_interest = (M[idx['interest']] for M in (Q, K, V))",
        32: "def scaled_softmax(q, k):\n    scores = torch.zeros(q.shape[0], k.shape[0])\n    for i in range(q.shape[0]):\n        for j in range(k.shape[0]):\n            scores[i, j] = torch.dot(q[i], k[j]) / (k.shape[1] ** 0.5)\n    return torch.softmax(scores, dim=1)\n\nS_learned = scaled_softmax(Q, K)",
        38: "order = sorted(range(len(words)), key=lambda i: -S_learned[1, i].item())[:2]\ntop2_words = [words[i] for i in order]\ntop2_weights = [S_learned[1, i].item() for i in order]\nprint(top2_words, top2_weights)",
    },
)
S(
    "sim_S_nodiag_yswam_column",
    A,
    "F",
    ["similarity_matrix"],
    "S with its diagonal zeroed in place (root); y_swam from column 1 (own); Y right given S_scaled",
    own=["softmax_scaling"],
    over={
        13: "S = X @ X.T\nS.fill_diagonal_(0)   # a word should not be compared with itself\nprint(S[-1])",
        17: "y_swam = torch.matmul(S_scaled[:, 1], X)\nprint(y_swam.shape)",
    },
)
S(
    "sim_q1_dim0",
    A,
    "E",
    ["q1_no_learning"],
    "part-2 S with softmax over dim 0; sim_bank_interest right given it (same question)",
    over={24: "S = torch.nn.functional.softmax(torch.matmul(X, X.T), dim=0)\nprint(S)"},
)
S(
    "sim_numpy_part1_V_slip",
    A,
    "B",
    ["q2_qkv"],
    "part 1 in numpy; part 2: V = X W_q (copy-paste slip)",
    over={
        11: "Xn = X.numpy()\nsim_swam_bank = Xn[1] @ Xn[-1]\nsim_river_bank = Xn[5] @ Xn[-1]",
        13: "S = Xn @ Xn.T",
        15: "e = np.exp(S - S.max(axis=1, keepdims=True))\nS_scaled = e / e.sum(axis=1, keepdims=True)",
        17: "y_swam = S_scaled[1] @ Xn",
        19: "Y = S_scaled @ Xn",
        29: "Q = torch.matmul(X, W_q)\nK = torch.matmul(X, W_k)\nV = torch.matmul(X, W_q)",
    },
)
S(
    "sim_two_roots",
    A,
    "G",
    ["q2_qkv", "q3_learned"],
    "V with transposed weights and S_learned over dim 0",
    over={
        29: "Q = torch.matmul(X, W_q)\nK = torch.matmul(X, W_k)\nV = torch.matmul(X, W_v.T)",
        32: "d_k = K.shape[-1]\nS_learned = torch.softmax(Q @ K.T / d_k ** 0.5, dim=0)",
    },
)
S(
    "sim_typed_S_learned",
    A,
    "H",
    ["q3_learned"],
    "S_learned typed in from the printout; q4, Y and top-2 computed from it",
    over={
        32: """S_learned = torch.tensor([[5.0548771e-03, 3.1656563e-01, 3.8725369e-02, 4.5483419e-01, 1.8481995e-01],
                          [5.5487260e-07, 2.4819656e-01, 3.5415811e-04, 7.0291948e-01, 4.8529293e-02],
                          [5.9171845e-05, 2.9153350e-01, 3.5906900e-03, 6.1652225e-01, 8.8294335e-02],
                          [2.3572240e-07, 2.9164687e-01, 2.9624315e-04, 6.4748514e-01, 6.0571447e-02],
                          [1.7979692e-06, 2.5405744e-01, 5.7534192e-04, 6.9506097e-01, 5.0304499e-02]])"""
    },
)
S(
    "sim_nosqrt_top2_column",
    A,
    "F",
    ["q3_learned"],
    "no scaling (root); top-2 read from column 1 (own); Y right given S_learned",
    own=["q5_top2"],
    over={
        32: "d_k = K.shape[-1]\nS_learned = torch.softmax(Q @ K.T, dim=-1)",
        38: "top2 = torch.topk(S_learned[:, 1], k=2)\ntop2_words = [words[i] for i in top2.indices.tolist()]\ntop2_weights = top2.values.tolist()\nprint(top2_words, top2_weights)",
    },
)

S(
    "sim_scaled_no_softmax",
    A,
    "K",
    ["softmax_scaling"],
    "S_scaled = S (softmax forgotten); Y right given it equals Y's hint '(X X^T) X'",
    over={15: "S_scaled = S  # already the similarities\nprint(S_scaled[1])"},
)
S(
    "sim_V_is_X",
    A,
    "K",
    ["q2_qkv"],
    "V = X (no value projection); Y right given it equals the hint 'S_learned @ X'",
    over={29: "Q = torch.matmul(X, W_q)\nK = torch.matmul(X, W_k)\nV = X.clone()"},
)

S(
    "sim_stack_rows_dim0",
    A,
    "D",
    ["q3_learned"],
    "S_learned over dim 0 (root); Y stacked row by row from a list; top-2 by argsort",
    over={
        32: "d_k = K.shape[-1]\nS_learned = torch.softmax(Q @ K.T / d_k ** 0.5, dim=0)",
        36: "rows = [S_learned[i] @ V for i in range(len(words))]\nY = torch.stack(rows)",
        38: "order = torch.argsort(S_learned[1], descending=True)[:2]\ntop2_words = [words[i] for i in order.tolist()]\ntop2_weights = [S_learned[1, i].item() for i in order]",
    },
)

# =============================================================== tokens_to_multihead
A = "tokens_to_multihead"
TOK = """def load_vocab(path):
    vocab = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            token, idx = line.rstrip('\\n').split('\\t')
            vocab[token] = int(idx)
    return vocab


class SubsetBertTokenizer:
    def __init__(self, vocab_path, vocab_size=VOCAB_SIZE):
        self.vocab = load_vocab(vocab_path)
        self.vocab_size = vocab_size
        self.unk_token = '[UNK]'

    def tokenize(self, text):
        return %s

    def convert_tokens_to_ids(self, tokens):
        return %s
"""
T_OK = r're.findall(r"\w+|[^\w\s]", text.lower())'
C_OK = "[self.vocab.get(t, self.vocab[self.unk_token]) for t in tokens]"
NOLOWER = TOK % (r're.findall(r"\w+|[^\w\s]", text)', C_OK)
MHA = "torch.manual_seed(0)\nmultihead_attn = nn.MultiheadAttention(embed_dim=8, num_heads=%d, batch_first=True)"

S(
    "tok_no_lower",
    A,
    "A",
    ["tokenizer"],
    "tokenizer does not lower-case: 'The' becomes [UNK]; everything after right given it",
    over={3: NOLOWER},
)
S(
    "tok_one_head",
    A,
    "C",
    ["multihead"],
    "nn.MultiheadAttention with num_heads=1; table, reading, per-head from that module",
    over={9: MHA % 1},
)
S(
    "tok_no_batch_first",
    A,
    "C",
    ["multihead"],
    "no batch_first=True: the table raises (reference too); per-head weights from the module",
    own=["attention_table", "reading"],
    over={9: "torch.manual_seed(0)\nmultihead_attn = nn.MultiheadAttention(embed_dim=8, num_heads=2)"},
)
S(
    "tok_bigcell_seed42",
    A,
    "B",
    ["embeddings"],
    "one big cell; embedding layer made after seed 42; everything after from those embeddings",
    cells=[
        1,
        3,
        4,
        5,
        """vocab_size = tokenizer.vocab_size
embedding_dim = 8
torch.manual_seed(42)
embedding_layer = nn.Embedding(vocab_size, embedding_dim)
embeddings = embedding_layer(token_ids)
torch.manual_seed(0)
multihead_attn = nn.MultiheadAttention(embed_dim=embedding_dim, num_heads=2, batch_first=True)
output, attention_weights = multihead_attn(embeddings, embeddings, embeddings)
attention_df = pd.DataFrame(attention_weights.squeeze(0).detach().numpy(), index=tokens, columns=tokens)
bank_most_attended = attention_df.loc['bank'].idxmax()
_, head_weights = multihead_attn(embeddings, embeddings, embeddings, average_attn_weights=False)
print(bank_most_attended, head_weights.shape)""",
    ],
)
S(
    "tok_no_lower_table_T",
    A,
    "F",
    ["tokenizer"],
    "no lower-casing (root); table transposed (own); reading right given that table",
    own=["attention_table"],
    over={
        3: NOLOWER,
        13: "attention_df = pd.DataFrame(attention_weights[0].detach().numpy().T, index=tokens, columns=tokens)\nattention_df",
    },
)
S(
    "tok_four_heads_drop_bank",
    A,
    "F",
    ["multihead"],
    "num_heads=4 (root); reading drops bank's own column (own)",
    own=["reading"],
    over={
        9: MHA % 4,
        15: "bank_most_attended = attention_df.loc['bank'].drop('bank').idxmax()\nprint(bank_most_attended)",
    },
)
S(
    "tok_split_helpers",
    A,
    "I",
    ["tokenizer"],
    "tokenize = lower().split(): wrong on punctuation only, the sentence has none; helper builds the table",
    over={
        3: TOK % ("text.lower().split()", C_OK),
        13: "def build_table(w, labels):\n    return pd.DataFrame(w[0].detach().numpy(), index=labels, columns=labels)\n\nattention_df = build_table(attention_weights, tokens)\nattention_df",
    },
)
S(
    "tok_seed1_mha",
    A,
    "C",
    ["multihead"],
    "attention module made after torch.manual_seed(1)",
    over={
        9: "torch.manual_seed(1)\nmultihead_attn = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)"
    },
)
S(
    "tok_no_lower_perhead_avg",
    A,
    "F",
    ["tokenizer"],
    "no lower-casing (root); per-head weights left averaged (own)",
    own=["per_head"],
    over={
        3: NOLOWER,
        17: "_, head_weights = multihead_attn(embeddings, embeddings, embeddings)\nprint(head_weights.shape)",
    },
)
S("tok_two_roots", A, "G", ["tokenizer", "multihead"], "no lower-casing and num_heads=1", over={3: NOLOWER, 9: MHA % 1})
S(
    "tok_embeddings_scaled",
    A,
    "A",
    ["embeddings"],
    "embeddings multiplied by sqrt(embedding_dim), as in the Transformer paper",
    over={
        7: "vocab_size = tokenizer.vocab_size\nembedding_dim = 8\n\ntorch.manual_seed(0)\nembedding_layer = nn.Embedding(vocab_size, embedding_dim)\n\nembeddings = embedding_layer(token_ids) * embedding_dim ** 0.5"
    },
)

S(
    "tok_typed_attention",
    A,
    "H",
    ["multihead"],
    "attention_weights typed in from the printout; table and reading computed from it (constant over variants)",
    over={
        11: """output, _ = multihead_attn(embeddings, embeddings, embeddings)
attention_weights = torch.tensor([[[0.24301529, 0.18955997, 0.17639977, 0.24301529, 0.14800967],
                                   [0.22368115, 0.3017298 , 0.12832764, 0.22368115, 0.12258033],
                                   [0.15607993, 0.14602393, 0.27437967, 0.15607993, 0.2674365 ],
                                   [0.24301529, 0.18955997, 0.17639977, 0.24301529, 0.14800967],
                                   [0.19426   , 0.14399275, 0.17700383, 0.19426   , 0.29048336]]])"""
    },
)

S(
    "tok_no_lower_rows_list",
    A,
    "D",
    ["tokenizer"],
    "no lower-casing (root); the table built from a list of row lists",
    over={
        3: NOLOWER,
        13: "rows = [row.tolist() for row in attention_weights[0].detach()]\nattention_df = pd.DataFrame(rows, index=tokens, columns=tokens)\nattention_df",
    },
)

# =============================================================== attention_french
A = "attention_french"
FIX = "W_Q = W_Q.float()\nW_K = W_K.float()\nW_V = W_V.float()\n\nQ = %s\nK = %s\nV = %s"
SELF_NOSCALE = "def self_attention(x, W_Q, W_K, W_V):\n    Q = x @ W_Q\n    K = x @ W_K\n    V = x @ W_V\n    weights = torch.softmax(Q @ K.T, dim=-1)\n    return weights @ V"

S(
    "fr_drop_feature",
    A,
    "A",
    ["fix_projections"],
    "Q from the first two embedding features only; K, V right",
    over={8: FIX % ("embeddings[:, :2] @ W_Q[:2]", "torch.matmul(embeddings, W_K)", "torch.matmul(embeddings, W_V)")},
)
S(
    "fr_no_scaling_fn",
    A,
    "D",
    ["self_attention_fn"],
    "self_attention without 1/sqrt(d_k); heads (list comprehension) and the projection from it",
    over={19: SELF_NOSCALE},
)
S(
    "fr_weights_div_dk",
    A,
    "A",
    ["weights"],
    "weights: scores divided by d_k, not sqrt(d_k); output right given them",
    over={13: "d_k = K.shape[-1]\nattention_weights = torch.softmax(attention_scores / d_k, dim=-1)"},
)
S(
    "fr_bigcell_scaled_scores",
    A,
    "I",
    ["scores"],
    "one big cell; scores already scaled (root), weights then plain softmax (= the solution's)",
    drop=[9, 11, 13, 15],
    over={
        8: """W_Q, W_K, W_V = W_Q.float(), W_K.float(), W_V.float()
Q, K, V = embeddings @ W_Q, embeddings @ W_K, embeddings @ W_V
d_k = K.shape[-1]
attention_scores = Q[0] @ K.T / d_k ** 0.5
attention_weights = torch.softmax(attention_scores, dim=-1)
output = (attention_weights @ V).unsqueeze(0)
print(output)""",
        17: "all_attention_weights = torch.softmax(Q @ K.T / d_k ** 0.5, dim=-1)\nall_outputs = all_attention_weights @ V",
    },
)
S(
    "fr_dk_embed_loop",
    A,
    "C",
    ["self_attention_fn"],
    "self_attention scales by the embedding size; heads appended in a for loop",
    over={
        19: "def self_attention(x, W_Q, W_K, W_V):\n    Q, K, V = x @ W_Q, x @ W_K, x @ W_V\n    d = x.shape[-1]\n    return torch.softmax(Q @ K.T / d ** 0.5, dim=-1) @ V",
        23: "heads = []\nfor W_q, W_k, W_v in head_params:\n    heads.append(self_attention(embeddings, W_q, W_k, W_v))",
    },
)
S(
    "fr_module_self_attention",
    A,
    "C",
    ["self_attention_fn"],
    "self_attention is an instance of the student's nn.Module made with scale=False",
    over={
        19: """class SelfAttention(nn.Module):
    def __init__(self, scale=True):
        super().__init__()
        self.scale = scale

    def forward(self, x, W_Q, W_K, W_V):
        Q, K, V = x @ W_Q, x @ W_K, x @ W_V
        s = Q @ K.T
        if self.scale:
            s = s / K.shape[-1] ** 0.5
        return torch.softmax(s, dim=-1) @ V

self_attention = SelfAttention(scale=False)"""
    },
)
S(
    "fr_reshape_all_axis0",
    A,
    "F",
    ["fix_projections"],
    "Q via W_Q.T.reshape(3, 2) (root); all-words softmax over dim 0 (own)",
    own=["all_words"],
    over={
        8: FIX
        % (
            "torch.matmul(embeddings, W_Q.T.reshape(3, 2))",
            "torch.matmul(embeddings, W_K)",
            "torch.matmul(embeddings, W_V)",
        ),
        17: "all_attention_weights = torch.softmax(Q @ K.T / d_k ** 0.5, dim=0)\nall_outputs = all_attention_weights @ V",
    },
)
S(
    "fr_noscale_output_flat",
    A,
    "F",
    ["weights"],
    "weights without scaling (root); output without unsqueeze, shape (2,) (own)",
    own=["output"],
    over={
        13: "d_k = K.shape[-1]\nattention_weights = torch.softmax(attention_scores, dim=-1)",
        15: "output = attention_weights @ V",
    },
)
S(
    "fr_typed_Q",
    A,
    "H",
    ["fix_projections"],
    "Q typed in from the printout; later steps computed from it",
    over={
        8: "W_Q = W_Q.float()\nW_K = W_K.float()\nW_V = W_V.float()\n\nQ = torch.tensor([[0.4, 0.5], [1.0, 1.1], [1.6, 1.7], [0.8, 1.1], [0.4, 0.5], [1.2, 1.5], [1.6, 1.7]])\nK = torch.matmul(embeddings, W_K)\nV = torch.matmul(embeddings, W_V)"
    },
)
S(
    "fr_K_with_WQ_noscale_fn",
    A,
    "G",
    ["fix_projections", "self_attention_fn"],
    "K = embeddings W_Q (shows on variants only) and self_attention without scaling",
    over={
        8: FIX % ("torch.matmul(embeddings, W_Q)", "torch.matmul(embeddings, W_Q)", "torch.matmul(embeddings, W_V)"),
        19: SELF_NOSCALE,
    },
)
S(
    "fr_einsum_helpers_V_slip",
    A,
    "B",
    ["fix_projections"],
    "einsum helpers; V = embeddings W_K (shows on variants only)",
    over={
        8: FIX % ("embeddings @ W_Q", "embeddings @ W_K", "embeddings @ W_K"),
        11: "def scores_of(q, k):\n    return torch.einsum('d,nd->n', q, k)\n\nattention_scores = scores_of(Q[0], K)",
        13: "d_k = K.shape[-1]\n\ndef weights_of(s, d):\n    return torch.softmax(s / d ** 0.5, dim=-1)\n\nattention_weights = weights_of(attention_scores, d_k)",
        15: "output = torch.einsum('n,nd->d', attention_weights, V).unsqueeze(0)",
        17: "all_attention_weights = weights_of(torch.einsum('md,nd->mn', Q, K), d_k)\nall_outputs = torch.einsum('mn,nd->md', all_attention_weights, V)",
    },
)

S(
    "fr_weights_no_softmax",
    A,
    "K",
    ["weights"],
    "weights = the scaled scores, no softmax; output right given them equals output's hint 'scores @ V'",
    over={13: "d_k = K.shape[-1]\nattention_weights = attention_scores / d_k ** 0.5"},
)
S(
    "fr_selfattn_early",
    A,
    "F",
    ["self_attention_fn"],
    "self_attention (no scaling) written first and reused for all_outputs (own: all_words does not scale); heads from it",
    over={
        8: "def self_attention(x, W_Q, W_K, W_V):\n    Q, K, V = x @ W_Q, x @ W_K, x @ W_V\n    return torch.softmax(Q @ K.T, dim=-1) @ V\n\n"
        + (FIX % ("torch.matmul(embeddings, W_Q)", "torch.matmul(embeddings, W_K)", "torch.matmul(embeddings, W_V)")),
        17: "all_attention_weights = torch.softmax(Q @ K.T / d_k ** 0.5, dim=-1)\nall_outputs = self_attention(embeddings, W_Q, W_K, W_V)",
        19: "# self_attention is defined at the top",
    },
    own=["all_words"],
)

S(
    "fr_selfattn_raises",
    A,
    "J",
    ["self_attention_fn"],
    "self_attention raises (Q @ K without the transpose); the heads, right once it is fixed, carried",
    over={
        19: "def self_attention(x, W_Q, W_K, W_V):\n    Q, K, V = x @ W_Q, x @ W_K, x @ W_V\n    return torch.softmax(Q @ K / K.shape[-1] ** 0.5, dim=-1) @ V"
    },
)

# =============================================================== attention_from_scratch
A = "attention_from_scratch"
CA_TMPL = """class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=%d))

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = (q @ k.transpose(1, 2)).masked_fill(self.mask[:n, :n], -torch.inf)
        w = torch.softmax(s %s, dim=-1)
        %s
"""
CA_OK_TAIL = "return self.dropout(w) @ v"
S(
    "fs_mask_zero",
    A,
    "E",
    ["causal_mask"],
    "masked scores filled with 0 instead of -inf: later weights not causal, as the reference's on them",
    over={31: "masked_scores = scores.masked_fill(mask, 0.0)\nprint(masked_scores)"},
)
S(
    "fs_ca_no_scaling",
    A,
    "C",
    ["causal_attention_module"],
    "CausalAttention without 1/sqrt(d_k); the wrapper built on it",
    over={42: CA_TMPL % (1, "", CA_OK_TAIL)},
)
S(
    "fs_keys_wquery",
    A,
    "A",
    ["trainable_qkv"],
    "keys = inputs W_query; every later score from those keys",
    over={17: "keys = inputs @ W_query\nvalues = inputs @ W_value"},
)
S(
    "fs_bigcell_loops_softmax",
    A,
    "B",
    ["simple_scores"],
    "part 1 in one cell of loops; nor_attn_2 by softmax (root); context_vec_2 accumulated in a loop",
    drop=[5, 7, 9, 11, 13],
    over={
        3: """query = inputs[1]
attn_scores_2 = torch.zeros(len(inputs))
for i, x_i in enumerate(inputs):
    attn_scores_2[i] = (query * x_i).sum()
nor_attn_2 = torch.softmax(attn_scores_2, dim=0)
context_vec_2 = torch.zeros(inputs.shape[1])
for w, x_i in zip(nor_attn_2, inputs):
    context_vec_2 = context_vec_2 + w * x_i
n = inputs.shape[0]
attn_scores = torch.empty(n, n)
for i in range(n):
    for j in range(n):
        attn_scores[i, j] = inputs[i] @ inputs[j]
nor_attn = torch.stack([torch.softmax(r, dim=0) for r in attn_scores])
context_vector = nor_attn @ inputs
print(context_vec_2, context_vector)"""
    },
)
S(
    "fs_mask_diag0_nan",
    A,
    "E",
    ["causal_mask"],
    "mask with diagonal=0: the first row is all -inf, NaN weights downstream (the reference's too)",
    over={
        29: "mask = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=0)\nprint(mask)"
    },
)
S(
    "fs_maskzero_noscale_own",
    A,
    "F",
    ["causal_mask"],
    "mask filled with 0 (root); causal weights without scaling (own); dropout right given them",
    own=["causal_weights"],
    over={
        31: "masked_scores = scores.masked_fill(mask, 0.0)",
        33: "causal_weights = torch.softmax(masked_scores, dim=-1)",
    },
)
S(
    "fs_ca_dropout_ctx_mha_cat1",
    A,
    "F",
    ["causal_attention_module"],
    "CausalAttention drops the context vectors (root); wrapper concatenates on dim 1 (own)",
    own=["multihead_wrapper"],
    over={
        42: CA_TMPL % (1, "/ k.shape[-1] ** 0.5", "return self.dropout(w @ v)"),
        46: """class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=1)""",
    },
)
S(
    "fs_typed_keys",
    A,
    "H",
    ["trainable_qkv"],
    "keys typed in from the printout; later scores from them",
    over={
        17: """keys = torch.tensor([[0.3669138 , 0.76455796],
                     [0.44331563, 1.1418625 ],
                     [0.43606102, 1.115641  ],
                     [0.24083412, 0.6706297 ],
                     [0.182706  , 0.3292312 ],
                     [0.3274638 , 0.96419   ]])
values = inputs @ W_value"""
    },
)
S(
    "fs_two_roots",
    A,
    "G",
    ["simple_scores", "trainable_qkv"],
    "query = inputs[0] in part 1, values = inputs W_key in part 2",
    over={
        3: "query = inputs[0]\nattn_scores_2 = torch.empty(inputs.shape[0])\nfor i, x_i in enumerate(inputs):\n    attn_scores_2[i] = torch.dot(query, x_i)",
        17: "keys = inputs @ W_key\nvalues = inputs @ W_key",
    },
)
S(
    "fs_ca_mask_diag0",
    A,
    "C",
    ["causal_attention_module"],
    "CausalAttention's mask buffer with diagonal=0: NaN first rows; the wrapper on it",
    over={42: CA_TMPL % (0, "/ k.shape[-1] ** 0.5", CA_OK_TAIL)},
)
S(
    "fs_colsoftmax_helper",
    A,
    "F",
    ["all_scores"],
    "own softmax helper normalising dim 0, used for nor_attn (root) and again for the causal weights (own)",
    own=["causal_weights"],
    over={
        11: "def softmax_rows(t):\n    e = torch.exp(t)\n    return e / e.sum(dim=0, keepdim=True)\n\nnor_attn = softmax_rows(attn_scores)",
        21: "d_k = keys.shape[-1]\nattn_weights_2 = softmax_rows(attn_scores_2 / d_k ** 0.5)",
        33: "causal_weights = softmax_rows(masked_scores / d_k ** 0.5)",
    },
)

S(
    "fs_unnormalized",
    A,
    "K",
    ["simple_scores"],
    "nor_attn_2 = attn_scores_2 (not normalised); context_vec_2 right given it equals its hint",
    over={5: "nor_attn_2 = attn_scores_2.clone()  # normalise later"},
)
S(
    "fs_masked_prescaled",
    A,
    "I",
    ["causal_mask"],
    "masked scores already divided by sqrt(d_k) (root); causal weights = softmax(masked_scores) = the solution's (matches a hint expression)",
    over={
        31: "masked_scores = scores.masked_fill(mask, -torch.inf) / keys.shape[-1] ** 0.5",
        33: "causal_weights = torch.softmax(masked_scores, dim=-1)",
    },
)

S(
    "fs_ca_raises",
    A,
    "J",
    ["causal_attention_module"],
    "CausalAttention.forward raises (keys transposed over the batch axis); the wrapper, right once it is fixed, carried",
    over={42: CA_TMPL.replace("k.transpose(1, 2)", "k.transpose(0, 1)") % (1, "/ k.shape[-1] ** 0.5", CA_OK_TAIL)},
)
S(
    "fs_typed_causal_weights",
    A,
    "H",
    ["causal_weights"],
    "causal weights typed in from the printout; dropout applied to them (constant over variants)",
    over={
        33: """causal_weights = torch.tensor([[1.        , 0.        , 0.        , 0.        , 0.        , 0.        ],
                               [0.39856055, 0.6014395 , 0.        , 0.        , 0.        , 0.        ],
                               [0.25260928, 0.37907615, 0.3683146 , 0.        , 0.        , 0.        ],
                               [0.22647251, 0.2838669 , 0.27935505, 0.21030554, 0.        , 0.        ],
                               [0.19519064, 0.23633629, 0.23311973, 0.18195781, 0.15339555, 0.        ],
                               [0.15574208, 0.20915602, 0.20484097, 0.14193226, 0.10891099, 0.17941768]])"""
    },
)

S(
    "fs_query_wkey_stack_sum",
    A,
    "D",
    ["trainable_qkv"],
    "query_2 from W_key (root); context_vector_2 as the sum of a stacked list of weighted values",
    over={
        15: "d_in , d_out = inputs.shape[1] , 2\nx_2 = inputs[1]\n\ntorch.manual_seed(123)\nW_query = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)\nW_key = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)\nW_value = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)\n\nquery_2 = x_2 @ W_key\nkey_2 = x_2 @ W_key\nvalue_2 = x_2 @ W_value",
        23: "context_vector_2 = torch.stack([w * v for w, v in zip(attn_weights_2, values)]).sum(dim=0)",
    },
)

# =============================================================== class J, more cases (issue 40, class 7)
S(
    "numpy_softmax_ones3_raises",
    "attention_numpy",
    "J",
    ["softmax"],
    "softmax sums with np.dot(e, np.ones(3)): raises on 4 or 5 entries (its own check, the variants' weights); weights and output right once fixed",
    over={
        17: "def softmax(x):\n    e_x = np.exp(x - np.max(x))\n    return e_x / np.dot(e_x, np.ones(3))   # sum of the three entries\n\nattention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores)"
    },
)
S(
    "tok_convert_raises",
    "tokens_to_multihead",
    "J",
    ["tokenizer"],
    "convert_tokens_to_ids reads self.unk (AttributeError); token ids and every later step right once the tokenizer is fixed",
    over={3: TOK % (T_OK, "[self.vocab.get(t, self.vocab[self.unk]) for t in tokens]")},
)
S(
    "fr_selfattn_nodim_raises",
    "attention_french",
    "J",
    ["self_attention_fn"],
    "self_attention calls torch.softmax without dim (TypeError); heads and multi-head output right once fixed",
    over={
        19: "def self_attention(x, W_Q, W_K, W_V):\n    Q = x @ W_Q\n    K = x @ W_K\n    V = x @ W_V\n    weights = torch.softmax(Q @ K.T / K.shape[-1] ** 0.5)\n    return weights @ V"
    },
)
S(
    "fr_selfattn_raises_interleave",
    "attention_french",
    "J",
    ["self_attention_fn"],
    "self_attention raises (Q @ K); heads right once fixed (carried), multi-head output interleaves the heads' features (own)",
    own=["multihead"],
    over={
        19: "def self_attention(x, W_Q, W_K, W_V):\n    Q, K, V = x @ W_Q, x @ W_K, x @ W_V\n    return torch.softmax(Q @ K / K.shape[-1] ** 0.5, dim=-1) @ V",
        25: "multihead_output = torch.stack(heads, dim=-1).flatten(1) @ W_O\nprint(multihead_output.shape)",
    },
)
CA_NOSUPER = CA_TMPL.replace("        super().__init__()\n", "") % (1, "/ k.shape[-1] ** 0.5", CA_OK_TAIL)
assert "super()" not in CA_NOSUPER
S(
    "fs_ca_nosuper_raises",
    "attention_from_scratch",
    "J",
    ["causal_attention_module"],
    "CausalAttention.__init__ without super().__init__() (AttributeError on the first nn.Linear); the wrapper right once fixed",
    over={42: CA_NOSUPER},
)
S(
    "fs_ca_raises_cat1",
    "attention_from_scratch",
    "J",
    ["causal_attention_module"],
    "CausalAttention.forward raises (keys transposed over the batch axis); the wrapper concatenates on dim 1 (own)",
    own=["multihead_wrapper"],
    over={
        42: CA_TMPL.replace("k.transpose(1, 2)", "k.transpose(0, 1)") % (1, "/ k.shape[-1] ** 0.5", CA_OK_TAIL),
        46: """class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=1)""",
    },
)
S(
    "fs_ca_mask6_raises",
    "attention_from_scratch",
    "J",
    ["causal_attention_module"],
    "CausalAttention masks with self.mask[:6, :6]: raises on inputs of other than 6 tokens (a check's 5); the wrapper right once fixed",
    over={42: CA_TMPL.replace("self.mask[:n, :n]", "self.mask[:6, :6]") % (1, "/ k.shape[-1] ** 0.5", CA_OK_TAIL)},
)


def main():
    meta = {}
    for st in STUDENTS:
        d = HERE / "notebooks" / st["asg"]
        d.mkdir(parents=True, exist_ok=True)
        nbformat.write(build(st), d / f"{st['name']}.ipynb")
        meta[st["name"]] = dict(
            assignment=st["asg"], cls=st["cls"], roots=st["roots"], own=st["own"], description=st["desc"]
        )
    (HERE / "meta.json").write_text(json.dumps(meta, indent=1))
    (HERE / "classes.json").write_text(json.dumps(CLASSES, indent=1))
    print(len(meta), "notebooks")


if __name__ == "__main__":
    main()
