"""Per-assignment truth spec, written from the solution notebooks and config.yaml only.

For every check of config.yaml: the question id, the check's key, what is read from the student
(a value name or an expression), its points, the phase the value is read in ('p1' = just before
the first binding of the assignment's `before:` name, else 'final'), the reference code of that
step (copied from the solution notebook's cell for the step) and the upstream the step reads:
other checks ("qid:key") or whole questions for callables ("qid").
The reference code runs in a copy of the student's own namespace (same run, same phase), so every
upstream value and callable it reads is the student's own.
"""

import numpy as np

# ---------------------------------------------------------------- variants of the given inputs
# Own draws, shaped like config.yaml's variants (the grader draws its own; a value computed from the
# inputs is right on any draw, a typed-in one is not).


def _np(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape)


def _t(arr, like):
    import torch

    t = torch.tensor(arr, dtype=like.dtype)
    if isinstance(like, torch.nn.Parameter):
        t = torch.nn.Parameter(t, requires_grad=like.requires_grad)
    return t


GIVEN = {
    "attention_numpy": {
        "X": lambda rng, v, old: _np(rng, (3 + v, 2)),
        "W_q": lambda rng, v, old: _np(rng, (1 + v, 2)),
        "W_k": lambda rng, v, old: _np(rng, (1 + v, 2)),
        "W_v": lambda rng, v, old: _np(rng, np.shape(old)),
    },
    "attention_similarity": {
        "loaded_word_vectors": lambda rng, v, old: {k: rng.uniform(-0.6, 0.6, np.shape(a)) for k, a in old.items()},
        "the": lambda rng, v, old: _t(rng.uniform(0, 1, 3), old),
        "bank": lambda rng, v, old: _t(rng.uniform(0, 1, 3), old),
        "raised": lambda rng, v, old: _t(rng.uniform(0, 1, 3), old),
        "interest": lambda rng, v, old: _t(rng.uniform(0, 1, 3), old),
        "rates": lambda rng, v, old: _t(rng.uniform(0, 1, 3), old),
        "W_q": lambda rng, v, old: _t(rng.uniform(0, 2, (3, 3)), old),
        "W_k": lambda rng, v, old: _t(rng.uniform(0, 2, (3, 3)), old),
        "W_v": lambda rng, v, old: _t(rng.uniform(0, 2, (3, 3)), old),
    },
    "tokens_to_multihead": {
        "embeddings": lambda rng, v, old: _t(rng.uniform(-1, 1, (1, 5, 8))[:, [0, 1, 2, 0, 4]], old.detach()),
    },
    "attention_french": {
        "embeddings": lambda rng, v, old: _t(rng.uniform(0, 1, (7, 3)), old),
        "W_Q": lambda rng, v, old: _t(rng.integers(-2, 3, (3, 2)), old),
        "W_K": lambda rng, v, old: _t(rng.integers(-2, 3, (3, 2)), old),
        "W_V": lambda rng, v, old: _t(rng.integers(-2, 3, (3, 2)), old),
        "W_O": lambda rng, v, old: _t(rng.uniform(-1, 1, (4, 3)), old),
    },
    "attention_from_scratch": {
        "inputs": lambda rng, v, old: _t(rng.uniform(0, 1, (6, 3)), old),
        "W_query": lambda rng, v, old: _t(rng.uniform(0, 1, (3, 2)), old),
        "W_key": lambda rng, v, old: _t(rng.uniform(0, 1, (3, 2)), old),
        "W_value": lambda rng, v, old: _t(rng.uniform(0, 1, (3, 2)), old),
    },
}

BEFORE = {"attention_similarity": "bank", "attention_from_scratch": "query_2"}

# ---------------------------------------------------------------- checks


def C(q, key, points, ref, up=(), value=None, expr=None, seed=None, phase="final"):
    return dict(q=q, key=key, points=points, ref=ref, up=list(up), value=value, expr=expr, seed=seed, phase=phase)


NUMPY_SOFTMAX = """
def softmax(x):
    e_x = np.exp(x - np.max(x))  # stability trick
    return e_x / np.sum(e_x, axis=-1, keepdims=True)
"""

CHECKS = {}

CHECKS["attention_numpy"] = [
    C("qkv", "Q", 1, "Q = X @ W_q.T", value="Q"),
    C("qkv", "K", 1, "K = X @ W_k.T", value="K"),
    C("qkv", "V", 1, "V = X @ W_v.T", value="V"),
    C("scores", "scores", 1, "scores = Q @ K.T", ["qkv:Q", "qkv:K"], value="scores"),
    C(
        "scaled",
        "scaled_scores",
        2,
        "d_k = Q.shape[1]\nscaled_scores = scores / np.sqrt(d_k)",
        ["scores:scores", "qkv:Q"],
        value="scaled_scores",
    ),
    C("softmax", "softmax1", 0.5, NUMPY_SOFTMAX, expr="softmax(np.array([2.0, -1.0, 0.5, 3.0]))"),
    C("softmax", "softmax2", 0.5, NUMPY_SOFTMAX, expr="softmax(np.array([0.0, 0.0, 0.0]))"),
    C(
        "weights",
        "attention_weights",
        2,
        "attention_weights = np.apply_along_axis(softmax, axis=1, arr=scaled_scores)",
        ["softmax", "scaled:scaled_scores"],
        value="attention_weights",
    ),
    C("output", "output", 2, "output = attention_weights @ V", ["weights:attention_weights", "qkv:V"], value="output"),
]

_P1 = "p1"
_STACK = "torch.stack([torch.tensor(loaded_word_vectors[t]) for t in tokens])"
CHECKS["attention_similarity"] = [
    C(
        "dot_similarities",
        "sim_swam_bank",
        1,
        "sim_swam_bank = torch.dot(X[1], X[-1])",
        value="sim_swam_bank",
        phase=_P1,
    ),
    C(
        "dot_similarities",
        "sim_river_bank",
        1,
        "sim_river_bank = torch.dot(X[5], X[-1])",
        value="sim_river_bank",
        phase=_P1,
    ),
    C("similarity_matrix", "S1", 1, "S = torch.matmul(X, X.T)", value="S", phase=_P1),
    C(
        "softmax_scaling",
        "S_scaled",
        1,
        "S_scaled = torch.softmax(S, dim=-1)",
        ["similarity_matrix:S1"],
        value="S_scaled",
        phase=_P1,
    ),
    C(
        "softmax_scaling",
        "y_swam",
        1,
        "y_swam = torch.matmul(S_scaled[1], X)",
        ["softmax_scaling:S_scaled"],
        value="y_swam",
        phase=_P1,
    ),
    C(
        "transformed_embeddings",
        "Y1",
        1,
        "Y = torch.matmul(S_scaled, X)",
        ["softmax_scaling:S_scaled"],
        value="Y",
        phase=_P1,
    ),
    C("q1_no_learning", "S", 1, "S = torch.nn.functional.softmax(torch.matmul(X, X.T), dim = -1)", value="S"),
    C(
        "q1_no_learning",
        "sim_bank_interest",
        1,
        "sim_bank_interest = S[1, 3]",
        ["q1_no_learning:S"],
        value="sim_bank_interest",
    ),
    C("q2_qkv", "Q", 1, "Q = torch.matmul(X, W_q)", value="Q"),
    C("q2_qkv", "K", 1, "K = torch.matmul(X, W_k)", value="K"),
    C("q2_qkv", "V", 1, "V = torch.matmul(X, W_v)", value="V"),
    C("q2_bank_interest", "q_bank", 1 / 3, "q_bank = Q[1]", ["q2_qkv:Q"], value="q_bank"),
    C("q2_bank_interest", "k_bank", 1 / 3, "k_bank = K[1]", ["q2_qkv:K"], value="k_bank"),
    C("q2_bank_interest", "v_bank", 1 / 3, "v_bank = V[1]", ["q2_qkv:V"], value="v_bank"),
    C("q2_bank_interest", "q_interest", 1 / 3, "q_interest = Q[3]", ["q2_qkv:Q"], value="q_interest"),
    C("q2_bank_interest", "k_interest", 1 / 3, "k_interest = K[3]", ["q2_qkv:K"], value="k_interest"),
    C("q2_bank_interest", "v_interest", 1 / 3, "v_interest = V[3]", ["q2_qkv:V"], value="v_interest"),
    C(
        "q3_learned",
        "S_learned",
        3,
        "d_k = K.shape[-1]\nS_learned = torch.nn.functional.softmax(torch.matmul(Q, K.T)/torch.sqrt(torch.tensor(d_k, dtype = torch.float32)), dim = -1)",
        ["q2_qkv:Q", "q2_qkv:K"],
        value="S_learned",
    ),
    C(
        "q4_bank_interest_learned",
        "sim_bank_interest_learned",
        1,
        "sim_bank_interest_learned = S_learned[1, 3]",
        ["q3_learned:S_learned"],
        value="sim_bank_interest_learned",
    ),
    C("transformed_learned", "Y", 1, "Y = torch.matmul(S_learned, V)", ["q3_learned:S_learned", "q2_qkv:V"], value="Y"),
    C(
        "q5_top2",
        "top2_words",
        1,
        "top2 = torch.topk(S_learned[1], k=2)\ntop2_words = [words[i] for i in top2.indices.tolist()]",
        ["q3_learned:S_learned"],
        value="top2_words",
    ),
    C(
        "q5_top2",
        "top2_weights",
        1,
        "top2 = torch.topk(S_learned[1], k=2)\ntop2_weights = top2.values.tolist()",
        ["q3_learned:S_learned"],
        value="top2_weights",
    ),
]

TOK_CLASS = r"""
def load_vocab(path):
    vocab = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            token, idx = line.rstrip('\n').split('\t')
            vocab[token] = int(idx)
    return vocab


class SubsetBertTokenizer:
    def __init__(self, vocab_path, vocab_size=30522):
        self.vocab = load_vocab(vocab_path)
        self.vocab_size = vocab_size
        self.unk_token = '[UNK]'

    def tokenize(self, text):
        return re.findall(r"\w+|[^\w\s]", text.lower())

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab.get(token, self.vocab[self.unk_token]) for token in tokens]

tokenizer = SubsetBertTokenizer('data/' + "vocab_subset.txt")
sentence = "The bank approved the loan"
tokens = tokenizer.tokenize(sentence)
"""
TOK_MHA = "torch.manual_seed(0)\nmultihead_attn = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)\n"
CHECKS["tokens_to_multihead"] = [
    C("tokenizer", "tokens", 1, TOK_CLASS, value="tokens"),
    C("tokenizer", "tokenize", 1, TOK_CLASS, expr="tokenizer.tokenize('Loan approved, THE bank?')"),
    C(
        "tokenizer",
        "convert",
        1,
        TOK_CLASS,
        expr="tokenizer.convert_tokens_to_ids(['the', 'river', 'bank', '.', '[CLS]'])",
    ),
    C(
        "token_ids",
        "token_ids",
        1,
        "token_ids = tokenizer.convert_tokens_to_ids(tokens)\ntoken_ids = torch.tensor([token_ids])",
        ["tokenizer"],
        value="token_ids",
    ),
    C(
        "embeddings",
        "embeddings",
        1,
        "torch.manual_seed(0)\nembedding_layer = nn.Embedding(30522, 8)\nembeddings = embedding_layer(token_ids)",
        ["token_ids:token_ids"],
        value="embeddings",
    ),
    C(
        "embeddings",
        "embedding_layer",
        1,
        "torch.manual_seed(0)\nembedding_layer = nn.Embedding(30522, 8)",
        expr="embedding_layer(torch.tensor([[0, 100, 101, 30521]]))",
    ),
    C(
        "multihead",
        "attention_weights",
        1,
        TOK_MHA + "output, attention_weights = multihead_attn(embeddings, embeddings, embeddings)",
        ["embeddings:embeddings"],
        value="attention_weights",
    ),
    C(
        "multihead",
        "output",
        1,
        TOK_MHA + "output, attention_weights = multihead_attn(embeddings, embeddings, embeddings)",
        ["embeddings:embeddings"],
        value="output",
    ),
    C(
        "multihead",
        "sub3",
        1,
        TOK_MHA,
        ["embeddings:embeddings"],
        expr="multihead_attn(embeddings[:, :3], embeddings[:, :3], embeddings[:, :3])[1]",
    ),
    C(
        "attention_table",
        "df_values",
        1,
        "attention_df = pd.DataFrame(attention_weights[0].detach().numpy(), index=tokens, columns=tokens)",
        ["multihead:attention_weights", "tokenizer:tokens"],
        expr="attention_df.values",
    ),
    C(
        "attention_table",
        "df_labels",
        1,
        "attention_df = pd.DataFrame(attention_weights[0].detach().numpy(), index=tokens, columns=tokens)",
        ["multihead:attention_weights", "tokenizer:tokens"],
        expr="[list(attention_df.index), list(attention_df.columns)]",
    ),
    C(
        "reading",
        "bank_most_attended",
        1,
        "bank_most_attended = attention_df.loc['bank'].idxmax()",
        ["attention_table:df_values", "attention_table:df_labels"],
        value="bank_most_attended",
    ),
    C(
        "per_head",
        "head_weights",
        2,
        "_, head_weights = multihead_attn(embeddings, embeddings, embeddings, average_attn_weights=False)",
        ["multihead", "embeddings:embeddings"],
        value="head_weights",
    ),
]

FR_PROJ = "W_Q = W_Q.float()\nW_K = W_K.float()\nW_V = W_V.float()\n"
FR_SELF = """
def self_attention(x, W_Q, W_K, W_V):
    Q = x @ W_Q
    K = x @ W_K
    V = x @ W_V
    weights = torch.softmax(Q @ K.T / K.shape[-1] ** 0.5, dim=-1)
    return weights @ V
"""
CHECKS["attention_french"] = [
    C("fix_projections", "stack", 1, FR_PROJ, expr="torch.stack([W_Q, W_K, W_V])"),
    C("fix_projections", "Q", 1, FR_PROJ + "Q = torch.matmul(embeddings, W_Q)", value="Q"),
    C("fix_projections", "K", 1, FR_PROJ + "K = torch.matmul(embeddings, W_K)", value="K"),
    C("fix_projections", "V", 1, FR_PROJ + "V = torch.matmul(embeddings, W_V)", value="V"),
    C(
        "scores",
        "attention_scores",
        1,
        "attention_scores = torch.matmul(Q[0], K.T)",
        ["fix_projections:Q", "fix_projections:K"],
        value="attention_scores",
    ),
    C(
        "weights",
        "attention_weights",
        2,
        "d_k = K.shape[-1]\nattention_weights = torch.nn.functional.softmax(attention_scores / d_k ** 0.5, dim=-1)",
        ["scores:attention_scores", "fix_projections:K"],
        value="attention_weights",
    ),
    C(
        "output",
        "output",
        1,
        "output = torch.matmul(attention_weights.unsqueeze(0), V)",
        ["weights:attention_weights", "fix_projections:V"],
        value="output",
    ),
    C(
        "all_words",
        "all_attention_weights",
        1,
        "d_k = K.shape[-1]\nall_attention_weights = torch.softmax(torch.matmul(Q, K.T) / d_k ** 0.5, dim=-1)",
        ["fix_projections:Q", "fix_projections:K"],
        value="all_attention_weights",
    ),
    C(
        "all_words",
        "all_outputs",
        1,
        "all_outputs = torch.matmul(all_attention_weights, V)",
        ["all_words:all_attention_weights", "fix_projections:V"],
        value="all_outputs",
    ),
    C("self_attention_fn", "eye", 1, FR_SELF, expr="self_attention(torch.eye(3), W_Q2, W_K2, W_V2)"),
    C(
        "self_attention_fn",
        "rand",
        1,
        FR_SELF,
        expr="self_attention(torch.rand(5, 3), torch.rand(3, 4), torch.rand(3, 4), torch.rand(3, 2))",
        seed=3,
    ),
    C(
        "multihead",
        "stack_heads",
        1,
        "heads = [self_attention(embeddings, W_q, W_k, W_v) for W_q, W_k, W_v in head_params]",
        ["self_attention_fn", "fix_projections:stack"],
        expr="torch.stack(heads)",
    ),
    C(
        "multihead",
        "multihead_output",
        2,
        "multihead_output = torch.cat(heads, dim=-1) @ W_O",
        ["multihead:stack_heads"],
        value="multihead_output",
    ),
]

FS_SA1 = """
class SelfAttention_v1(nn.Module):
    def __init__(self,d_in,d_out):
        super().__init__()
        self.W_key = nn.Parameter(torch.rand(d_in,d_out))
        self.W_query = nn.Parameter(torch.rand(d_in,d_out))
        self.W_value = nn.Parameter(torch.rand(d_in,d_out))

    def forward(self,x):
        keys = x @ self.W_key
        querys = x @ self.W_query
        values = x @ self.W_value
        attn_scores = querys @ keys.T
        attn_weights = torch.softmax( attn_scores / keys.shape[1] ** 0.5 , dim=-1)
        context_vector = attn_weights @ values
        return context_vector

torch.manual_seed(123)
model = SelfAttention_v1(d_in,d_out)
"""
FS_CA = """
class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = attn_weights @ values
        return context_vec
"""
FS_MHA = """
class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([head(x) for head in self.heads], dim=-1)
"""
_SIMPLE_SCORES = """
query = inputs[1]
attn_scores_2 = torch.empty(inputs.shape[0])
for i , input in enumerate(inputs):
    attn_scores_2[i] = torch.dot(query,input)
"""
CHECKS["attention_from_scratch"] = [
    C("simple_scores", "attn_scores_2", 1, _SIMPLE_SCORES, value="attn_scores_2", phase=_P1),
    C(
        "simple_scores",
        "nor_attn_2",
        1,
        "nor_attn_2 = attn_scores_2 / attn_scores_2.sum()",
        ["simple_scores:attn_scores_2"],
        value="nor_attn_2",
        phase=_P1,
    ),
    C(
        "context_vec_2",
        "context_vec_2",
        1,
        "query = inputs[1]\ncontext_vec_2 = torch.zeros(query.shape)\nfor i , input in enumerate(inputs):\n    context_vec_2 += nor_attn_2[i] * input\n",
        ["simple_scores:nor_attn_2"],
        value="context_vec_2",
        phase=_P1,
    ),
    C("all_scores", "attn_scores", 1, "attn_scores = inputs @ inputs.T", value="attn_scores"),
    C(
        "all_scores",
        "nor_attn",
        1,
        "nor_attn = torch.softmax(attn_scores, dim = -1)",
        ["all_scores:attn_scores"],
        value="nor_attn",
    ),
    C(
        "all_scores",
        "context_vector",
        1,
        "context_vector = nor_attn @ inputs",
        ["all_scores:nor_attn"],
        value="context_vector",
    ),
    C("trainable_qkv", "query_2", 0.4, "query_2 = inputs[1] @ W_query", value="query_2"),
    C("trainable_qkv", "key_2", 0.4, "key_2 = inputs[1] @ W_key", value="key_2"),
    C("trainable_qkv", "value_2", 0.4, "value_2 = inputs[1] @ W_value", value="value_2"),
    C("trainable_qkv", "keys", 0.4, "keys = inputs @ W_key", value="keys"),
    C("trainable_qkv", "values", 0.4, "values = inputs @ W_value", value="values"),
    C(
        "trainable_weights",
        "attn_scores_2",
        1,
        "attn_scores_2 = query_2 @ keys.T",
        ["trainable_qkv:query_2", "trainable_qkv:keys"],
        value="attn_scores_2",
    ),
    C(
        "trainable_weights",
        "attn_weights_2",
        1,
        "d_k = keys.shape[-1]\nattn_weights_2 = torch.softmax(attn_scores_2 / d_k**0.5, dim=-1)",
        ["trainable_weights:attn_scores_2", "trainable_qkv:keys"],
        value="attn_weights_2",
    ),
    C(
        "trainable_weights",
        "context_vector_2",
        1,
        "context_vector_2 = attn_weights_2 @ values",
        ["trainable_weights:attn_weights_2", "trainable_qkv:values"],
        value="context_vector_2",
    ),
    C("self_attention_v1", "model", 1, FS_SA1, expr="model(inputs)"),
    C("self_attention_v1", "sa_3_2", 1, FS_SA1, expr="SelfAttention_v1(3, 2)(inputs)", seed=123),
    C("self_attention_v1", "sa_4_3", 1, FS_SA1, expr="SelfAttention_v1(4, 3)(torch.rand(5, 4))", seed=7),
    C("causal_mask", "queries", 1, "queries = inputs @ W_query", value="queries"),
    C(
        "causal_mask",
        "scores",
        1,
        "scores = queries @ keys.T",
        ["causal_mask:queries", "trainable_qkv:keys"],
        value="scores",
    ),
    C("causal_mask", "mask", 1, "mask = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)", value="mask"),
    C(
        "causal_mask",
        "masked_scores",
        1,
        "masked_scores = scores.masked_fill(mask, -torch.inf)",
        ["causal_mask:scores", "causal_mask:mask"],
        value="masked_scores",
    ),
    C(
        "causal_weights",
        "causal_weights",
        2,
        "d_k = keys.shape[-1]\ncausal_weights = torch.softmax(masked_scores / d_k**0.5, dim=-1)",
        ["causal_mask:masked_scores", "trainable_qkv:keys"],
        value="causal_weights",
    ),
    C(
        "causal_weights",
        "causal_context",
        1,
        "causal_context = causal_weights @ values",
        ["causal_weights:causal_weights", "trainable_qkv:values"],
        value="causal_context",
    ),
    C(
        "dropout",
        "dropped_weights",
        2,
        "torch.manual_seed(123)\ndropped_weights = dropout(causal_weights)",
        ["causal_weights:causal_weights"],
        value="dropped_weights",
    ),
    C(
        "causal_attention_module",
        "context_vecs",
        1,
        FS_CA
        + "\ntorch.manual_seed(123)\ncontext_length = batch.shape[1]\nca = CausalAttention(d_in, d_out, context_length, 0.0)\ncontext_vecs = ca(batch)",
        value="context_vecs",
    ),
    C("causal_attention_module", "ca_4_3", 1, FS_CA, expr="CausalAttention(4, 3, 8, 0.0)(torch.rand(3, 5, 4))", seed=7),
    C("causal_attention_module", "ca_eval", 1, FS_CA, expr="CausalAttention(3, 2, 6, 0.5).eval()(batch)", seed=123),
    C("causal_attention_module", "ca_train", 1, FS_CA, expr="CausalAttention(3, 2, 6, 0.5)(batch)", seed=123),
    C(
        "multihead_wrapper",
        "context_vecs_mha",
        1,
        FS_MHA
        + "\ntorch.manual_seed(123)\nmha = MultiHeadAttentionWrapper(d_in, d_out, 6, 0.0, num_heads=2)\ncontext_vecs_mha = mha(batch)",
        ["causal_attention_module"],
        value="context_vecs_mha",
    ),
    C(
        "multihead_wrapper",
        "mha_4_3",
        1,
        FS_MHA,
        ["causal_attention_module"],
        expr="MultiHeadAttentionWrapper(4, 3, 8, 0.0, num_heads=3)(torch.rand(2, 5, 4))",
        seed=7,
    ),
    C(
        "multihead_wrapper",
        "mha_eval",
        1,
        FS_MHA,
        ["causal_attention_module"],
        expr="MultiHeadAttentionWrapper(3, 2, 6, 0.5, num_heads=2).eval()(batch)",
        seed=123,
    ),
]

# ---------------------------------------------------------------- the solution's callables (class J)
# A student's function or class that raises, tested (and docked) by its own question: the solution's
# definition is put in place of the student's right after the student's definition (truth.py), to see
# whether a later step that could not be computed is right once the callable works.  Each definition
# is executed apart (its own globals: its imports and the solution's helpers), so that only the
# callable's name is rebound in the student's namespace and the student's other names stay theirs.
# name -> (the question that tests it, the solution's code defining it)

TOK_FIX = r"""
import re
VOCAB_SIZE = 30522

def load_vocab(path):
    vocab = {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            token, idx = line.rstrip('\n').split('\t')
            vocab[token] = int(idx)
    return vocab


class SubsetBertTokenizer:
    def __init__(self, vocab_path, vocab_size=VOCAB_SIZE):
        self.vocab = load_vocab(vocab_path)
        self.vocab_size = vocab_size
        self.unk_token = '[UNK]'

    def tokenize(self, text):
        return re.findall(r"\w+|[^\w\s]", text.lower())

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab.get(token, self.vocab[self.unk_token]) for token in tokens]
"""
_TORCH = "import torch\nimport torch.nn as nn\n"
FIXES = {
    "attention_numpy": {"softmax": ("softmax", "import numpy as np\n" + NUMPY_SOFTMAX)},
    "tokens_to_multihead": {"SubsetBertTokenizer": ("tokenizer", TOK_FIX)},
    "attention_french": {"self_attention": ("self_attention_fn", _TORCH + FR_SELF)},
    "attention_from_scratch": {
        "SelfAttention_v1": ("self_attention_v1", _TORCH + FS_SA1.split("\ntorch.manual_seed(123)")[0]),
        "CausalAttention": ("causal_attention_module", _TORCH + FS_CA),
        "MultiHeadAttentionWrapper": ("multihead_wrapper", _TORCH + FS_CA + FS_MHA),
    },
}
