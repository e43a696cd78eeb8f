"""attention_numpy cases (11 points: qkv 3, scores 1, scaled 2, softmax 1, weights 2, output 2)."""

A = "attention_numpy"

GX = """tokens = ['I', 'am', 'Batman']
X = np.array([
    [1.0, 0.0],
    [0.0, 0.0],
    [0.0, 1.0]
])"""
GW = """W_q = np.array([[1.0, 2.0],     # query weights
                [3.0, 4.0]])

W_k = np.array([[0.5, 1.0],     # key weights
                [1.5, 1.0]])

W_v = np.array([[1.0, 0.5],     # value weights
                [0.5, 1.0]])"""

FULL = {
    "qkv": (3, "Q, K, V right"),
    "scores": (1, "right"),
    "scaled": (2, "right"),
    "softmax": (1, "right on both vectors"),
    "weights": (2, "right"),
    "output": (2, "right"),
}


def T(**over):
    t = dict(FULL)
    t.update(over)
    return t


CASES = []

CASES.append(
    dict(
        assignment=A,
        name="n01_one_big_cell",
        run=True,
        cells=[
            "md:# Self-attention by hand in NumPy\nI did everything in one cell.",
            f"""import numpy as np

{GX}

{GW}

def project(A, W):
    # rows of A times W transposed
    return A @ W.T

def softmax(x):
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)

Q = project(X, W_q)
K = project(X, W_k)
V = project(X, W_v)
scores = Q @ K.T
d_k = K.shape[1]
scaled_scores = scores / np.sqrt(d_k)
attention_weights = softmax(scaled_scores)
output = attention_weights @ V
print("Q", Q, "K", K, "V", V, sep="\\n")
print(scaled_scores)
print(attention_weights)
print(output)
""",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n02_pure_python_loops",
        run=True,
        cells=[
            "import numpy as np\nimport math",
            GX,
            GW,
            """# my own matrix product with loops: rows of A times rows of W (= A @ W.T)
def times_transpose(A, W):
    out = np.zeros((A.shape[0], W.shape[0]))
    for i in range(A.shape[0]):
        for j in range(W.shape[0]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * W[j, k]
            out[i, j] = s
    return out

Q = times_transpose(X, W_q)
K = times_transpose(X, W_k)
V = times_transpose(X, W_v)""",
            """n = X.shape[0]
scores = np.zeros((n, n))
for i in range(n):
    for j in range(n):
        scores[i, j] = sum(Q[i, k] * K[j, k] for k in range(Q.shape[1]))
scores""",
            """d_k = Q.shape[1]
scaled_scores = np.zeros_like(scores)
for i in range(n):
    for j in range(n):
        scaled_scores[i, j] = scores[i, j] / math.sqrt(d_k)""",
            """def softmax(x):
    m = max(x)
    exps = [math.exp(v - m) for v in x]
    total = sum(exps)
    return np.array([e / total for e in exps])

attention_weights = np.array([softmax(row) for row in scaled_scores])
attention_weights""",
            """output = np.zeros((n, V.shape[1]))
for i in range(n):
    for j in range(n):
        output[i] += attention_weights[i, j] * V[j]
print(output)""",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n03_torch_in_numpy",
        run=True,
        cells=[
            "import numpy as np\nimport torch\nimport math",
            GX,
            GW,
            """# I prefer torch
Xt = torch.tensor(X, dtype=torch.float64)
Q = Xt @ torch.tensor(W_q, dtype=torch.float64).T
K = Xt @ torch.tensor(W_k, dtype=torch.float64).T
V = Xt @ torch.tensor(W_v, dtype=torch.float64).T
print(Q, K, V)""",
            "scores = torch.matmul(Q, K.T)\nscores",
            "d_k = K.shape[-1]\nscaled_scores = scores / math.sqrt(d_k)\nscaled_scores",
            """def softmax(x):
    x = torch.as_tensor(x, dtype=torch.float64)
    return torch.softmax(x, dim=-1)

attention_weights = softmax(scaled_scores)
print(attention_weights.sum(dim=1))""",
            "output = attention_weights @ V\noutput",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n04_restructured_unrun_image_plot",
        run=False,
        attach=True,
        cells=[
            "md:# My attention notebook\nI moved things around: helper first, then the data, then my own names, and the graded names at the end.",
            """import numpy as np
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

def softmax(x):
    # stable softmax along the last axis (works for a vector or a matrix)
    shifted = x - x.max(axis=-1, keepdims=True)
    ex = np.exp(shifted)
    return ex / ex.sum(axis=-1, keepdims=True)

print(softmax(np.array([1.0, 2.0, 3.0])))""",
            GW,
            GX,
            "md:Here is the picture from the lecture that helped me:\n\n![attention.png](attachment:attention.png)",
            """# exploring shapes
print(X.shape, W_q.shape)
print(np.linalg.norm(X, axis=1))""",
            """queries = X.dot(W_q.T)
keys_ = X.dot(W_k.T)
vals = np.einsum('td,od->to', X, W_v)
raw = np.einsum('id,jd->ij', queries, keys_)
dk = keys_.shape[-1]
scaled = raw / dk ** 0.5
w = softmax(scaled)
out = w @ vals""",
            """fig, ax = plt.subplots()
ax.imshow(w, cmap="magma")
ax.set_title("attention weights")
plt.show()""",
            """# the names the grader wants
Q, K, V = queries, keys_, vals
scores = raw
scaled_scores = scaled
attention_weights = w
output = out""",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n05_float32_and_lists",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            """Q = (X @ W_q.T).astype(np.float32).tolist()   # a list is easier to read
K = (X @ W_k.T).astype(np.float32)
V = (X @ W_v.T).astype(np.float32)
Q""",
            "scores = np.array(Q, dtype=np.float32) @ K.T\nscores",
            "d_k = len(Q[0])\nscaled_scores = (scores / np.float32(np.sqrt(d_k))).astype(np.float32)",
            """def softmax(x):
    x = np.asarray(x, dtype=np.float32)
    e = np.exp(x - x.max())
    return e / e.sum()

attention_weights = np.vstack([softmax(r) for r in scaled_scores])""",
            "output = (attention_weights @ V).tolist()\noutput",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n06_unstable_softmax",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T",
            "scores = Q @ K.T",
            "d_k = Q.shape[1]\nscaled_scores = scores / d_k ** 0.5",
            """def softmax(x):
    # textbook definition, no max trick
    return np.exp(x) / np.sum(np.exp(x))

attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)
attention_weights""",
            "output = attention_weights @ V\noutput",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n07_no_sqrt_one_cell",
        run=True,
        cells=[
            f"""import numpy as np
{GX}
{GW}
def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()
Q = X @ W_q.T
K = X @ W_k.T
V = X @ W_v.T
scores = Q @ K.T
scaled_scores = scores            # TODO scaling?
attention_weights = np.array([softmax(r) for r in scaled_scores])
output = attention_weights @ V
print(output)"""
        ],
        truth=T(
            scaled=(0, "not divided by sqrt(d_k)"),
            weights=(2, "right given own scaled_scores (carried forward)"),
            output=(2, "right given own weights (carried forward)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n08_divide_by_dk",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T",
            "scores = Q @ K.T",
            "d_k = Q.shape[1]\nscaled_scores = scores / d_k",
            """def softmax(x):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()

attention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores)""",
            "output = attention_weights @ V\noutput",
        ],
        truth=T(
            scaled=(0, "divided by d_k instead of sqrt(d_k)"),
            weights=(2, "right given own scaled_scores (carried)"),
            output=(2, "right given own weights (carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n09_softmax_axis0_matrix",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T",
            "scores = Q @ K.T\nd_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """def softmax(x):
    e = np.exp(x - x.max(axis=0))
    return e / e.sum(axis=0)       # fine for a vector...

attention_weights = softmax(scaled_scores)   # ...but on the matrix this normalises columns
attention_weights""",
            "output = attention_weights @ V",
        ],
        truth=T(
            weights=(0, "softmax over columns (axis 0): rows do not sum to 1"),
            output=(2, "right given own attention_weights (carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n10_Q_untransposed",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q\nK = X @ W_k.T\nV = X @ W_v.T",
            "scores = Q @ K.T",
            "d_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)

attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)""",
            "output = attention_weights @ V",
        ],
        truth=T(
            qkv=(2, "Q = X @ W_q (weights not transposed; raises when d_out != d_in on unseen inputs); K, V right"),
            scores=(1, "right given own Q (carried)"),
            scaled=(2, "carried"),
            weights=(2, "carried"),
            output=(2, "carried"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n11_output_typed_in",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T",
            "scores = Q @ K.T\nd_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()

attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)
print(attention_weights @ V)""",
            """# copied from the print above
output = np.array([[0.81889674, 0.65238532],
                   [0.5,        0.5       ],
                   [0.83093765, 0.66197788]])""",
        ],
        truth=T(output=(0, "typed in from the printout: does not follow new inputs")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n12_dk_hardcoded",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T\nscores = Q @ K.T",
            "scaled_scores = scores / np.sqrt(2)   # d_k = 2",
            """def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()

attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)
output = attention_weights @ V""",
        ],
        truth=T(
            scaled=(0, "d_k hard-coded to 2: wrong when the key size changes"),
            weights=(2, "right given own scaled_scores (carried)"),
            output=(2, "carried"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n13_scores_transposed",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T",
            "scores = K @ Q.T",
            "d_k = K.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()
attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)
output = attention_weights @ V""",
        ],
        truth=T(
            scores=(0, "K Q^T instead of Q K^T"),
            scaled=(2, "right given own scores (carried)"),
            weights=(2, "carried"),
            output=(2, "carried"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n14_pipeline_function_no_sqrt",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            """def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()

def run_attention(X, W_q, W_k, W_v):
    Q = X @ W_q.T
    K = X @ W_k.T
    V = X @ W_v.T
    scores = Q @ K.T
    scaled = scores              # forgot the scaling
    weights = np.apply_along_axis(softmax, 1, scaled)
    return Q, K, V, scores, scaled, weights, weights @ V

Q, K, V, scores, scaled_scores, attention_weights, output = run_attention(X, W_q, W_k, W_v)
print(output)""",
        ],
        truth=T(
            scaled=(0, "no sqrt(d_k) scaling inside the pipeline function"),
            weights=(2, "right given own scaled (the function's 5th result; carried)"),
            output=(2, "right given own weights (carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n15_two_mistakes",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T\nscores = Q @ K.T",
            "scaled_scores = scores",
            """def softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()
attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)""",
            "output = attention_weights.T @ V",
        ],
        truth=T(
            scaled=(0, "not scaled"),
            weights=(2, "right given own scaled_scores (carried)"),
            output=(0, "weights transposed: a second mistake of its own, not explained by the upstream one"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n16_softmax_redefined",
        run=True,
        cells=[
            "import numpy as np",
            """# first try (wrong, I fixed it below)
def softmax(x):
    return x / x.sum()
print(softmax(np.array([1.0, 2.0])))""",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T\nscores = Q @ K.T\nd_k = K.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """# second try: exponentials!
def softmax(x):
    e_x = np.exp(x - np.max(x))
    return e_x / np.sum(e_x)

attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)
output = attention_weights @ V""",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n17_magics_pip_and_check",
        run=False,
        cells=[
            "!pip install notebook_grader-0.1.0-py3-none-any.whl\n%matplotlib inline\nimport numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T",
            "%%time\nscores = Q @ K.T",
            "d_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """def softmax(x):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum(axis=-1, keepdims=True)

attention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores)
output = attention_weights @ V
output""",
            "from grader import check\ncheck()",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n18_output_loop_hardcoded_3",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T\nscores = Q @ K.T\nd_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """def softmax(x):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()
attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)""",
            """output = np.zeros((3, 2))      # 3 tokens, 2 features
for i in range(3):
    for j in range(3):
        output[i] += attention_weights[i, j] * V[j]
output""",
        ],
        truth=T(output=(0, "sizes hard-coded (3 tokens, 2 features): wrong on other inputs")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n19_extra_plot_cell_fails",
        run=False,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T\nscores = Q @ K.T\nd_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """def softmax(x):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()
attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)
output = attention_weights @ V""",
            """# a nicer plot (seaborn is not installed everywhere)
import seaborn as sns
sns.heatmap(attention_weights, annot=True, xticklabels=tokens, yticklabels=tokens)""",
            "print('done')",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n20_typed_dressed_as_computed",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T\nscores = Q @ K.T\nd_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """def softmax(x):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()
attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)""",
            """# my matmul gave slightly different numbers, so I use the printed ones
output = 0 * (attention_weights @ V) + np.array([[0.81889674, 0.65238532], [0.5, 0.5], [0.83093765, 0.66197788]])""",
        ],
        truth=T(output=(0, "the printed values typed in, dressed up as computed: wrong on other inputs")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n21_typo_in_print_after_answer",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T\nscores = Q @ K.T\nd_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """def softmax(x):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()
attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)
output = attention_weights @ V
print(outptu)""",
        ],
        truth=T(output=(2, "output is computed right; only the print after it has a typo (NameError)")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n22_half_written_exploration_cell",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T",
            "# want to look at the shapes\nprint(Q.shape, K.shape",
            "scores = Q @ K.T\nd_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            """def softmax(x):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()
attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)
output = attention_weights @ V""",
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n23_help_and_question_marks",
        run=False,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "np.apply_along_axis?",
            "# is this the right order? the notes say X W^T\nQ = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T\nprint('Q ok?', Q.shape)",
            "scores = Q @ K.T\nd_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
            '''def softmax(x):
    """Why subtract the max? So that exp never overflows."""
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum()
attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)
output = attention_weights @ V
print("done?")''',
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="n24_data_repeated_list_softmax",
        run=True,
        cells=[
            "import numpy as np",
            GX,
            GW,
            "# scratch work\nprint(X @ W_q.T)",
            f"""# clean version of everything, data copied again so this cell runs on its own
{GX}
{GW}

def softmax(x):
    m = max(x)
    exps = [np.exp(v - m) for v in x]
    return [e / sum(exps) for e in exps]      # a plain list

Q = (W_q @ X.T).T
K = (W_k @ X.T).T
V = (W_v @ X.T).T
scores = Q @ K.T
scaled_scores = scores / np.sqrt(K.shape[1])
attention_weights = np.array([softmax(row) for row in scaled_scores])
output = attention_weights @ V""",
        ],
        truth=T(),
    )
)
