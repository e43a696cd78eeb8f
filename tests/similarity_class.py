"""A class for the similarity tests: independently written correct solutions of three
assignments, each in its own style (operators, library calls, loops, einsum, comprehensions),
and copies of some of them planted the ways students disguise a copy, made by program from the
originals: names changed, comments and whitespace changed, statements swapped and cells merged,
and one notebook spliced from two classmates.

Each solution fills the blanks of the assignment's own skeleton (cell number -> the cell's code),
so the skeleton's given cells, markdown and prints are in every notebook, as in a real class.
"""

from __future__ import annotations

import ast
import builtins
import copy
import io
import json
import keyword
import random
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# ---- attention_numpy: Q, K, V, scores, scaling, softmax, output ---------------------------------
NUMPY = {
    "ana": {
        8: "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T",
        12: "scores = Q @ K.T",
        15: "d_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
        18: "def softmax(x):\n    e = np.exp(x - np.max(x))\n    return e / e.sum()\n\n"
        "attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)",
        21: "output = attention_weights @ V",
    },
    "bo": {
        8: "# project the embeddings\nQ = np.dot(X, W_q.T)\nK = np.dot(X, W_k.T)\nV = np.dot(X, W_v.T)",
        12: "scores = np.dot(Q, K.T)  # similarity of every query with every key",
        15: "d_k = Q.shape[1]\nscaled_scores = np.divide(scores, d_k ** 0.5)",
        18: "def softmax(x):\n    shifted = x - x.max()\n    exps = np.exp(shifted)\n    total = np.sum(exps)\n"
        "    return exps / total\n\nrows = []\nfor row in scaled_scores:\n    rows.append(softmax(row))\n"
        "attention_weights = np.array(rows)",
        21: "output = np.dot(attention_weights, V)",
    },
    "chen": {
        8: "Q = np.einsum('td,od->to', X, W_q)\nK = np.einsum('td,od->to', X, W_k)\nV = np.einsum('td,od->to', X, W_v)",
        12: "n = Q.shape[0]\nscores = np.zeros((n, n))\nfor i in range(n):\n    for j in range(n):\n"
        "        scores[i, j] = np.sum(Q[i] * K[j])",
        15: "d_k = Q.shape[1]\nscaled_scores = scores * d_k ** -0.5",
        18: "def softmax(x):\n    z = np.exp(x - np.amax(x, axis=-1, keepdims=True))\n"
        "    return z / np.sum(z, axis=-1, keepdims=True)\n\nattention_weights = softmax(scaled_scores)",
        21: "output = np.einsum('ij,jd->id', attention_weights, V)",
    },
    "dara": {
        8: "Q, K, V = (np.matmul(X, W.T) for W in (W_q, W_k, W_v))",
        12: "scores = np.matmul(Q, np.transpose(K))",
        15: "d_k = Q.shape[1]\nscaled_scores = np.true_divide(scores, np.sqrt(float(d_k)))",
        18: "def softmax(x):\n    x = np.asarray(x, dtype=float)\n    x = x - x.max()\n"
        "    return np.exp(x) / np.exp(x).sum()\n\n"
        "attention_weights = np.vstack([softmax(r) for r in scaled_scores])",
        21: "output = np.array([sum(w * v for w, v in zip(weights_row, V)) for weights_row in attention_weights])",
    },
}

# ---- attention_french: one word's attention, all words, a function, two heads -------------------
FRENCH = {
    "eli": {
        9: "import math\n\nW_Q = W_Q.float()\nW_K = W_K.float()\nW_V = W_V.float()\n\n"
        "Q = embeddings @ W_Q\nK = embeddings @ W_K\nV = embeddings @ W_V",
        12: "attention_scores = K @ Q[0]\nprint(\"Attention Scores for 'Le':\\n\", attention_scores)",
        14: "d_k = K.shape[-1]\nscaled = attention_scores / math.sqrt(d_k)\nexps = torch.exp(scaled - scaled.max())\n"
        "attention_weights = exps / exps.sum()\nprint(\"Attention Weights for 'Le':\\n\", attention_weights)",
        16: "output = (attention_weights[:, None] * V).sum(dim=0, keepdim=True)\n"
        "print(\"Output Vector for 'Le':\\n\", output)",
        18: "all_scores = Q @ K.T / math.sqrt(d_k)\nall_attention_weights = torch.exp(all_scores)\n"
        "all_attention_weights = all_attention_weights / all_attention_weights.sum(dim=1, keepdim=True)\n"
        "all_outputs = all_attention_weights @ V\n"
        'print("Attention weights (rows: queries, columns: keys):\\n", all_attention_weights)\n'
        'print("Outputs:\\n", all_outputs)',
        20: "def self_attention(x, W_Q, W_K, W_V):\n    q, k, v = x @ W_Q, x @ W_K, x @ W_V\n"
        "    s = q @ k.T / math.sqrt(k.shape[1])\n    return torch.softmax(s, dim=1) @ v",
        24: "heads = []\nfor params in head_params:\n    heads.append(self_attention(embeddings, *params))\n"
        'print("Head outputs:", [tuple(h.shape) for h in heads])',
        26: "concatenated = torch.cat(heads, dim=1)\nmultihead_output = concatenated @ W_O\n"
        'print("Multi-head output:\\n", multihead_output)\nprint("Multi-head output shape:", multihead_output.shape)',
    },
    "femi": {
        9: "W_Q, W_K, W_V = (w.to(embeddings.dtype) for w in (W_Q, W_K, W_V))\n\n"
        "Q = torch.mm(embeddings, W_Q)\nK = torch.mm(embeddings, W_K)\nV = torch.mm(embeddings, W_V)",
        12: "query_le = Q[0]\nattention_scores = torch.stack([torch.dot(query_le, key) for key in K])\n"
        "print(\"Attention Scores for 'Le':\\n\", attention_scores)",
        14: "d_k = K.shape[-1]\nattention_weights = torch.nn.functional.softmax(attention_scores / torch.tensor(d_k).sqrt(), dim=0)\n"
        "print(\"Attention Weights for 'Le':\\n\", attention_weights)",
        16: "output = torch.zeros(1, V.shape[1])\nfor weight, value in zip(attention_weights, V):\n"
        "    output += weight * value\n"
        "print(\"Output Vector for 'Le':\\n\", output)",
        18: "all_attention_weights = torch.nn.functional.softmax(torch.mm(Q, K.t()) / d_k ** 0.5, dim=1)\n"
        "all_outputs = torch.mm(all_attention_weights, V)\n"
        'print("Attention weights (rows: queries, columns: keys):\\n", all_attention_weights)\n'
        'print("Outputs:\\n", all_outputs)',
        20: "def self_attention(x, W_Q, W_K, W_V):\n    queries = torch.mm(x, W_Q)\n    keys = torch.mm(x, W_K)\n"
        "    values = torch.mm(x, W_V)\n    d = keys.size(-1)\n"
        "    attn = torch.nn.functional.softmax(torch.mm(queries, keys.t()) / d ** 0.5, dim=-1)\n"
        "    return torch.mm(attn, values)",
        24: "heads = list(map(lambda p: self_attention(embeddings, p[0], p[1], p[2]), head_params))\n"
        'print("Head outputs:", [tuple(h.shape) for h in heads])',
        26: "multihead_output = torch.mm(torch.hstack(heads), W_O)\n"
        'print("Multi-head output:\\n", multihead_output)\nprint("Multi-head output shape:", multihead_output.shape)',
    },
    "gus": {
        9: "W_Q = W_Q.type(torch.float32)\nW_K = W_K.type(torch.float32)\nW_V = W_V.type(torch.float32)\n\n"
        "Q = torch.einsum('nd,de->ne', embeddings, W_Q)\nK = torch.einsum('nd,de->ne', embeddings, W_K)\n"
        "V = torch.einsum('nd,de->ne', embeddings, W_V)",
        12: "attention_scores = torch.einsum('e,ne->n', Q[0], K)\n"
        "print(\"Attention Scores for 'Le':\\n\", attention_scores)",
        14: "d_k = K.shape[-1]\nlogits = attention_scores / d_k ** 0.5\n"
        "attention_weights = torch.exp(logits - torch.logsumexp(logits, dim=0))\n"
        "print(\"Attention Weights for 'Le':\\n\", attention_weights)",
        16: "output = torch.einsum('n,ne->e', attention_weights, V).reshape(1, -1)\n"
        "print(\"Output Vector for 'Le':\\n\", output)",
        18: "logits_all = torch.einsum('qe,ke->qk', Q, K) / d_k ** 0.5\n"
        "all_attention_weights = torch.exp(logits_all - torch.logsumexp(logits_all, dim=-1, keepdim=True))\n"
        "all_outputs = torch.einsum('qk,ke->qe', all_attention_weights, V)\n"
        'print("Attention weights (rows: queries, columns: keys):\\n", all_attention_weights)\n'
        'print("Outputs:\\n", all_outputs)',
        20: "def self_attention(x, W_Q, W_K, W_V):\n    Q_, K_, V_ = [torch.einsum('nd,de->ne', x, W) for W in (W_Q, W_K, W_V)]\n"
        "    logits = torch.einsum('qe,ke->qk', Q_, K_) / K_.shape[-1] ** 0.5\n"
        "    return torch.einsum('qk,ke->qe', logits.softmax(dim=-1), V_)",
        24: "heads = [self_attention(embeddings, *w) for w in head_params]\n"
        'print("Head outputs:", [tuple(h.shape) for h in heads])',
        26: "multihead_output = torch.einsum('nf,fo->no', torch.cat(heads, -1), W_O)\n"
        'print("Multi-head output:\\n", multihead_output)\nprint("Multi-head output shape:", multihead_output.shape)',
    },
}

# ---- tokens_to_multihead: a short exercise of library calls -------------------------------------
_TOKENIZER = (
    "def load_vocab(path):\n    # Read `token<TAB>id` lines into a dict token -> id.\n    vocab = {}\n"
    "    with open(path, encoding='utf-8') as f:\n        for line in f:\n"
    "            token, idx = line.rstrip('\\n').split('\\t')\n            vocab[token] = int(idx)\n    return vocab\n\n\n"
    "class SubsetBertTokenizer:\n"
    '    # Offline stand-in for AutoTokenizer.from_pretrained("bert-base-uncased"), for words in the vocabulary subset.\n\n'
    "    def __init__(self, vocab_path, vocab_size=VOCAB_SIZE):\n        self.vocab = load_vocab(vocab_path)\n"
    "        self.vocab_size = vocab_size\n        self.unk_token = '[UNK]'\n\n"
    "    def tokenize(self, text):\n{tokenize}\n\n    def convert_tokens_to_ids(self, tokens):\n{ids}"
)


def _tokenizer(tokenize: str, ids: str) -> str:
    return _TOKENIZER.replace("{tokenize}", tokenize).replace("{ids}", ids)


MULTIHEAD = {
    "hana": {
        4: _tokenizer(
            tokenize='        return re.findall(r"\\w+|[^\\w\\s]", text.lower())',
            ids="        return [self.vocab.get(t, self.vocab[self.unk_token]) for t in tokens]",
        ),
        8: "vocab_size = tokenizer.vocab_size\nembedding_dim = 8\n\ntorch.manual_seed(0)\n"
        "embedding_layer = nn.Embedding(vocab_size, embedding_dim)\n\nembeddings = embedding_layer(token_ids)\n\n"
        'print("Embeddings shape:", embeddings.shape)',
        10: "torch.manual_seed(0)\nmultihead_attn = nn.MultiheadAttention(embedding_dim, 2, batch_first=True)",
        12: "output, attention_weights = multihead_attn(embeddings, embeddings, embeddings)",
        14: "attention_df = pd.DataFrame(attention_weights[0].detach().numpy(), index=tokens, columns=tokens)\n\n"
        "attention_df",
        16: "bank_most_attended = attention_df.loc['bank'].idxmax()\nprint(bank_most_attended)",
        18: "_, head_weights = multihead_attn(embeddings, embeddings, embeddings, average_attn_weights=False)\n"
        'print("Per-head weights shape:", head_weights.shape)',
    },
    "ivan": {
        4: _tokenizer(
            tokenize='        words = []\n        for piece in re.split(r"(\\W)", text.lower()):\n'
            "            if piece.strip():\n                words.append(piece)\n        return words",
            ids="        unk = self.vocab[self.unk_token]\n        ids = []\n        for token in tokens:\n"
            "            ids.append(self.vocab[token] if token in self.vocab else unk)\n        return ids",
        ),
        8: "vocab_size = tokenizer.vocab_size\nembedding_dim = 8\n\ntorch.manual_seed(0)\n"
        "embedding_layer = torch.nn.Embedding(num_embeddings=vocab_size, embedding_dim=embedding_dim)\n\n"
        "embeddings = embedding_layer.forward(token_ids)\n\n"
        'print("Embeddings shape:", embeddings.shape)',
        10: "torch.manual_seed(0)\nmultihead_attn = torch.nn.MultiheadAttention(embed_dim=embedding_dim, num_heads=2,\n"
        "                                             batch_first=True)",
        12: "x = embeddings\noutput, attention_weights = multihead_attn(query=x, key=x, value=x)",
        14: "weights = attention_weights.squeeze(0).detach().cpu().numpy()\n"
        "attention_df = pd.DataFrame(weights, index=tokens, columns=tokens)\n\nattention_df",
        16: "row = attention_df.loc['bank']\nbank_most_attended = row.index[row.values.argmax()]\n"
        "print(bank_most_attended)",
        18: "_, head_weights = multihead_attn(query=x, key=x, value=x, need_weights=True, average_attn_weights=False)\n"
        'print("Per-head weights shape:", head_weights.shape)',
    },
    "jo": {
        4: _tokenizer(
            tokenize='        pattern = re.compile(r"[a-z0-9]+|[^a-z0-9\\s]")\n        return pattern.findall(text.lower())',
            ids="        return list(map(lambda tok: self.vocab.get(tok, self.vocab['[UNK]']), tokens))",
        ),
        8: "vocab_size = tokenizer.vocab_size\nembedding_dim = 8\n\ntorch.manual_seed(0)\n"
        "embedding_layer = nn.Embedding(vocab_size, embedding_dim)\n\nembeddings = embedding_layer(token_ids)\n\n"
        'print("Embeddings shape:", embeddings.shape)',
        10: "torch.manual_seed(0)\nheads = 2\nmultihead_attn = nn.MultiheadAttention(embedding_dim, heads, batch_first=True)",
        12: "output, attention_weights = multihead_attn(embeddings, embeddings, embeddings, need_weights=True)",
        14: "attention_df = pd.DataFrame(attention_weights.detach().numpy()[0])\n"
        "attention_df.index = tokens\nattention_df.columns = tokens\n\nattention_df",
        16: "ranked = attention_df.T['bank'].sort_values(ascending=False)\n"
        "bank_most_attended = ranked.index[0]\nprint(bank_most_attended)",
        18: "_, head_weights = multihead_attn(embeddings, embeddings, embeddings,\n"
        "                                average_attn_weights=False)\n"
        'print("Per-head weights shape:", head_weights.shape)',
    },
}

STYLES = {"attention_numpy": NUMPY, "attention_french": FRENCH, "tokens_to_multihead": MULTIHEAD}


def skeleton(assignment: str) -> dict[str, object]:
    path = ROOT / "assignments" / assignment / f"{assignment}.ipynb"
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


def notebook(assignment: str, fills: dict[int, str]) -> dict[str, object]:
    """The skeleton with these cells (1-based, among all cells) holding the student's code."""
    nb = copy.deepcopy(skeleton(assignment))
    cells = nb["cells"]
    assert isinstance(cells, list)
    for number, source in fills.items():
        cell = cells[number - 1]
        assert cell["cell_type"] == "code", (assignment, number)
        cell["source"] = source
        cell["outputs"] = [
            {"output_type": "stream", "name": "stdout", "text": "same printed output in every notebook\n"}
        ]
    return nb


# ---- disguises, made by program ------------------------------------------------------------------


def _bound_names(code: str) -> set[str]:
    return set(re.findall(r"^\s*(?:def\s+)?([A-Za-z_]\w*)\s*(?:=|\()", code, re.M)) | set(
        re.findall(r"\bfor\s+([A-Za-z_]\w*)\s+in\b", code)
    )


def rename(fills: dict[int, str], keep: set[str]) -> dict[int, str]:
    """Every name the student's code binds (loop variables, helpers, parameters), other than the
    names the grader checks (``keep``), renamed consistently; comments dropped."""
    bound: set[str] = set()
    for code in fills.values():
        bound |= _bound_names(code)
    for code in fills.values():  # parameters
        for params in re.findall(r"def\s+\w+\(([^)]*)\)", code):
            bound |= {p.strip().split("=")[0].strip("* ") for p in params.split(",") if p.strip()}
    new_names = {n: f"my_{n.lower()}_v2" for n in bound - keep if not keyword.iskeyword(n) and n != "self"}
    out = {}
    for cell, code in fills.items():
        toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
        result = []
        for i, t in enumerate(toks):
            attribute = i > 0 and toks[i - 1].string == "."
            argument = i + 1 < len(toks) and toks[i + 1].string == "=" and toks[i - 1].string in "(,"
            if t.type == tokenize.NAME and t.string in new_names and not attribute and not argument:
                t = t._replace(string=new_names[t.string])
            result.append(t)
        out[cell] = tokenize.untokenize(result)
    return out


def recomment(fills: dict[int, str]) -> dict[int, str]:
    """Comments removed and others written, blank lines added, spacing around operators changed."""
    out = {}
    for cell, code in fills.items():
        lines = []
        for line in code.splitlines():
            line = re.sub(r"\s+#.*$", "", line) if "'" not in line and '"' not in line else line
            if line.lstrip().startswith("#"):
                continue
            if "'" not in line and '"' not in line:  # one operator between two operands: spaced out
                line = re.sub(r"(?<=[\w)\]])\s*([=@+/-])\s*(?=[\w(\[])", r"  \1  ", line)
            indent = line[: len(line) - len(line.lstrip())]
            lines.append(f"{indent}# my own step\n{line}\n" if line.strip() else "")
        out[cell] = "\n".join(lines)
    return out


def reorder(fills: dict[int, str]) -> dict[int, str]:
    """Cells merged (all the student's code moved into the last blank cell, the others left
    empty, as a student who pastes a classmate's code in one piece does; the skeleton's display
    cells in between then fail, but the code compared is the same) and independent statements
    swapped: every function and class definition moved to the top, ahead of the computations
    before it, and runs of assignments that do not read each other (``Q = ...``, ``K = ...``,
    ``V = ...``) reversed."""
    definitions: list[str] = []
    statements: list[str] = []
    for cell in sorted(fills):
        blocks = re.split(r"\n(?=\S)", fills[cell].strip("\n"))  # top-level statements with their bodies
        for block in blocks:
            (definitions if re.match(r"(def|class)\s", block) else statements).append(block)
    out_statements: list[str] = []
    run: list[str] = []
    for block in [*statements, ""]:
        target = re.match(r"([A-Za-z_]\w*) = ", block)
        if target and not any(
            re.search(rf"\b{re.escape(t)}\b", block.split("=", 1)[1])
            for t in (re.match(r"(\w+)", r).group(1) for r in run)
        ):  # type: ignore[union-attr]
            run.append(block)
            continue
        out_statements.extend(reversed(run))
        run = [block] if target else []
        if not target and block:
            out_statements.append(block)
    out_statements.extend(reversed(run))
    out = {cell: "" for cell in fills}
    out[max(fills)] = "\n".join([*definitions, *out_statements])
    return out


def splice(first: dict[int, str], second: dict[int, str]) -> dict[int, str]:
    """The first half of the questions (by cell) from one classmate, the rest from another."""
    cells = sorted(set(first) | set(second))
    half = len(cells) // 2
    return {c: (first if i < half else second)[c] for i, c in enumerate(cells)}


def write_class(folder: Path) -> dict[str, dict[str, set[str]]]:
    """Write the class (one folder per assignment, one notebook per student) and return, per
    assignment, whose work each notebook holds: two notebooks holding the same student's work are a
    planted pair, any other two are independent. (The first student's code is the solution's almost
    word for word: it has no copy here, since a copy of the solution's code is no evidence, and
    ``grader similarity`` rightly finds none; see docs/similarity.md.)"""
    planted: dict[str, dict[str, set[str]]] = {}
    for assignment, styles in STYLES.items():
        out = folder / assignment
        out.mkdir(parents=True)
        names = list(styles)
        keep = _checked_names(assignment)
        fills = dict(styles)
        fills["copy-renamed"] = rename(styles[names[-1]], keep)
        fills["copy-recommented"] = recomment(styles[names[1]])
        fills["copy-reordered"] = recomment(reorder(styles[names[2]]))
        fills["copy-spliced"] = splice(styles[names[1]], styles[names[-1]])
        for student, f in fills.items():
            (out / f"{student}.ipynb").write_text(json.dumps(notebook(assignment, f), indent=1), encoding="utf-8")
        planted[assignment] = {student: {student} for student in names}
        planted[assignment].update(
            {
                "copy-renamed": {names[-1]},
                "copy-recommented": {names[1]},
                "copy-reordered": {names[2]},
                "copy-spliced": {names[1], names[-1]},
            }
        )
    return planted


def _checked_names(assignment: str) -> set[str]:
    from grader.course import config

    course = config.load(ROOT / "config.yaml")
    a = course.assignment(assignment)
    given: set[str] = set()
    for cell in skeleton(assignment)["cells"]:  # type: ignore[union-attr]
        if cell["cell_type"] == "code":
            given |= _bound_names("".join(cell["source"]).replace("?", "0"))
    return given | set(a.given) | {n for c in a.checks for n in c.names}


# ---- a class of realistic students, made by program ----------------------------------------------
#
# Each student picks, per question, one of the common ways of writing it (``POOLS``), adds some of
# the checks and explorations students commonly write (a shape printed, rows that sum to one, a
# heat map, an argmax "to explore": ``EXTRAS``), and a few lines of their own (``personal``): the
# experiments and debugging prints nobody else writes the same way. Copies are made from a
# student's notebook with the usual disguises (``DISGUISES``).

NUMPY_POOLS: dict[int, list[str]] = {
    8: [
        "Q = X @ W_q.T\nK = X @ W_k.T\nV = X @ W_v.T",
        "Q = np.dot(X, W_q.T)\nK = np.dot(X, W_k.T)\nV = np.dot(X, W_v.T)",
        "Q, K, V = (np.matmul(X, W.T) for W in (W_q, W_k, W_v))",
        "Q = np.einsum('td,od->to', X, W_q)\nK = np.einsum('td,od->to', X, W_k)\nV = np.einsum('td,od->to', X, W_v)",
        "def project(X, W):\n    return X @ W.T\n\nQ = project(X, W_q)\nK = project(X, W_k)\nV = project(X, W_v)",
        "weights = [W_q, W_k, W_v]\nQ, K, V = [X @ W.T for W in weights]",
        "Q = (W_q @ X.T).T\nK = (W_k @ X.T).T\nV = (W_v @ X.T).T",
    ],
    12: [
        "scores = Q @ K.T",
        "scores = np.dot(Q, K.T)",
        "n = Q.shape[0]\nscores = np.zeros((n, n))\nfor i in range(n):\n    for j in range(n):\n"
        "        scores[i, j] = np.sum(Q[i] * K[j])",
        "scores = np.array([[q @ k for k in K] for q in Q])",
        "scores = np.zeros((len(Q), len(K)))\nfor i, q in enumerate(Q):\n    scores[i] = K @ q",
        "scores = np.einsum('id,jd->ij', Q, K)",
    ],
    15: [
        "d_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
        "d_k = Q.shape[1]\nscaled_scores = scores / d_k ** 0.5",
        "d_k = Q.shape[1]\nscaled_scores = scores * d_k ** -0.5",
        "d_k = Q.shape[1]\nscale = np.sqrt(d_k)\nscaled_scores = scores / scale",
        "d_k = Q.shape[1]\nscaled_scores = np.divide(scores, np.sqrt(float(d_k)))",
        "import math\n\nd_k = Q.shape[1]\nscaled_scores = scores / math.sqrt(d_k)",
    ],
    18: [
        "def softmax(x):\n{body}\n\n{weights}",
    ],
    21: [
        "output = attention_weights @ V",
        "output = np.dot(attention_weights, V)",
        "output = np.array([sum(w * v for w, v in zip(row, V)) for row in attention_weights])",
        "output = np.einsum('ij,jd->id', attention_weights, V)",
        "output = np.zeros((attention_weights.shape[0], V.shape[1]))\nfor i in range(len(output)):\n"
        "    output[i] = attention_weights[i] @ V",
    ],
}
NUMPY_SOFTMAX = [
    "    e_x = np.exp(x - np.max(x))\n    return e_x / e_x.sum()",
    "    return np.exp(x) / np.sum(np.exp(x))",
    "    e = np.exp(x - np.max(x, axis=-1, keepdims=True))\n    return e / np.sum(e, axis=-1, keepdims=True)",
    "    shifted = x - x.max()\n    exps = np.exp(shifted)\n    total = np.sum(exps)\n    return exps / total",
    "    x = np.asarray(x, dtype=float)\n    z = x - x.max()\n    return np.exp(z) / np.exp(z).sum()",
]
NUMPY_WEIGHTS = [
    "attention_weights = np.apply_along_axis(softmax, 1, scaled_scores)",
    "attention_weights = np.array([softmax(row) for row in scaled_scores])",
    "rows = []\nfor row in scaled_scores:\n    rows.append(softmax(row))\nattention_weights = np.array(rows)",
    "attention_weights = np.vstack([softmax(r) for r in scaled_scores])",
]
NUMPY_EXTRAS: dict[int, list[str]] = {
    8: ["print(Q.shape, K.shape, V.shape)", "print('Q shape:', Q.shape)", "assert Q.shape == K.shape"],
    12: ["print(scores.shape)", "print(scores)", "print('scores shape:', scores.shape)"],
    18: [
        "print(attention_weights.sum(axis=1))",
        "assert np.allclose(attention_weights.sum(axis=1), 1)",
        "print(np.allclose(attention_weights.sum(axis=-1), 1.0))",
        "import matplotlib.pyplot as plt\nplt.imshow(attention_weights, cmap='viridis')\nplt.colorbar()\n"
        "plt.title('Attention weights')\nplt.show()",
        "import matplotlib.pyplot as plt\nimport seaborn as sns\n"
        "sns.heatmap(attention_weights, annot=True, xticklabels=tokens, yticklabels=tokens)\nplt.show()",
        "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nim = ax.imshow(attention_weights)\n"
        "fig.colorbar(im)\nax.set_xticks(range(len(tokens)))\nax.set_xticklabels(tokens)\nplt.show()",
        "print(attention_weights.argmax(axis=1))",
        "for i, t in enumerate(tokens):\n    print(t, '->', tokens[attention_weights[i].argmax()])",
        "print([tokens[j] for j in np.argmax(attention_weights, axis=1)])",
    ],
    21: [
        "print(output.shape)",
        "print('output shape:', output.shape)",
        "np.set_printoptions(precision=3, suppress=True)",
    ],
}
NUMPY_NAMES = ["Q", "K", "V", "scores", "scaled_scores", "attention_weights", "output", "X"]
NUMPY_METHODS = ["sum()", "mean()", "max()", "min()", "std()", "round(2)", "T", "argmax()", "sum(axis=0)", "cumsum()"]
NUMPY_FUNCTIONS = ["np.exp", "np.tanh", "np.abs", "np.sqrt", "np.log1p", "np.square", "np.sort"]

FRENCH_POOLS: dict[int, list[str]] = {
    9: ["{convert}\n\n{project}"],
    12: [
        "attention_scores = K @ Q[0]",
        "attention_scores = Q[0] @ K.T",
        "attention_scores = torch.matmul(Q[0], K.T)",
        "attention_scores = torch.stack([torch.dot(Q[0], k) for k in K])",
        "attention_scores = torch.einsum('e,ne->n', Q[0], K)",
        "query = Q[0]\nattention_scores = (K * query).sum(dim=1)",
    ],
    14: [
        "d_k = K.shape[-1]\nattention_weights = torch.softmax(attention_scores / d_k ** 0.5, dim=0)",
        "import math\nimport torch.nn.functional as F\n\nd_k = K.shape[-1]\n"
        "attention_weights = F.softmax(attention_scores / math.sqrt(d_k), dim=-1)",
        "import math\n\nd_k = K.shape[-1]\nscaled = attention_scores / math.sqrt(d_k)\n"
        "exps = torch.exp(scaled - scaled.max())\nattention_weights = exps / exps.sum()",
        "d_k = K.shape[-1]\nattention_weights = torch.nn.functional.softmax(attention_scores / "
        "torch.sqrt(torch.tensor(d_k, dtype=torch.float32)), dim=0)",
        "d_k = K.shape[-1]\nattention_weights = (attention_scores / d_k ** 0.5).softmax(dim=0)",
    ],
    16: [
        "output = (attention_weights @ V).unsqueeze(0)",
        "output = torch.matmul(attention_weights, V).reshape(1, -1)",
        "output = (attention_weights[:, None] * V).sum(dim=0, keepdim=True)",
        "output = torch.zeros(1, V.shape[1])\nfor weight, value in zip(attention_weights, V):\n    output += weight * value",
        "output = torch.einsum('n,ne->e', attention_weights, V).reshape(1, -1)",
    ],
    18: [
        "all_attention_weights = torch.softmax(Q @ K.T / d_k ** 0.5, dim=-1)\nall_outputs = all_attention_weights @ V",
        "all_scores = torch.matmul(Q, K.T) / d_k ** 0.5\nall_attention_weights = torch.softmax(all_scores, dim=1)\n"
        "all_outputs = torch.matmul(all_attention_weights, V)",
        "import math\n\nall_scores = Q @ K.T / math.sqrt(d_k)\nall_attention_weights = torch.exp(all_scores)\n"
        "all_attention_weights = all_attention_weights / all_attention_weights.sum(dim=1, keepdim=True)\n"
        "all_outputs = all_attention_weights @ V",
        "logits = torch.einsum('qe,ke->qk', Q, K) / d_k ** 0.5\n"
        "all_attention_weights = logits.softmax(dim=-1)\nall_outputs = torch.einsum('qk,ke->qe', all_attention_weights, V)",
    ],
    20: [
        "def self_attention(x, W_Q, W_K, W_V):\n    Q = x @ W_Q\n    K = x @ W_K\n    V = x @ W_V\n"
        "    weights = torch.softmax(Q @ K.T / K.shape[-1] ** 0.5, dim=-1)\n    return weights @ V",
        "def self_attention(x, W_Q, W_K, W_V):\n    q, k, v = x @ W_Q, x @ W_K, x @ W_V\n"
        "    s = q @ k.T / math.sqrt(k.shape[1])\n    return torch.softmax(s, dim=1) @ v",
        "def self_attention(x, W_Q, W_K, W_V):\n    queries = torch.mm(x, W_Q)\n    keys = torch.mm(x, W_K)\n"
        "    values = torch.mm(x, W_V)\n    d = keys.size(-1)\n"
        "    attn = torch.nn.functional.softmax(torch.mm(queries, keys.t()) / d ** 0.5, dim=-1)\n"
        "    return torch.mm(attn, values)",
    ],
    24: [
        "heads = [self_attention(embeddings, *p) for p in head_params]",
        "heads = []\nfor params in head_params:\n    heads.append(self_attention(embeddings, *params))",
        "heads = [self_attention(embeddings, Wq, Wk, Wv) for Wq, Wk, Wv in head_params]",
        "heads = list(map(lambda p: self_attention(embeddings, p[0], p[1], p[2]), head_params))",
    ],
    26: [
        "multihead_output = torch.cat(heads, dim=-1) @ W_O",
        "concatenated = torch.cat(heads, dim=1)\nmultihead_output = concatenated @ W_O",
        "multihead_output = torch.mm(torch.hstack(heads), W_O)",
        "multihead_output = torch.matmul(torch.cat(heads, -1), W_O)",
    ],
}
FRENCH_CONVERT = [
    "W_Q = W_Q.float()\nW_K = W_K.float()\nW_V = W_V.float()",
    "W_Q = W_Q.to(torch.float32)\nW_K = W_K.to(torch.float32)\nW_V = W_V.to(torch.float32)",
    "W_Q, W_K, W_V = (w.to(embeddings.dtype) for w in (W_Q, W_K, W_V))",
    "W_Q = W_Q.type(torch.float32)\nW_K = W_K.type(torch.float32)\nW_V = W_V.type(torch.float32)",
]
FRENCH_PROJECT = [
    "Q = embeddings @ W_Q\nK = embeddings @ W_K\nV = embeddings @ W_V",
    "Q = torch.matmul(embeddings, W_Q)\nK = torch.matmul(embeddings, W_K)\nV = torch.matmul(embeddings, W_V)",
    "Q = torch.mm(embeddings, W_Q)\nK = torch.mm(embeddings, W_K)\nV = torch.mm(embeddings, W_V)",
    "Q, K, V = [embeddings @ W for W in (W_Q, W_K, W_V)]",
]
FRENCH_EXTRAS: dict[int, list[str]] = {
    9: ["print(Q.shape, K.shape, V.shape)", "print(W_Q.dtype)", "assert Q.shape == (7, 2)"],
    12: ["print(attention_scores.shape)", "print(attention_scores.argmax())"],
    14: ["print(attention_weights.sum())", "assert torch.isclose(attention_weights.sum(), torch.tensor(1.0))"],
    18: [
        "print(all_attention_weights.sum(dim=-1))",
        "assert torch.allclose(all_attention_weights.sum(dim=-1), torch.ones(len(tokens)))",
        "print(torch.allclose(all_attention_weights.sum(-1), torch.ones(all_attention_weights.shape[0])))",
        "import matplotlib.pyplot as plt\nplt.imshow(all_attention_weights, cmap='viridis')\nplt.colorbar()\n"
        "plt.xticks(range(len(tokens)), tokens, rotation=90)\nplt.yticks(range(len(tokens)), tokens)\nplt.show()",
        "import seaborn as sns\nimport matplotlib.pyplot as plt\n"
        "sns.heatmap(all_attention_weights.numpy(), annot=True, xticklabels=tokens, yticklabels=tokens)\nplt.show()",
        "print(all_attention_weights.argmax(dim=-1))",
        "for i, t in enumerate(tokens):\n    print(t, tokens[all_attention_weights[i].argmax()])",
        "print(torch.topk(all_attention_weights[0], 2))",
    ],
    26: ["print(multihead_output.shape)", "assert multihead_output.shape == (7, 3)"],
}
FRENCH_NAMES = [
    "Q",
    "K",
    "V",
    "attention_scores",
    "attention_weights",
    "all_attention_weights",
    "all_outputs",
    "output",
]
FRENCH_METHODS = ["sum()", "mean()", "max()", "min()", "std()", "round(decimals=2)", "T", "argmax()", "sum(dim=0)"]
FRENCH_FUNCTIONS = ["torch.exp", "torch.tanh", "torch.abs", "torch.sqrt", "torch.relu", "torch.sigmoid"]

GENERATED = {
    "attention_numpy": (NUMPY_POOLS, NUMPY_EXTRAS, NUMPY_NAMES, NUMPY_METHODS, NUMPY_FUNCTIONS),
    "attention_french": (FRENCH_POOLS, FRENCH_EXTRAS, FRENCH_NAMES, FRENCH_METHODS, FRENCH_FUNCTIONS),
}


def _expression(rng: random.Random, names: list[str], methods: list[str], functions: list[str], depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        name = rng.choice(names)
        return rng.choice([name, f"{name}[{rng.randrange(3)}]", str(rng.randrange(1, 9))])
    kind = rng.randrange(3)
    if kind == 0:
        return (
            f"({_expression(rng, names, methods, functions, depth - 1)} {rng.choice('+-*')} "
            f"{_expression(rng, names, methods, functions, depth - 1)})"
        )
    if kind == 1:
        return f"{rng.choice(functions)}({_expression(rng, names, methods, functions, depth - 1)})"
    base = _expression(rng, names, methods, functions, depth - 1)
    return f"{f'({base})' if base.isdigit() else base}.{rng.choice(methods)}"


def personal(rng: random.Random, assignment: str) -> str:
    """A line of the student's own: an experiment or a debugging print nobody writes the same way."""
    _, _, names, methods, functions = GENERATED[assignment]
    e = _expression(rng, names, methods, functions, 3)
    form = rng.randrange(4)
    if form == 0:
        return f"{rng.choice(['tmp', 'check', 'test', 'val', 'diff'])}_{rng.randrange(100)} = {e}"
    if form == 1:
        return f"print({e})"
    if form == 2:
        return f"if ({_expression(rng, names, methods, functions, 2)}).sum() > {rng.randrange(9)}:\n    print({e})"
    return f"print('{rng.choice(['debug', 'look', 'hmm', 'check'])}', {e})"


def student(rng: random.Random, assignment: str, own_lines: tuple[int, int] = (1, 4)) -> dict[int, str]:
    """One independent student's answers: cell number -> code."""
    pools, extras, *_ = GENERATED[assignment]
    fills: dict[int, str] = {}
    for cell, pool in pools.items():
        code = rng.choice(pool)
        if assignment == "attention_numpy" and cell == 18:
            code = code.replace("{body}", rng.choice(NUMPY_SOFTMAX)).replace("{weights}", rng.choice(NUMPY_WEIGHTS))
        if assignment == "attention_french" and cell == 9:
            code = code.replace("{convert}", rng.choice(FRENCH_CONVERT)).replace(
                "{project}", rng.choice(FRENCH_PROJECT)
            )
        if assignment == "attention_french" and cell == 20 and "math." in code:
            code = "import math\n\n" + code
        for extra in extras.get(cell, []):
            if rng.random() < 0.3:
                code += "\n" + extra
        fills[cell] = code
    later = sorted(fills)[1:]  # after the first answer, so the names exist
    for _ in range(rng.randint(*own_lines)):
        cell = rng.choice(later)
        fills[cell] += "\n" + personal(rng, assignment)
    return fills


# ---- disguises -----------------------------------------------------------------------------------


def rename_inconsistently(fills: dict[int, str], keep: set[str]) -> dict[int, str]:
    """Each cell's own names renamed on its own, a new name per cell (``tmp`` in one cell becomes
    ``a_12``, in another ``b_18``), as when a copier renames cell by cell."""
    out = {}
    for n, (cell, code) in enumerate(sorted(fills.items())):
        renamed = rename({cell: code}, keep)[cell]
        out[cell] = renamed.replace("_v2", f"_c{n}") if n % 2 else code
    return out


class _Operators(ast.NodeTransformer):
    """``@`` written as a library call and library calls as ``@``, ``.T`` as a transpose call and back,
    and keyword arguments as positional ones and back."""

    def __init__(self, lib: str) -> None:
        self.lib = lib

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult):
            fn = "dot" if self.lib == "np" else "matmul"
            return ast.Call(ast.Attribute(ast.Name(self.lib, ast.Load()), fn, ast.Load()), [node.left, node.right], [])
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr == "T" and isinstance(node.ctx, ast.Load):
            if self.lib == "np":
                return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "transpose", ast.Load()), [node.value], [])
            return ast.Call(ast.Attribute(node.value, "transpose", ast.Load()), [ast.Constant(0), ast.Constant(1)], [])
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("dot", "matmul", "mm") and len(node.args) == 2:
            return ast.BinOp(node.args[0], ast.MatMult(), node.args[1])
        names = {"axis", "dim"}
        if isinstance(func, ast.Attribute) and len(node.keywords) >= 1 and node.keywords[0].arg in names:
            if isinstance(func.value, ast.Name) and func.value.id in ("np", "torch", "F"):
                if len(node.args) == 1:
                    node.args.append(node.keywords.pop(0).value)
            elif not node.args:
                node.args.append(node.keywords.pop(0).value)
        elif (
            isinstance(func, ast.Attribute)
            and func.attr in ("sum", "softmax", "argmax", "mean")
            and len(node.args) == 1
        ):
            if not (isinstance(func.value, ast.Name) and func.value.id in ("np", "torch", "F")):
                node.keywords.insert(0, ast.keyword("axis" if self.lib == "np" else "dim", node.args.pop()))
        return node


def operators(fills: dict[int, str], lib: str) -> dict[int, str]:
    out = {}
    for cell, code in fills.items():
        tree = ast.parse(code)
        tree = _Operators(lib).visit(tree)
        out[cell] = ast.unparse(ast.fix_missing_locations(tree))
    return out


def inline_helpers(fills: dict[int, str]) -> dict[int, str]:
    """Every helper that returns one expression written out where it is called, its definition gone."""
    helpers: dict[str, ast.FunctionDef] = {}
    trees = {cell: ast.parse(code) for cell, code in fills.items()}
    for tree in trees.values():
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef) and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Return):
                helpers[stmt.name] = stmt

    class Inline(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id in helpers:
                fn = helpers[node.func.id]
                params = [a.arg for a in fn.args.args]
                if len(params) == len(node.args):
                    ret = fn.body[0]
                    assert isinstance(ret, ast.Return) and ret.value is not None
                    body = copy.deepcopy(ret.value)
                    mapping = dict(zip(params, node.args, strict=True))

                    class Put(ast.NodeTransformer):
                        def visit_Name(self, n: ast.Name) -> ast.AST:
                            return copy.deepcopy(mapping[n.id]) if n.id in mapping else n

                    found: ast.AST = Put().visit(body)
                    return found
            return node

    out = {}
    for cell, tree in trees.items():
        tree.body = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and s.name in helpers)]
        out[cell] = ast.unparse(ast.fix_missing_locations(Inline().visit(tree)))
    return out


def extract_helper(fills: dict[int, str]) -> dict[int, str]:
    """The longest top-level assignment of the notebook made a helper of its own, called where it was."""
    best: tuple[int, int, int] | None = None
    trees = {cell: ast.parse(code) for cell, code in fills.items()}
    for cell, tree in trees.items():
        for n, stmt in enumerate(tree.body):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                size = len(ast.unparse(stmt.value))
                if best is None or size > best[0]:
                    best = (size, cell, n)
    if best is None:
        return dict(fills)
    _, cell, n = best
    stmt = trees[cell].body[n]
    assert isinstance(stmt, ast.Assign)
    local = {
        t.id
        for c in ast.walk(stmt.value)
        if isinstance(c, ast.comprehension)
        for t in ast.walk(c.target)
        if isinstance(t, ast.Name)
    }
    local |= {a.arg for f in ast.walk(stmt.value) if isinstance(f, ast.Lambda) for a in f.args.args}
    local |= set(dir(builtins))

    reads = sorted(
        {x.id for x in ast.walk(stmt.value) if isinstance(x, ast.Name) and x.id not in ("np", "torch", "math", "F")}
        - local
    )
    helper = ast.parse(f"def compute_it({', '.join(reads)}):\n    return {ast.unparse(stmt.value)}").body[0]
    call = ast.parse(f"{ast.unparse(stmt.targets[0])} = compute_it({', '.join(reads)})").body[0]
    trees[cell].body[n : n + 1] = [helper, call]
    out = dict(fills)
    out[cell] = ast.unparse(trees[cell])
    return out


def disguise(kind: str, fills: dict[int, str], assignment: str) -> dict[int, str]:
    keep = _checked_names(assignment)
    lib = "np" if assignment == "attention_numpy" else "torch"
    if kind == "exact":
        return dict(fills)
    if kind == "renamed":
        return rename(fills, keep)
    if kind == "renamed-inconsistently":
        return rename_inconsistently(fills, keep)
    if kind == "recommented":
        return recomment(fills)
    if kind == "reordered":
        return reorder(fills)
    if kind == "operators":
        return operators(fills, lib)
    if kind == "helper-inlined":
        return inline_helpers(fills)
    if kind == "helper-extracted":
        return extract_helper(fills)
    if kind == "all":
        return recomment(reorder(rename(operators(fills, lib), keep)))
    raise ValueError(kind)


DISGUISES = [
    "renamed",
    "renamed-inconsistently",
    "recommented",
    "reordered",
    "operators",
    "helper-inlined",
    "helper-extracted",
    "all",
]


def generated_class(folder: Path, assignment: str, n: int, copies: int, seed: int, past: int = 0) -> dict[str, str]:
    """``n`` notebooks of ``assignment`` in ``folder``: ``copies`` of them copies of a classmate
    (each with one of the disguises, in turn), the others independent students. Returns each
    notebook's author: two notebooks with the same author are a planted pair."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, dict[int, str]] = {}
    author: dict[str, str] = {}
    for i in range(n - copies):
        name = f"s{i:03d}"
        made[name] = student(rng, assignment)
        author[name] = name
    originals = rng.sample(sorted(made), copies)
    for k, original in enumerate(originals):
        name = f"s{n - copies + k:03d}"
        made[name] = disguise(DISGUISES[k % len(DISGUISES)], made[original], assignment)
        author[name] = original
    for name, fills in made.items():
        (folder / f"{name}.ipynb").write_text(json.dumps(notebook(assignment, fills)), encoding="utf-8")
    return author
