"""attention_from_scratch cases (30: simple_scores 2, context_vec_2 1, all_scores 3, trainable_qkv 2,
trainable_weights 3, self_attention_v1 3, causal_mask 4, causal_weights 3, dropout 2,
causal_attention_module 4, multihead_wrapper 3)."""

A = "attention_from_scratch"

INPUTS = """# input embedding
import torch
inputs = torch.tensor(
    [[0.43, 0.15, 0.89], # Your (x^1)
    [0.55, 0.87, 0.66], # journey (x^2)
    [0.57, 0.85, 0.64], # starts (x^3)
    [0.22, 0.58, 0.33], # with (x^4)
    [0.77, 0.25, 0.10], # one (x^5)
    [0.05, 0.80, 0.55]] # step (x^6)
    )"""
SIMPLE = """query = inputs[1]
attn_scores_2 = torch.empty(inputs.shape[0])
for i, x_i in enumerate(inputs):
    attn_scores_2[i] = torch.dot(query, x_i)
nor_attn_2 = attn_scores_2 / attn_scores_2.sum()
print(nor_attn_2)"""
CTX2 = """context_vec_2 = torch.zeros(query.shape)
for i, x_i in enumerate(inputs):
    context_vec_2 += nor_attn_2[i] * x_i
print(context_vec_2)"""
ALLS = """attn_scores = inputs @ inputs.T
nor_attn = torch.softmax(attn_scores, dim=-1)
context_vector = nor_attn @ inputs"""
WEIGHTS_GIVEN = """# computing query, key and values pairs
d_in , d_out = inputs.shape[1] , 2
x_2 = inputs[1]

torch.manual_seed(123)
W_query = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
W_key = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
W_value = torch.nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)"""
QKV = """query_2 = x_2 @ W_query
key_2 = x_2 @ W_key
value_2 = x_2 @ W_value
keys = inputs @ W_key
values = inputs @ W_value
print(query_2)"""
TW = """attn_scores_2 = query_2 @ keys.T
d_k = keys.shape[-1]
attn_weights_2 = torch.softmax(attn_scores_2 / d_k**0.5, dim=-1)
context_vector_2 = attn_weights_2 @ values
print(context_vector_2)"""
SA_FWD = """        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[1] ** 0.5, dim=-1)
        return attn_weights @ values"""
SA_CLASS = """import torch.nn as nn

class SelfAttention_v1(nn.Module):
    def __init__(self,d_in,d_out):
        super().__init__()
        self.W_key = nn.Parameter(torch.rand(d_in,d_out))
        self.W_query = nn.Parameter(torch.rand(d_in,d_out))
        self.W_value = nn.Parameter(torch.rand(d_in,d_out))

    def forward(self,x):
{FWD}

torch.manual_seed(123)
model = SelfAttention_v1(d_in,d_out)
model(inputs)"""
CAUSAL = """context_length = inputs.shape[0]
queries = inputs @ W_query
scores = queries @ keys.T
mask = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
masked_scores = scores.masked_fill(mask, -torch.inf)
causal_weights = torch.softmax(masked_scores / d_k**0.5, dim=-1)
causal_context = causal_weights @ values"""
DROP = """torch.manual_seed(123)
dropout = torch.nn.Dropout(0.5)
example = torch.ones(6, 6)
print(dropout(example))"""
DROPPED = """torch.manual_seed(123)
dropped_weights = dropout(causal_weights)"""
CA_CLASS = """class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # causal mask buffer named 'mask': True above the diagonal
        self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1))

    def forward(self, x):
{FWD}"""
CA_FWD = """        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        return attn_weights @ values"""
BATCH = """batch = torch.stack((inputs, inputs), dim=0)
print(batch.shape)

torch.manual_seed(123)
context_length = batch.shape[1]
ca = CausalAttention(d_in, d_out, context_length, 0.0)
context_vecs = ca(batch)
print(context_vecs.shape)"""
MHA_CLASS = """class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)])

    def forward(self, x):
{FWD}"""
MHA_FWD = "        return torch.cat([head(x) for head in self.heads], dim=-1)"
MHA_RUN = """torch.manual_seed(123)
mha = MultiHeadAttentionWrapper(d_in, d_out, context_length, 0.0, num_heads=2)
context_vecs_mha = mha(batch)
print(context_vecs_mha.shape)"""

FULL = {
    "simple_scores": (2, "right"),
    "context_vec_2": (1, "right"),
    "all_scores": (3, "right"),
    "trainable_qkv": (2, "right"),
    "trainable_weights": (3, "right"),
    "self_attention_v1": (3, "right"),
    "causal_mask": (4, "right"),
    "causal_weights": (3, "right"),
    "dropout": (2, "right"),
    "causal_attention_module": (4, "right"),
    "multihead_wrapper": (3, "right"),
}


def T(**over):
    t = dict(FULL)
    t.update(over)
    return t


def std(**r):
    p = dict(
        SIMPLE=SIMPLE,
        CTX2=CTX2,
        ALLS=ALLS,
        QKV=QKV,
        TW=TW,
        SA_FWD=SA_FWD,
        CAUSAL=CAUSAL,
        DROPPED=DROPPED,
        CA_FWD=CA_FWD,
        MHA_FWD=MHA_FWD,
        CA_CLASS=CA_CLASS,
    )
    p.update(r)
    return [
        INPUTS,
        p["SIMPLE"],
        p["CTX2"],
        p["ALLS"],
        WEIGHTS_GIVEN + "\n\n" + p["QKV"],
        p["TW"],
        SA_CLASS.replace("{FWD}", p["SA_FWD"]),
        p["CAUSAL"],
        DROP,
        p["DROPPED"],
        p["CA_CLASS"].replace("{FWD}", p["CA_FWD"]),
        BATCH,
        MHA_CLASS.replace("{FWD}", p["MHA_FWD"]),
        MHA_RUN,
    ]


CASES = []

CASES.append(
    dict(
        assignment=A,
        name="s01_one_big_cell",
        run=True,
        cells=[
            "md:# Attention from scratch: everything in one go",
            "\n\n".join(
                [
                    INPUTS,
                    """query = inputs[1]
attn_scores_2 = inputs @ query
nor_attn_2 = attn_scores_2 / attn_scores_2.sum()
context_vec_2 = nor_attn_2 @ inputs
attn_scores = torch.einsum('id,jd->ij', inputs, inputs)
nor_attn = torch.nn.functional.softmax(attn_scores, dim=1)
context_vector = nor_attn @ inputs""",
                    WEIGHTS_GIVEN,
                    QKV,
                    TW,
                    SA_CLASS.replace("{FWD}", SA_FWD),
                    CAUSAL,
                    DROP,
                    DROPPED,
                    CA_CLASS.replace("{FWD}", CA_FWD),
                    BATCH,
                    MHA_CLASS.replace("{FWD}", MHA_FWD),
                    MHA_RUN,
                ]
            ),
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s02_helpers_where_unrun",
        run=False,
        cells=[
            INPUTS,
            '''import torch.nn.functional as F

def scaled_softmax(s, d_k):
    """softmax of the scores scaled by sqrt(d_k), row by row"""
    return F.softmax(s / d_k ** 0.5, dim=-1)

def causal_mask(n):
    return torch.ones(n, n).triu(1).bool()''',
            """query = inputs[1]
attn_scores_2 = torch.tensor([float(query @ x) for x in inputs])
nor_attn_2 = attn_scores_2 / torch.sum(attn_scores_2)""",
            "context_vec_2 = (nor_attn_2.unsqueeze(1) * inputs).sum(dim=0)",
            "attn_scores = torch.mm(inputs, inputs.t())\nnor_attn = F.softmax(attn_scores, dim=-1)\ncontext_vector = torch.mm(nor_attn, inputs)",
            "# checking\nprint(nor_attn.sum(dim=-1))",
            WEIGHTS_GIVEN
            + """

query_2 = torch.matmul(x_2, W_query)
key_2 = torch.matmul(x_2, W_key)
value_2 = torch.matmul(x_2, W_value)
keys = torch.matmul(inputs, W_key)
values = torch.matmul(inputs, W_value)""",
            """attn_scores_2 = keys @ query_2
d_k = keys.shape[-1]
attn_weights_2 = scaled_softmax(attn_scores_2, d_k)
context_vector_2 = values.T @ attn_weights_2""",
            SA_CLASS.replace(
                "{FWD}",
                """        q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value
        return scaled_softmax(q @ k.T, k.shape[-1]) @ v""",
            ),
            """context_length = inputs.shape[0]
queries = inputs @ W_query
scores = queries @ keys.T
mask = causal_mask(context_length)
masked_scores = torch.where(mask, torch.tensor(float('-inf')), scores)
causal_weights = scaled_softmax(masked_scores, d_k)
causal_context = causal_weights @ values""",
            DROP,
            DROPPED,
            CA_CLASS.replace(
                "{FWD}",
                """        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        s = torch.where(self.mask[:n, :n], torch.full_like(q @ k.transpose(1, 2), float('-inf')), q @ k.transpose(1, 2))
        w = scaled_softmax(s, k.shape[-1])
        w = F.dropout(w, p=self.dropout.p, training=self.training)
        return w @ v""",
            ),
            BATCH,
            MHA_CLASS.replace(
                "{FWD}", "        outs = [h(x) for h in self.heads]\n        return torch.concat(outs, dim=2)"
            ),
            MHA_RUN,
        ],
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s03_never_scales",
        run=True,
        cells=std(
            TW=TW.replace("attn_scores_2 / d_k**0.5", "attn_scores_2"),
            SA_FWD=SA_FWD.replace("attn_scores / keys.shape[1] ** 0.5", "attn_scores"),
            CAUSAL=CAUSAL.replace("masked_scores / d_k**0.5", "masked_scores").replace(
                "mask = torch.triu", "d_k = keys.shape[-1]\nmask = torch.triu"
            ),
            CA_FWD=CA_FWD.replace("attn_scores / keys.shape[-1] ** 0.5", "attn_scores"),
        ),
        truth=T(
            trainable_weights=(
                2,
                "attn_scores_2 right (1); attn_weights_2 unscaled (0); context_vector_2 right given them (carried, 1)",
            ),
            self_attention_v1=(0, "forward omits the sqrt(d_k) scaling (all three checks)"),
            causal_weights=(1, "causal_weights unscaled (0/2); causal_context right given them (carried, 1)"),
            dropout=(2, "dropout right given own causal_weights (carried)"),
            causal_attention_module=(0, "module omits the scaling: all four checks differ"),
            multihead_wrapper=(3, "wrapper right given own CausalAttention (carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s04_mask_hides_past",
        run=True,
        cells=std(
            CAUSAL=CAUSAL.replace(
                "torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)",
                "torch.tril(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=-1)",
            )
        ),
        truth=T(
            causal_mask=(
                3,
                "queries, scores right; mask hides the past (0); masked_scores right given own mask (carried)",
            ),
            causal_weights=(3, "right given own masked_scores (carried)"),
            dropout=(2, "carried"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s05_dropout_always_on",
        run=True,
        cells=std(
            CA_FWD=CA_FWD.replace(
                "attn_weights = self.dropout(attn_weights)",
                "attn_weights = torch.nn.functional.dropout(attn_weights, p=self.dropout.p, training=True)",
            )
        ),
        truth=T(
            causal_attention_module=(3, "dropout still active after .eval() (eval check 0); the other three right"),
            multihead_wrapper=(3, "wrapper right given own CausalAttention (eval check carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s06_query_typed_4_decimals",
        run=True,
        cells=std(
            QKV="""print(x_2 @ W_query)
query_2 = torch.tensor([0.4306, 1.4551])    # from the print above
key_2 = x_2 @ W_key
value_2 = x_2 @ W_value
keys = inputs @ W_key
values = inputs @ W_value"""
        ),
        truth=T(
            trainable_qkv=(
                0,
                "query_2 typed in to 4 decimals (off by more than the tolerance); the question's five values carry no per-check points in config.yaml, so it is all or nothing",
            ),
            trainable_weights=(3, "computed right from own query_2 (carried)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s07_context_loop_off_by_one",
        run=True,
        cells=std(
            CTX2="""context_vec_2 = torch.zeros(query.shape)
for i in range(1, inputs.shape[0]):
    context_vec_2 += nor_attn_2[i] * inputs[i]"""
        ),
        truth=T(context_vec_2=(0, "loop starts at 1: skips the first input")),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s08_softmax_norm_and_axis",
        run=True,
        cells=std(
            SIMPLE=SIMPLE.replace(
                "nor_attn_2 = attn_scores_2 / attn_scores_2.sum()", "nor_attn_2 = torch.softmax(attn_scores_2, dim=0)"
            ),
            ALLS=ALLS.replace("dim=-1", "dim=0"),
        ),
        truth=T(
            simple_scores=(1, "scores right (1); normalised with softmax instead of the sum (0)"),
            context_vec_2=(1, "right given own nor_attn_2 (carried)"),
            all_scores=(2, "attn_scores right, nor_attn over dim 0 (0), context_vector carried (1)"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s09_mha_stack_flatten",
        run=True,
        cells=std(MHA_FWD="        return torch.stack([head(x) for head in self.heads], dim=-1).flatten(-2)"),
        truth=T(
            multihead_wrapper=(
                0,
                "stack+flatten interleaves the heads' features: not a concatenation (all three checks)",
            )
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s10_sdpa_book_float_mask",
        run=True,
        cells=std(
            SA_FWD="""        q = x @ self.W_query
        k = x @ self.W_key
        v = x @ self.W_value
        return torch.nn.functional.scaled_dot_product_attention(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)).squeeze(0)""",
            CA_CLASS=CA_CLASS.replace(
                "torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)",
                "torch.triu(torch.ones(context_length, context_length), diagonal=1)",
            ),
            CA_FWD=CA_FWD.replace("self.mask[:num_tokens, :num_tokens]", "self.mask.bool()[:num_tokens, :num_tokens]"),
            DROPPED="""torch.manual_seed(123)
dropped_weights = torch.nn.functional.dropout(causal_weights, p=0.5, training=True)""",
        ),
        truth=T(),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s11_module_unscaled_and_wrapper_sums",
        run=True,
        cells=std(
            CA_FWD=CA_FWD.replace("attn_scores / keys.shape[-1] ** 0.5", "attn_scores"),
            MHA_FWD="        return sum(head(x) for head in self.heads)",
        ),
        truth=T(
            causal_attention_module=(0, "CausalAttention omits the scaling: all four checks differ"),
            multihead_wrapper=(0, "heads summed instead of concatenated: a mistake of its own on top of the module's"),
        ),
    )
)

CASES.append(
    dict(
        assignment=A,
        name="s12_query_2_named_early",
        run=True,
        cells=std(
            SIMPLE="""query_2 = inputs[1]            # x^(2), the query
attn_scores_2 = torch.empty(inputs.shape[0])
for i, x_i in enumerate(inputs):
    attn_scores_2[i] = torch.dot(query_2, x_i)
nor_attn_2 = attn_scores_2 / attn_scores_2.sum()""",
            CTX2="""context_vec_2 = torch.zeros(query_2.shape)
for i, x_i in enumerate(inputs):
    context_vec_2 += nor_attn_2[i] * x_i""",
        ),
        truth=T(
            simple_scores=(
                2,
                "right: the solution's loop, with the query named query_2 (the name the trainable part rebinds later)",
            )
        ),
    )
)
