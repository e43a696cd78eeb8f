"""attention_similarity cases (20: dot_similarities 2, similarity_matrix 1, softmax_scaling 2, transformed_embeddings 1,
q1_no_learning 2, q2_qkv 3, q2_bank_interest 2, q3_learned 3, q4_bank_interest_learned 1, transformed_learned 1, q5_top2 2)."""

A = "attention_similarity"

IMPORTS = "import re\nimport sys\n\nimport numpy as np\nimport torch"
COLAB = """## Mount Google drive folder if running in Colab
if('google.colab' in sys.modules):
    from google.colab import drive
    drive.mount('/content/drive', force_remount = True)
    DIR = '/content/drive/MyDrive/Colab Notebooks/MAHE/MSIS Coursework/EvenSem2026MAHE'
    DATA_DIR = DIR+'/Data/'
else:
    DATA_DIR = 'data/'"""
TOK = """sentence = 'i swam quickly across the river to get to the other bank'
tokens = re.findall(r"[a-z]+|[^\\sa-z]", sentence.lower())
print(tokens)"""
LOAD = """def load_glove(path):
    # Read a GloVe text file (one `word v1 v2 ... vd` per line) into a dict word -> np.ndarray.
    vectors = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            word, *values = line.rstrip().split(' ')
            vectors[word] = np.array(values, dtype=np.float64)
    return vectors

# Load the 50-dimensional word vectors
loaded_word_vectors = load_glove(DATA_DIR + 'glove_sample_50d.txt')
"""
XGLOVE = """X = torch.stack([torch.tensor(loaded_word_vectors.get(token, None),
                               dtype = torch.float64)
                                 for token in tokens])
print(X.shape)"""
WORDS = """# Original embeddings of the words
the = torch.tensor([0.1, 0.2, 0.1])
bank = torch.tensor([0.4, 0.5, 0.3])
raised = torch.tensor([0.1, 0.3, 0.4])
interest = torch.tensor([0.7, 0.1, 0.3])
rates = torch.tensor([0.2, 0.4, 0.5])
words = ['the', 'bank', 'raised', 'interest', 'rates']"""
XWORDS = "X = torch.vstack([the, bank, raised, interest, rates])"
WEIGHTS = """# Query, key, and value neurons' weights matrices
W_q = torch.tensor([[1.8, 4.5, 3.9],
                    [4.3, 0.2, 2.9],
                    [5.0, 0.8, 4.8]], dtype = torch.float32)

W_k = torch.tensor([[2.7, 3.7, 3.2],
                    [0.2, 1.9, 3.6],
                    [2.6, 4.9, 1.9]], dtype = torch.float32)

W_v = torch.tensor([[0.5, 2.6, 2.4],
                    [3.6, 3.1, 3.2],
                    [0.3, 0.6, 0.9]], dtype = torch.float32)"""

P1 = dict(
    DOT="sim_swam_bank = torch.dot(X[1], X[-1])\nsim_river_bank = torch.dot(X[5], X[-1])\nprint(sim_swam_bank, sim_river_bank)",
    S="S = X @ X.T",
    SS="S_scaled = torch.softmax(S, dim=-1)\ny_swam = S_scaled[1] @ X",
    Y="Y = S_scaled @ X",
)
P2 = dict(
    Q1="S = torch.softmax(X @ X.T, dim=-1)\nsim_bank_interest = S[1, 3]",
    QKV="Q = X @ W_q\nK = X @ W_k\nV = X @ W_v",
    BI="q_bank, k_bank, v_bank = Q[1], K[1], V[1]\nq_interest, k_interest, v_interest = Q[3], K[3], V[3]",
    SL="d_k = K.shape[-1]\nS_learned = torch.softmax(Q @ K.T / d_k ** 0.5, dim=-1)",
    Q4="sim_bank_interest_learned = S_learned[1, 3]",
    YL="Y = S_learned @ V",
    TOP="""top2 = torch.topk(S_learned[1], k=2)
top2_words = [words[i] for i in top2.indices.tolist()]
top2_weights = top2.values.tolist()
print(top2_words, top2_weights)""",
)

FULL = {
    "dot_similarities": (2, "right"),
    "similarity_matrix": (1, "right"),
    "softmax_scaling": (2, "right"),
    "transformed_embeddings": (1, "right"),
    "q1_no_learning": (2, "right"),
    "q2_qkv": (3, "right"),
    "q2_bank_interest": (2, "right"),
    "q3_learned": (3, "right"),
    "q4_bank_interest_learned": (1, "right"),
    "transformed_learned": (1, "right"),
    "q5_top2": (2, "right"),
}


def T(**over):
    t = dict(FULL)
    t.update(over)
    return t


def std(**r):
    p = dict(P1)
    p.update(P2)
    p.update(r)
    return [
        IMPORTS,
        COLAB,
        TOK,
        LOAD + XGLOVE,
        p["DOT"],
        p["S"],
        p["SS"],
        p["Y"],
        WORDS + "\n\n# Sample\n" + XWORDS,
        p["Q1"],
        WEIGHTS,
        p["QKV"],
        p["BI"],
        p["SL"],
        p["Q4"],
        p["YL"],
        p["TOP"],
    ]


CASES = []

CASES.append(
    dict(
        assignment=A,
        name="m01_numpy_one_cell",
        run=True,
        cells=[
            "md:# Similarities and attention (NumPy, one cell)",
            "\n\n".join(
                [
                    IMPORTS,
                    COLAB,
                    TOK,
                    LOAD,
                    """def softmax_rows(M):
    M = M - M.max(axis=1, keepdims=True)
    E = np.exp(M)
    return E / E.sum(axis=1, keepdims=True)

X = np.stack([loaded_word_vectors[t] for t in tokens])   # numpy is enough here
sim_swam_bank = float(X[1] @ X[11])
sim_river_bank = float(X[5] @ X[11])
S = X @ X.T
S_scaled = softmax_rows(S)
y_swam = S_scaled[1] @ X
Y = S_scaled @ X
""",
                    WORDS,
                    """X = np.stack([w.numpy() for w in (the, bank, raised, interest, rates)])
S = softmax_rows(X @ X.T)
sim_bank_interest = S[1, 3]
""",
                    WEIGHTS,
                    """Q = X @ W_q.numpy()
K = X @ W_k.numpy()
V = X @ W_v.numpy()
q_bank, k_bank, v_bank = Q[1], K[1], V[1]
q_interest, k_interest, v_interest = Q[3], K[3], V[3]
S_learned = softmax_rows(Q @ K.T / np.sqrt(K.shape[1]))
sim_bank_interest_learned = S_learned[1, 3]
Y = S_learned @ V
order = np.argsort(-S_learned[1])[:2]
top2_words = [words[i] for i in order]
top2_weights = [float(S_learned[1, i]) for i in order]
print(top2_words, top2_weights)""",
                ]
            ),
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m02_loops",
        run=True,
        cells=std(
            DOT="""def dot(a, b):
    return sum(float(a[i]) * float(b[i]) for i in range(len(a)))
sim_swam_bank = dot(X[1], X[11])
sim_river_bank = dot(X[5], X[11])""",
            S="""n = len(tokens)
S = torch.zeros(n, n, dtype=torch.float64)
for i in range(n):
    for j in range(n):
        S[i, j] = torch.dot(X[i], X[j])""",
            SS="""import math
S_scaled = torch.zeros_like(S)
for i in range(n):
    m = max(S[i].tolist())
    ex = [math.exp(v - m) for v in S[i].tolist()]
    for j in range(n):
        S_scaled[i, j] = ex[j] / sum(ex)
y_swam = torch.zeros(X.shape[1], dtype=torch.float64)
for j in range(n):
    y_swam += S_scaled[1, j] * X[j]""",
            Y="""Y = torch.stack([sum(S_scaled[i, j] * X[j] for j in range(n)) for i in range(n)])""",
            TOP="""row = S_learned[1].tolist()
best = sorted(range(len(row)), key=lambda i: row[i], reverse=True)[:2]
top2_words = [words[i] for i in best]
top2_weights = [row[i] for i in best]""",
        ),
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m03_index_off_by_one",
        run=True,
        cells=std(
            DOT="sim_swam_bank = torch.dot(X[2], X[-1])   # swam is the 2nd word\nsim_river_bank = torch.dot(X[5], X[-1])",
            BI="q_bank, k_bank, v_bank = Q[1], K[1], V[1]\nq_interest, k_interest, v_interest = Q[2], K[2], V[2]",
        ),
        truth=T(
            dot_similarities=(1, "swam taken as X[2] (quickly): 0; river-bank right: 1"),
            q2_bank_interest=(
                0,
                "interest's query/key/value from row 2 (raised); the six values carry no per-check points in config.yaml: all or nothing",
            ),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m04_no_sqrt_learned",
        run=True,
        cells=std(SL="S_learned = torch.softmax(Q @ K.T, dim=-1)"),
        truth=T(
            q3_learned=(0, "not divided by sqrt(d_k)"),
            q4_bank_interest_learned=(1, "right given own S_learned (carried)"),
            transformed_learned=(1, "carried"),
            q5_top2=(2, "carried"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m05_weights_transposed",
        run=True,
        cells=std(QKV="Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T"),
        truth=T(
            q2_qkv=(0, "weights transposed for Q, K and V"),
            q2_bank_interest=(2, "rows of own Q, K, V (carried)"),
            q3_learned=(3, "carried"),
            q4_bank_interest_learned=(1, "carried"),
            transformed_learned=(1, "carried"),
            q5_top2=(2, "carried"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m06_top2_typed_in",
        run=True,
        cells=std(
            TOP="""print(S_learned[1])
# read off the printout
top2_words = ['interest', 'bank']
top2_weights = [0.7029, 0.2482]"""
        ),
        truth=T(q5_top2=(0, "words and weights typed in from the printout")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m07_softmax_dim0_part1",
        run=True,
        cells=std(SS="S_scaled = torch.softmax(S, dim=0)\ny_swam = S_scaled[1] @ X"),
        truth=T(
            softmax_scaling=(1, "S_scaled softmax over columns (0); y_swam right given it (carried, 1)"),
            transformed_embeddings=(1, "right given own S_scaled (carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m08_data_first_float32_unrun",
        run=False,
        cells=[
            "md:# My version\nI put all the given data at the top so I can find it.",
            IMPORTS + "\n\n" + WORDS + "\n\n" + WEIGHTS,
            COLAB,
            TOK,
            LOAD,
            """# float32 is plenty
X = torch.stack([torch.tensor(loaded_word_vectors[t], dtype=torch.float32) for t in tokens])
print(X.dtype, X.shape)""",
            """# explore: norms of the word vectors
for t, v in zip(tokens, X):
    print(t, round(float(v.norm()), 2))""",
            """sims = X @ X.T
sim_swam_bank = sims[1, 11]
sim_river_bank = sims[5, 11]
S = sims""",
            """attn = torch.nn.functional.softmax(sims, dim=1)
S_scaled = attn
y_swam = attn[1] @ X
Y = attn @ X""",
            """X = torch.vstack([the, bank, raised, interest, rates])
S = torch.nn.functional.softmax(X @ X.T, dim=1)
sim_bank_interest = S[1][3]""",
            """Q, K, V = (torch.matmul(X, W) for W in (W_q, W_k, W_v))
q_bank, q_interest = Q[1], Q[3]
k_bank, k_interest = K[1], K[3]
v_bank, v_interest = V[1], V[3]""",
            """learned = torch.nn.functional.softmax(Q @ K.T / (K.shape[1] ** 0.5), dim=1)
S_learned = learned
sim_bank_interest_learned = learned[1][3]
Y = learned @ V
vals, idx = learned[1].sort(descending=True)
top2_words = [words[i] for i in idx[:2]]
top2_weights = [v.item() for v in vals[:2]]""",
        ],
        truth=T(
            similarity_matrix=(1, "right: part 1's S = X X^T (float32); the part-2 data cell was moved to the top"),
            transformed_embeddings=(1, "right: part 1's Y (float32)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m09_tensor_list_and_y_from_Y",
        run=True,
        cells=std(
            SS="S_scaled = torch.softmax(S, dim=1)",
            Y="Y = S_scaled @ X\ny_swam = Y[1]     # the new embedding of swam is row 1 of Y",
            TOP="""vals, idx = torch.sort(S_learned[1], descending=True)
top2_words = [words[i] for i in idx[:2].tolist()]
top2_weights = [vals[0], vals[1]]     # a list of two 0-d tensors""",
        ),
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m10_bank_named_in_part1",
        run=True,
        cells=std(
            DOT="""swam, river, bank = X[1], X[5], X[-1]      # easier to read
sim_swam_bank = torch.dot(swam, bank)
sim_river_bank = torch.dot(river, bank)
print(sim_swam_bank, sim_river_bank)"""
        ),
        truth=T(
            similarity_matrix=(1, "right (S = X X^T; part 1 binds `bank` to the GloVe vector of bank before S)"),
            transformed_embeddings=(1, "right"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m11_top2_column",
        run=True,
        cells=std(
            TOP="""col = S_learned[:, 1]
top2 = torch.topk(col, k=2)
top2_words = [words[i] for i in top2.indices.tolist()]
top2_weights = top2.values.tolist()"""
        ),
        truth=T(q5_top2=(0, "reads column 1 (who attends to bank) instead of bank's row: words and weights wrong")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m12_cosine_similarity",
        run=True,
        cells=std(
            DOT="""cos = torch.nn.functional.cosine_similarity
sim_swam_bank = cos(X[1], X[-1], dim=0)     # similarity = cosine
sim_river_bank = cos(X[5], X[-1], dim=0)"""
        ),
        truth=T(dot_similarities=(0, "cosine similarity instead of the dot product asked for (both values)")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="m13_own_glove_reader",
        run=True,
        cells=[
            IMPORTS,
            COLAB,
            TOK,
            LOAD + "print(len(loaded_word_vectors))",
            """# I read the file myself, to see the format
vecs = {}
with open(DATA_DIR + 'glove_sample_50d.txt') as f:
    for line in f:
        parts = line.split()
        vecs[parts[0]] = np.array([float(v) for v in parts[1:]])
X = torch.tensor(np.stack([vecs[t] for t in tokens]))
print(X.shape)""",
            P1["DOT"],
            P1["S"],
            P1["SS"],
            P1["Y"],
            WORDS + "\n\n# Sample\n" + XWORDS,
            P2["Q1"],
            WEIGHTS,
            P2["QKV"],
            P2["BI"],
            P2["SL"],
            P2["Q4"],
            P2["YL"],
            P2["TOP"],
        ],
        truth=T(
            dot_similarities=(2, "right: X read from the data file with the student's own reader (the same vectors)"),
            similarity_matrix=(1, "right (same X)"),
            softmax_scaling=(2, "right (same X)"),
            transformed_embeddings=(1, "right (same X)"),
        ),
    )
)
