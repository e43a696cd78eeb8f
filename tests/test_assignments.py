"""The five course assignments, each graded end to end through real student processes.

For every assignment: the solution scores full marks on the notebook's data and on every variant;
the skeleton scores zero with every question unanswered; typical mistakes lose exactly the
questions they should, with the hint that names them; answers typed in from the solution's
printouts lose every question they typed (the variants catch them); equivalent rewrites (torch for
numpy, float32/float64, F.softmax, loops, einsum) keep full marks; and ``grader validate`` passes.

Submissions are built from the generated skeleton with ``grader.testing.fill`` and the solution's
own code, so a change to a solution or a skeleton shows up here. Every submission costs one run of
the notebook plus one per variant, so each test builds as few as it needs, and the solution's and
the skeleton's cards are graded once per module and shared with the ``validate`` test.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import NUMPY_CORRECT, question

from grader.authoring.validate import validate
from grader.judge import wording
from grader.judge.grading import Grader
from grader.testing import fill_source

NAMES = ["attention_numpy", "attention_similarity", "tokens_to_multihead", "attention_french", "attention_from_scratch"]

# --------------------------------------------------------------------------------------------
# The solution's own code for every blank of each skeleton, keyed as grader.testing.fill expects.

SIMILARITY = {
    "sim_swam_bank": "torch.dot(X[1], X[-1])",
    "sim_river_bank": "torch.dot(X[5], X[-1])",
    "S": ["torch.matmul(X, X.T)", "torch.nn.functional.softmax(torch.matmul(X, X.T), dim = -1)"],
    "S_scaled": "torch.softmax(S, dim=-1)",
    "y_swam": "torch.matmul(S_scaled[1], X)",
    "Y": ["torch.matmul(S_scaled, X)", "torch.matmul(S_learned, V)"],
    "sim_bank_interest": "S[1, 3]",
    "Q": "torch.matmul(X, W_q)",
    "K": "torch.matmul(X, W_k)",
    "V": "torch.matmul(X, W_v)",
    "q_bank": "Q[1]",
    "k_bank": "K[1]",
    "v_bank": "V[1]",
    "q_interest": "Q[3]",
    "k_interest": "K[3]",
    "v_interest": "V[3]",
    "S_learned": "torch.nn.functional.softmax(torch.matmul(Q, K.T)/torch.sqrt(torch.tensor(d_k, dtype = torch.float32)), "
    "dim = -1)",
    "sim_bank_interest_learned": "S_learned[1, 3]",
    "?1": "top2 = torch.topk(S_learned[1], k=2)\n"
    "top2_words = [words[i] for i in top2.indices.tolist()]\n"
    "top2_weights = top2.values.tolist()",
}

TOKENS = {
    "?1": 'return re.findall(r"\\w+|[^\\w\\s]", text.lower())',
    "?2": "return [self.vocab.get(token, self.vocab[self.unk_token]) for token in tokens]",
    "embedding_layer": "nn.Embedding(vocab_size, embedding_dim)",
    "embeddings": "embedding_layer(token_ids)",
    "multihead_attn": "nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)",
    "output, attention_weights": "multihead_attn(embeddings, embeddings, embeddings)",
    "attention_df": "pd.DataFrame(attention_weights[0].detach().numpy(), index=tokens, columns=tokens)",
    "bank_most_attended": "attention_df.loc['bank'].idxmax()",
    "_, head_weights": "multihead_attn(embeddings, embeddings, embeddings, average_attn_weights=False)",
}

FRENCH = {
    "W_Q": "W_Q.float()",
    "W_K": "W_K.float()",
    "W_V": "W_V.float()",
    "Q": "torch.matmul(embeddings, W_Q)",
    "K": "torch.matmul(embeddings, W_K)",
    "V": "torch.matmul(embeddings, W_V)",
    "attention_scores": "torch.matmul(Q[0], K.T)",
    "attention_weights": "torch.nn.functional.softmax(attention_scores / d_k ** 0.5, dim=-1)",
    "output": "torch.matmul(attention_weights.unsqueeze(0), V)",
    "all_attention_weights": "torch.softmax(torch.matmul(Q, K.T) / d_k ** 0.5, dim=-1)",
    "all_outputs": "torch.matmul(all_attention_weights, V)",
    "?1": "Q = x @ W_Q\nK = x @ W_K\nV = x @ W_V\n"
    "weights = torch.softmax(Q @ K.T / K.shape[-1] ** 0.5, dim=-1)\nreturn weights @ V",
    "heads": "[self_attention(embeddings, W_q, W_k, W_v) for W_q, W_k, W_v in head_params]",
    "multihead_output": "torch.cat(heads, dim=-1) @ W_O",
}

CAUSAL_FORWARD = (
    "b, num_tokens, d_in = x.shape\n"
    "keys = self.W_key(x)\nqueries = self.W_query(x)\nvalues = self.W_value(x)\n"
    "attn_scores = queries @ keys.transpose(1, 2)\n"
    "attn_scores = attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], -torch.inf)\n"
    "attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)\n"
    "attn_weights = self.dropout(attn_weights)\n"
    "return attn_weights @ values"
)

SCRATCH = {
    "?1": "attn_scores_2 = torch.empty(inputs.shape[0])\n"
    "for i , input in enumerate(inputs):\n    attn_scores_2[i] = torch.dot(query,input)",
    "nor_attn_2": "attn_scores_2 / attn_scores_2.sum()",
    "?2": "context_vec_2 = torch.zeros(query.shape)\n"
    "for i , input in enumerate(inputs):\n    context_vec_2 += nor_attn_2[i] * input",
    "attn_scores": "inputs @ inputs.T",
    "nor_attn": "torch.softmax(attn_scores, dim = -1)",
    "context_vector": "nor_attn @ inputs",
    "query_2": "x_2 @ W_query",
    "key_2": "x_2 @ W_key",
    "value_2": "x_2 @ W_value",
    "keys": "inputs @ W_key",
    "values": "inputs @ W_value",
    "attn_scores_2": "query_2 @ keys.T",
    "attn_weights_2": "torch.softmax(attn_scores_2 / d_k**0.5, dim=-1)",
    "context_vector_2": "attn_weights_2 @ values",
    "?3": "keys = x @ self.W_key\nquerys = x @ self.W_query\nvalues = x @ self.W_value\n"
    "attn_scores = querys @ keys.T\n"
    "attn_weights = torch.softmax( attn_scores / keys.shape[1] ** 0.5 , dim=-1)\n"
    "return attn_weights @ values",
    "queries": "inputs @ W_query",
    "scores": "queries @ keys.T",
    "mask": "torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)",
    "masked_scores": "scores.masked_fill(mask, -torch.inf)",
    "causal_weights": "torch.softmax(masked_scores / d_k**0.5, dim=-1)",
    "causal_context": "causal_weights @ values",
    "dropped_weights": "dropout(causal_weights)",
    "?4": "self.register_buffer('mask', torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), "
    "diagonal=1))",
    "?5": CAUSAL_FORWARD,
    "context_vecs": "ca(batch)",
    "self.heads": "nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) "
    "for _ in range(num_heads)])",
    "?6": "return torch.cat([head(x) for head in self.heads], dim=-1)",
    "context_vecs_mha": "mha(batch)",
}

CORRECT = {
    "attention_numpy": NUMPY_CORRECT,
    "attention_similarity": SIMILARITY,
    "tokens_to_multihead": TOKENS,
    "attention_french": FRENCH,
    "attention_from_scratch": SCRATCH,
}


@pytest.fixture(scope="module")
def shared(grader, configured, course):
    """The session grader, remembering the cards it made here: the solution's and the skeleton's
    cards are graded once and are the very cards ``validate`` judges (on the course's variants;
    the tests here grade on the submission's own, as a batch does). The five solutions (on their
    own variants) and skeletons are graded here, two at a time: each grading mostly waits on its
    notebook's processes."""
    cards = {}

    class Shared(Grader):
        def grade(self, assignment, path, *, student="", course_variants=False):
            key = (assignment.name, str(path), student, course_variants)
            if key not in cards:
                cards[key] = super().grade(assignment, path, student=student, course_variants=course_variants)
            return cards[key]

    memo = Shared(course=grader.course, executor=grader.executor, references=grader.references)
    with ThreadPoolExecutor(2) as pool:
        ahead = [pool.submit(memo.grade, a, a.solution) for a in map(configured.assignment, NAMES)]
        ahead += [pool.submit(memo.grade, a, a.skeleton) for a in map(course.assignment, NAMES)]
        for done in ahead:
            done.result()
    return memo


def failures(card) -> dict[str, str]:
    return {q.id: q.status for q in card.questions if q.status != "passed"}


# --------------------------------------------------------------------------------------------
# Solutions and skeletons

# Questions re-checked on 2 variants; the others have nothing a variant changes (a function or
# module called on fixed inputs, the tokenizer, the mask) and are re-run on unseen inputs by their
# expression checks instead.
# In tokens_to_multihead the variants replace `embeddings` itself, so its own check is not counted
# as checked on them (the student's value there is the one the variant put in place).
UNVARIED = {
    "attention_numpy": {"softmax"},
    "attention_similarity": set(),
    "tokens_to_multihead": {"tokenizer", "token_ids", "embeddings"},
    "attention_french": {"self_attention_fn"},
    "attention_from_scratch": set(),
}


SKIPPED = {"attention_similarity": 1}  # the BERT fill-in-the-blank demonstration


@pytest.mark.parametrize("name", NAMES)
def test_solution_scores_full_marks_on_every_variant(shared, configured, name):
    a = configured.assignment(name)
    card = shared.grade(a, a.solution)
    assert (card.status, card.score) == ("graded", a.max_score)
    assert failures(card) == {}
    # Every cell ran without an error (the Colab Drive cell included), except the one tagged skip-grading.
    assert (card.execution.to_dict()["errors"], card.execution.to_dict()["cells_skipped"]) == ([], SKIPPED.get(name, 0))
    assert {q.id: q.variants for q in card.questions} == {q.id: 0 if q.id in UNVARIED[name] else 2 for q in a.questions}
    # on variants drawn for this notebook, which test every answer the course's variants test
    assert card.execution.to_dict()["variant_inputs"] == "this submission's own"


# The first question's first line in each skeleton's scorecard.
FIRST_BLANK = {
    "attention_numpy": "`Q` is not answered yet: fill in the blank `?` at cell 8, line 1: `Q = ?`.",
    "attention_similarity": "`sim_swam_bank` is not answered yet: fill in the blank `?` at cell 12, line 2: "
    "`sim_swam_bank = ?`.",
    "tokens_to_multihead": "`tokens` is not answered yet: fill in the blank `?` at cell 4, line 20: `?`.",
    "attention_french": "`torch.stack([W_Q, W_K, W_V])` is not answered yet: fill in the blank `?` at cell 9, "
    "line 2: `W_Q = ?`.",
    # attn_scores_2 is checked before cell 20 rebinds it: the blank to fill is the block in cell 4.
    "attention_from_scratch": "`attn_scores_2` is not answered yet: fill in the blank `?` at cell 4, line 3: `?`.",
}


@pytest.mark.parametrize("name", NAMES)
def test_skeleton_scores_zero_with_every_question_unanswered(shared, course, name):
    a = course.assignment(name)
    card = shared.grade(a, a.skeleton)
    assert card.score == 0
    assert {q.id: q.status for q in card.questions} == {q.id: "unanswered" for q in a.questions}
    assert card.questions[0].lines[0] == FIRST_BLANK[name]


def test_a_later_blank_rebinding_a_name_does_not_cost_the_question_answered_earlier(submit):
    # attn_scores_2 is graded twice: as the cell-4 block leaves it (before query_2), and as cell 20 rebinds it.
    card = submit({k: v for k, v in SCRATCH.items() if k != "attn_scores_2"}, assignment="attention_from_scratch")
    assert failures(card) == {"trainable_weights": "unanswered"}
    assert question(card, "trainable_weights").lines == [
        "`attn_scores_2` is not answered yet: fill in the blank `?` at cell 20, line 2: `attn_scores_2 = ?`.",
        "`attn_weights_2` is not answered yet: fill in the blank `?` at cell 20, line 2: `attn_scores_2 = ?`.",
        "`context_vector_2` is not answered yet: fill in the blank `?` at cell 20, line 2: `attn_scores_2 = ?`.",
    ]


def test_grader_validate_passes_for_all_five(shared, course):
    # `make test` also fails when a committed skeleton is out of date: tests/test_assign.py.
    assert {name: validate(course, course.assignment(name), shared) for name in NAMES} == {name: [] for name in NAMES}


# --------------------------------------------------------------------------------------------
# Typical mistakes: each loses exactly these questions (question id -> status), and the checks
# named get exactly these hints (check id -> hint, shown as "Likely mistake: ...").

NO_LOWER_CASE = 'return re.findall(r"\\w+|[^\\w\\s]", text)'
DROPOUT_ALWAYS_ON = CAUSAL_FORWARD.replace(
    "self.dropout(attn_weights)", "torch.nn.functional.dropout(attn_weights, p=self.dropout.p)"
)


def mistake(name, change, lost, hints, *, id, feedback=None):
    return pytest.param(name, change, lost, hints, feedback or {}, id=id)


MISTAKES = [
    mistake(
        "attention_numpy",
        {"scaled_scores": "scores"},
        {"scaled": "failed"},  # weights and output are right given her scaled scores: carried forward
        {
            "scaled/0": "The scores are not divided by sqrt(d_k).",
            "weights/0": "",
        },  # the softmax of her own scaled scores: no hint names a mistake she did not make
        id="numpy-no-sqrt-d_k",
    ),
    mistake(
        "attention_numpy",
        {"attention_weights": "np.apply_along_axis(softmax, 0, scaled_scores)"},
        {"weights": "failed"},
        {
            "weights/0": "The softmax is taken over columns (axis 0) instead of rows: each row of attention weights "
            "must sum to 1.",
            "output/0": "",
        },
        id="numpy-softmax-wrong-axis",
    ),
    mistake(
        "attention_numpy",
        {"Q": "X @ W_q", "K": "X @ W_k"},  # V is right: its point is kept
        {"qkv": "partial"},  # every later step is right given her Q and K
        {
            "qkv/0": "Q was computed as X @ W_q; in this notebook the weights are applied transposed, Q = X @ W_q.T.",
            "qkv/1": "K was computed as X @ W_k; in this notebook the weights are applied transposed, K = X @ W_k.T.",
        },
        id="numpy-weights-not-transposed",
    ),
    mistake(
        "attention_similarity",
        {"S_learned": "torch.softmax(Q @ K.T, dim=-1)"},
        {"q3_learned": "failed"},
        {
            "q3_learned/0": "Divide the scores Q K^T by sqrt(d_k) before the softmax.",
            # Right given the student's own S_learned: the hints for the knock-on values do not fire.
            "q4_bank_interest_learned/0": "",
            "q5_top2/1": "",
        },
        id="similarity-no-sqrt-d_k",
    ),
    mistake(
        "attention_similarity",
        {"Q": "torch.matmul(X, W_q.T)", "K": "torch.matmul(X, W_k.T)", "V": "torch.matmul(X, W_v.T)"},
        {"q2_qkv": "failed"},
        {
            "q2_qkv/0": "Each row of X times W_q: torch.matmul(X, W_q), without transposing the weights.",
            "q2_qkv/1": "Each row of X times W_k: torch.matmul(X, W_k), without transposing the weights.",
            "q2_qkv/2": "Each row of X times W_v: torch.matmul(X, W_v), without transposing the weights.",
            "q3_learned/0": "",
        },  # S_learned is right given her Q and K: the mistake is named once, in q2_qkv
        id="similarity-weights-transposed",
    ),
    mistake(
        "attention_similarity",
        {"sim_swam_bank": "torch.dot(X[2], X[-1])"},
        {"dot_similarities": "partial"},
        {"dot_similarities/0": "Token 1 is 'swam' (indexing starts at 0): X[1], not X[2]."},
        id="similarity-wrong-token-index",
    ),
    mistake(
        "tokens_to_multihead",
        {"multihead_attn": "nn.MultiheadAttention(embed_dim=8, num_heads=2)"},
        # per_head calls the student's module as the solution's step does: right given it (issue 40).
        {"multihead": "failed", "attention_table": "error", "reading": "error"},
        {
            "multihead/0": "Without batch_first=True the module reads (sequence, batch, features): your weights have "
            "shape (5, 1, 1)."
        },
        id="tokens-no-batch-first",
    ),
    mistake(
        "tokens_to_multihead",
        {"?1": NO_LOWER_CASE},
        {"tokenizer": "partial"},  # every later step is right given the student's own tokens
        {"tokenizer/0": "bert-base-uncased lower-cases the text first: 'The' becomes 'the'."},
        # `embeddings` is a varied input, but the student computes it: no note that the notebook's data
        # was changed, only where the mistake is.
        feedback={
            "token_ids": [
                "`token_ids` is correct given your `tokens`; the mistake is upstream, in *A tiny "
                "BERT-uncased tokenizer*: this step keeps its points (error carried forward)."
            ],
            # Computed from token_ids alone: the tokenizer's methods take `tokens` as a parameter of their own.
            "embeddings": [
                "`embeddings` is correct given your `token_ids`; the mistake is upstream, "
                "in *A tiny BERT-uncased tokenizer*: this step keeps its points (error carried forward)."
            ],
        },
        id="tokens-not-lower-cased",
    ),
    mistake(
        "tokens_to_multihead",
        {"attention_df": "pd.DataFrame(attention_weights[0].detach().numpy().T, index=tokens, columns=tokens)"},
        {"attention_table": "partial"},
        {
            "attention_table/0": "Rows are the current tokens (queries): use attention_weights[0] as it is, not "
            "transposed."
        },
        # The transposed table happens to give bank's most attended word right on the notebook's data; on
        # embeddings the student never saw it does not, but it follows the student's own table there: the
        # reading is right given that table (issue 40), and the mistake is the table's.
        feedback={
            "reading": [
                "`bank_most_attended` is correct given your `attention_df`; the mistake is upstream, in *Attention "
                "weights as a labelled table*: this step keeps its points (error carried forward)."
            ]
        },
        id="tokens-table-transposed",
    ),
    mistake(
        "attention_french",
        {"attention_weights": "torch.softmax(attention_scores, dim=-1)"},
        {"weights": "failed"},
        {"weights/0": "Divide the scores by sqrt(d_k) before the softmax, as in the formula."},
        id="french-no-sqrt-d_k",
    ),
    mistake(
        "attention_french",
        {"all_attention_weights": "torch.softmax(Q @ K.T / d_k ** 0.5, dim=0)"},
        {"all_words": "partial"},  # all_outputs is right given the student's weights: its point is kept
        {"all_words/0": "Softmax over the wrong axis: each row (one query) must sum to 1 (dim=-1)."},
        id="french-softmax-wrong-axis",
    ),
    mistake(
        "attention_french",
        {"multihead_output": "torch.cat(heads, dim=-1)"},
        {"multihead": "partial"},
        {"multihead/1": "Project the concatenated heads with W_O: torch.cat(heads, dim=-1) @ W_O."},
        id="french-no-output-projection",
    ),
    mistake(
        "attention_from_scratch",
        {"causal_weights": "torch.softmax(scores / d_k**0.5, dim=-1).masked_fill(mask, 0.0)"},
        {"causal_weights": "partial"},  # the context vectors and the dropout are right given these weights
        {
            "causal_weights/0": "The mask is applied after the softmax: the rows no longer sum to 1. Mask the scores "
            "with -inf before the softmax."
        },
        id="scratch-mask-after-softmax",
    ),
    mistake(
        "attention_from_scratch",
        {"?5": DROPOUT_ALWAYS_ON},
        # The wrapper is right given the student's CausalAttention (its calls replayed): carried forward.
        {"causal_attention_module": "partial"},
        {
            "causal_attention_module/2": "Dropout is still active in evaluation mode: use the nn.Dropout module "
            "(self.dropout), which is off after .eval()."
        },
        id="scratch-dropout-on-at-eval",
    ),
    mistake(
        "attention_from_scratch",
        {
            "?3": "keys = x @ self.W_key\nquerys = x @ self.W_query\nvalues = x @ self.W_value\n"
            "return torch.softmax(querys @ keys.T, dim=-1) @ values"
        },
        {"self_attention_v1": "failed"},
        {"self_attention_v1/0": "Scale the scores by 1/sqrt(d_k) before the softmax."},
        id="scratch-module-no-sqrt-d_k",
    ),
]


@pytest.mark.parametrize("name, change, lost, hints, feedback", MISTAKES)
def test_typical_mistake_loses_its_questions_with_its_hint(submit, name, change, lost, hints, feedback):
    card = submit({**CORRECT[name], **change}, assignment=name)
    assert card.status == "graded"
    assert failures(card) == lost
    checks = {c.id: c for q in card.questions for c in q.checks}
    assert {cid: checks[cid].hint for cid in hints} == hints
    for cid, hint in hints.items():
        lines = question(card, cid.split("/")[0]).lines
        if hint:
            assert f"Likely mistake: {hint}" in lines
        else:  # a value explained by the student's own upstream mistake: no hint at all
            assert not any(line.startswith("Likely mistake:") for line in lines), lines
    assert {qid: question(card, qid).lines for qid in feedback} == feedback


# --------------------------------------------------------------------------------------------
# Answers typed in from the solution's printouts. Every value a student fills in is typed as a
# literal of the reference value the grader computed, to 8 decimals (numpy's printout; torch
# prints 4, which already misses the tolerance, so 8 is the case only variants can catch). Code
# that defines functions and modules stays: a printout cannot be typed into those. Not typed:
# values no variant changes (the tokenizer's output, the causal mask of the six tokens) and, in
# tokens_to_multihead, `embeddings`, the varied input itself.


def _number(x) -> str:
    if np.isinf(x):
        return "float('-inf')" if x < 0 else "float('inf')"
    return repr(round(float(x), 8))


def _nested(a: np.ndarray) -> str:
    return _number(a) if a.ndim == 0 else "[" + ", ".join(_nested(row) for row in a) + "]"


class Printout:
    """Literals of the reference values, as a student would type them; remembers what was typed."""

    def __init__(self, ref, array: str):
        self.ref, self.array, self.typed = ref, array, []

    def literal(self, value) -> str:
        if value.kind == "array":
            return f"{self.array}({_nested(value.data)})"
        if value.kind == "list":
            return "[" + ", ".join(_number(v.data) if v.kind == "array" else repr(v.data) for v in value.data) + "]"
        return repr(value.data)

    def __call__(self, check_id: str, *, bare: bool = False) -> str:
        self.typed.append(check_id)
        value = self.ref[check_id].value
        return _nested(value.data) if bare else self.literal(value)


TYPED = {
    "attention_numpy": lambda t: {
        **NUMPY_CORRECT,
        "Q": t("qkv/0"),
        "K": t("qkv/1"),
        "V": t("qkv/2"),
        "scores": t("scores/0"),
        "scaled_scores": t("scaled/0"),
        "attention_weights": t("weights/0"),
        "output": t("output/0"),
    },
    "attention_similarity": lambda t: {
        "sim_swam_bank": t("dot_similarities/0"),
        "sim_river_bank": t("dot_similarities/1"),
        "S": [t("similarity_matrix/0"), t("q1_no_learning/0")],
        "S_scaled": t("softmax_scaling/0"),
        "y_swam": t("softmax_scaling/1"),
        "Y": [t("transformed_embeddings/0"), t("transformed_learned/0")],
        "sim_bank_interest": t("q1_no_learning/1"),
        "Q": t("q2_qkv/0"),
        "K": t("q2_qkv/1"),
        "V": t("q2_qkv/2"),
        "q_bank": t("q2_bank_interest/0"),
        "k_bank": t("q2_bank_interest/1"),
        "v_bank": t("q2_bank_interest/2"),
        "q_interest": t("q2_bank_interest/3"),
        "k_interest": t("q2_bank_interest/4"),
        "v_interest": t("q2_bank_interest/5"),
        "S_learned": t("q3_learned/0"),
        "sim_bank_interest_learned": t("q4_bank_interest_learned/0"),
        "?1": f"top2_words = {t('q5_top2/0')}\ntop2_weights = {t('q5_top2/1')}",
    },
    "tokens_to_multihead": lambda t: {
        **TOKENS,
        "output, attention_weights": f"{t('multihead/1')}, {t('multihead/0')}",
        "attention_df": f"pd.DataFrame({t('attention_table/0', bare=True)}, index=tokens, columns=tokens)",
        "bank_most_attended": t("reading/0"),
        "_, head_weights": f"None, {t('per_head/0')}",
    },
    "attention_french": lambda t: {
        **FRENCH,
        "Q": t("fix_projections/1"),
        "K": t("fix_projections/2"),
        "V": t("fix_projections/3"),
        "attention_scores": t("scores/0"),
        "attention_weights": t("weights/0"),
        "output": t("output/0"),
        "all_attention_weights": t("all_words/0"),
        "all_outputs": t("all_words/1"),
        "heads": f"list({t('multihead/0')})",
        "multihead_output": t("multihead/1"),
    },
    "attention_from_scratch": lambda t: {
        **SCRATCH,
        "?1": f"attn_scores_2 = {t('simple_scores/0')}",
        "nor_attn_2": t("simple_scores/1"),
        "?2": f"context_vec_2 = {t('context_vec_2/0')}",
        "attn_scores": t("all_scores/0"),
        "nor_attn": t("all_scores/1"),
        "context_vector": t("all_scores/2"),
        "query_2": t("trainable_qkv/0"),
        "key_2": t("trainable_qkv/1"),
        "value_2": t("trainable_qkv/2"),
        "keys": t("trainable_qkv/3"),
        "values": t("trainable_qkv/4"),
        "attn_scores_2": t("trainable_weights/0"),
        "attn_weights_2": t("trainable_weights/1"),
        "context_vector_2": t("trainable_weights/2"),
        "queries": t("causal_mask/0"),
        "scores": t("causal_mask/1"),
        "masked_scores": t("causal_mask/3"),
        "causal_weights": t("causal_weights/0"),
        "causal_context": t("causal_weights/1"),
        "dropped_weights": t("dropout/0"),
        "context_vecs": t("causal_attention_module/0"),
        "context_vecs_mha": t("multihead_wrapper/0"),
    },
}

VARIANT_MESSAGE = {
    "attention_numpy": "is correct for the notebook's data but not when `X`, `W_q`, `W_k` and `W_v` change (its "
    "values do not follow): is a value typed in, or a size fixed, rather than computed?",
    "attention_similarity": "is correct for the notebook's data but not when `loaded_word_vectors`, `the`, `bank`, "
    "`raised`, `interest`, `rates`, `W_q`, `W_k` and `W_v` change (its values do not follow): "
    "is a value typed in, or a size or constant fixed, rather than computed?",
    "tokens_to_multihead": "is correct for the notebook's data but not when `embeddings` changes (its values do not "
    "follow): is a value typed in, or a size or constant fixed, rather than computed?",
    "attention_french": "is correct for the notebook's data but not when `embeddings`, `W_Q`, `W_K`, `W_V` and `W_O` "
    "change (its values do not follow): is a value typed in, or a size or constant fixed, rather "
    "than computed?",
    "attention_from_scratch": "is correct for the notebook's data but not when `inputs`, `W_query`, `W_key` and "
    "`W_value` change (its values do not follow): is a value typed in, or a size or "
    "constant fixed, rather than computed?",
}


@pytest.mark.parametrize("name", NAMES)
def test_answers_typed_in_from_the_printouts_lose_every_question_they_typed(grader, configured, submit, name):
    a = configured.assignment(name)  # checked on variants of the notebook's own, as config.yaml says
    ref = grader.references.get(a).captures
    printout = Printout(ref, "np.array" if name == "attention_numpy" else "torch.tensor")
    card = submit(TYPED[name](printout), assignment=a)
    checks = {c.id: c for q in card.questions for c in q.checks}
    typed = set(printout.typed)
    assert {cid: wording.check_lines(checks[cid]) for cid in typed} == {
        cid: [f"`{checks[cid].target}` {VARIANT_MESSAGE[name]}"] for cid in typed
    }
    typed_questions = {cid.split("/")[0] for cid in typed}
    assert card.execution.to_dict()["variant_inputs"] == "this submission's own"
    assert {q.id for q in card.questions if q.status != "passed"} == typed_questions
    assert all(q.status in ("failed", "partial") for q in card.questions if q.id in typed_questions)


# --------------------------------------------------------------------------------------------
# Equivalent rewrites: the same mathematics written another way keeps full marks on the notebook's
# data and on every variant. One submission per assignment carries several rewrites at once.

REWRITES = {
    "attention_numpy": (
        {
            **NUMPY_CORRECT,
            "Q": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_q, dtype=torch.float32).T",
            "K": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_k, dtype=torch.float32).T",
            "V": "torch.tensor(X, dtype=torch.float32) @ torch.tensor(W_v, dtype=torch.float32).T",
            "scores": "torch.tensor([[sum(float(q[i]) * float(k[i]) for i in range(len(q))) for k in K] for q in Q])",
            "scaled_scores": "scores / math.sqrt(d_k)",
            "?1": "return torch.nn.functional.softmax(torch.as_tensor(x), dim=-1)",
            "attention_weights": "torch.stack([softmax(row) for row in scaled_scores])",
            "output": "torch.einsum('ij,jk->ik', attention_weights, V)",
        },
        {1: "import math\nimport numpy as np\nimport torch"},
    ),
    "attention_similarity": (
        {
            **SIMILARITY,
            "sim_swam_bank": "(X[1] * X[11]).sum()",
            "sim_river_bank": "X[tokens.index('river')] @ X[tokens.index('bank')]",
            "S": ["torch.einsum('id,jd->ij', X, X)", "torch.nn.functional.softmax(X @ X.T, dim=1)"],
            "S_scaled": "torch.exp(S - S.max(dim=1, keepdim=True).values) / "
            "torch.exp(S - S.max(dim=1, keepdim=True).values).sum(dim=1, keepdim=True)",
            "y_swam": "sum(S_scaled[1, j] * X[j] for j in range(len(tokens)))",
            "sim_bank_interest": "S[words.index('bank'), words.index('interest')]",
            "Q": "X.double() @ W_q.double()",
            "K": "X.double() @ W_k.double()",
            "V": "X.double() @ W_v.double()",
            "q_bank": "bank @ W_q",
            "k_bank": "bank @ W_k",
            "v_bank": "bank @ W_v",
            "q_interest": "interest @ W_q",
            "k_interest": "interest @ W_k",
            "v_interest": "interest @ W_v",
            "S_learned": "torch.softmax(Q @ K.T / d_k ** 0.5, dim=-1)",
            "sim_bank_interest_learned": "S_learned[1][3]",
            "?1": "order = sorted(range(len(words)), key=lambda j: S_learned[1, j].item(), reverse=True)[:2]\n"
            "top2_words = [words[j] for j in order]\n"
            "top2_weights = [S_learned[1, j].item() for j in order]",
        },
        {},
    ),
    "tokens_to_multihead": (
        {
            **TOKENS,
            "?1": "tokens = []\nfor word in text.lower().split():\n"
            "    tokens.extend(re.findall(r'[a-z0-9]+|[^a-z0-9]', word))\nreturn tokens",
            "?2": "ids = []\nfor token in tokens:\n"
            "    ids.append(self.vocab[token] if token in self.vocab else self.vocab['[UNK]'])\nreturn ids",
            "embedding_layer": "nn.Embedding(num_embeddings=VOCAB_SIZE, embedding_dim=8)",
            "embeddings": "embedding_layer.weight[token_ids]",
            "multihead_attn": "nn.MultiheadAttention(8, 2, batch_first=True)",
            "output, attention_weights": "multihead_attn(query=embeddings, key=embeddings, value=embeddings, "
            "need_weights=True)",
            "attention_df": "pd.DataFrame(attention_weights.detach().squeeze(0).tolist(), index=tokens, columns=tokens)",
            "bank_most_attended": "attention_df.columns[attention_df.loc['bank'].to_numpy().argmax()]",
            "_, head_weights": "multihead_attn(embeddings, embeddings, embeddings, need_weights=True, "
            "average_attn_weights=False)",
        },
        {},
    ),
    "attention_french": (
        {
            **FRENCH,
            "W_Q": "W_Q.to(torch.float32)",
            "W_K": "W_K.type(torch.FloatTensor)",
            "W_V": "W_V * 1.0",
            "Q": "embeddings @ W_Q",
            "K": "torch.einsum('nd,dk->nk', embeddings, W_K)",
            "V": "torch.mm(embeddings, W_V)",
            "attention_scores": "torch.stack([torch.dot(Q[0], k) for k in K])",
            "attention_weights": "torch.nn.functional.softmax(attention_scores / d_k ** 0.5, dim=0)",
            "output": "(attention_weights[:, None] * V).sum(dim=0, keepdim=True)",
            "all_attention_weights": "torch.stack([torch.softmax(Q[i] @ K.T / d_k ** 0.5, dim=-1) "
            "for i in range(len(tokens))])",
            "all_outputs": "all_attention_weights.double() @ V.double()",
            "?1": "d_k = W_K.shape[1]\nscores = (x @ W_Q) @ (x @ W_K).transpose(0, 1) / d_k ** 0.5\n"
            "return torch.nn.functional.softmax(scores, dim=1) @ (x @ W_V)",
            "heads": "[self_attention(embeddings, *params) for params in head_params]",
            "multihead_output": "torch.hstack(heads) @ W_O",
        },
        {},
    ),
    "attention_from_scratch": (
        {
            **SCRATCH,
            "?1": "attn_scores_2 = inputs @ query",
            "nor_attn_2": "attn_scores_2 / torch.sum(attn_scores_2)",
            "?2": "context_vec_2 = nor_attn_2 @ inputs",
            "attn_scores": "torch.stack([torch.stack([torch.dot(a, b) for b in inputs]) for a in inputs])",
            "nor_attn": "torch.exp(attn_scores) / torch.exp(attn_scores).sum(dim=-1, keepdim=True)",
            "context_vector": "torch.einsum('ij,jd->id', nor_attn, inputs)",
            "query_2": "torch.matmul(x_2, W_query)",
            "key_2": "inputs[1] @ W_key",
            "keys": "torch.stack([x @ W_key for x in inputs])",
            "attn_scores_2": "keys @ query_2",
            "attn_weights_2": "torch.nn.functional.softmax(attn_scores_2 / d_k ** 0.5, dim=0)",
            "context_vector_2": "(attn_weights_2[:, None] * values).sum(dim=0)",
            "?3": "q, k, v = x @ self.W_query, x @ self.W_key, x @ self.W_value\n"
            "return torch.nn.functional.softmax(q @ k.T / k.shape[-1] ** 0.5, dim=1) @ v",
            "queries": "torch.matmul(inputs, W_query)",
            "scores": "queries @ keys.transpose(0, 1)",
            "mask": "torch.ones(context_length, context_length).triu(diagonal=1).bool()",
            "masked_scores": "torch.where(mask, torch.full_like(scores, float('-inf')), scores)",
            "causal_weights": "torch.nn.functional.softmax(masked_scores / d_k ** 0.5, dim=1)",
            "dropped_weights": "torch.nn.functional.dropout(causal_weights, p=0.5, training=True)",
            "?4": "self.register_buffer('mask', torch.ones(context_length, context_length).triu(1).bool())",
            "self.heads": "nn.ModuleList(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) "
            "for _ in range(num_heads))",
            "?6": "outs = []\nfor head in self.heads:\n    outs.append(head(x))\nreturn torch.cat(outs, dim=2)",
        },
        {},
    ),
}


@pytest.mark.parametrize("name", NAMES)
def test_equivalent_rewrites_pass_every_variant(shared, course, submit, numpy_with_torch, name):
    a = course.assignment(name)
    answers, edit = REWRITES[name]
    # attention_numpy's rewrite is in torch: graded with torch preloaded, as the other four are
    card = submit(answers, assignment=numpy_with_torch if name == "attention_numpy" else name, edit=edit)
    assert failures(card) == {}
    solution = shared.grade(a, a.solution)
    assert {q.id: q.variants for q in card.questions} == {q.id: q.variants for q in solution.questions}


def test_fill_answers_a_blank_repeated_under_one_name_in_notebook_order():
    counter, seen = [0], {}
    cells = ["S = ?\nprint(S)", "S = ?", "T = ?"]
    answers = {"S": ["X @ X.T", "softmax(X @ X.T)"], "T": "S"}
    assert [fill_source(c, answers, counter, seen) for c in cells] == [
        "S = X @ X.T\nprint(S)",
        "S = softmax(X @ X.T)",
        "T = S",
    ]


def test_a_given_input_rebuilt_from_itself_in_its_cell_is_replaced_once_rebuilt():
    # The variant is made from the value the name has when its cell has run (here a (1, 5) tensor), so it
    # must go in after `token_ids = torch.tensor([token_ids])`, not after the list that line wraps.
    from grader.judge.variants import with_injections

    cell = (
        "token_ids = tokenizer.convert_tokens_to_ids(tokens)\n"
        "token_ids = torch.tensor([token_ids])  # batch size = 1\n"
        "X = np.eye(2); W = np.ones(2)\n"
    )
    assert with_injections(cell, ("token_ids", "X", "W")) == (
        "token_ids = tokenizer.convert_tokens_to_ids(tokens)\n"
        "token_ids = torch.tensor([token_ids]); __grader_inject__('token_ids')  # batch size = 1\n"
        "X = np.eye(2); __grader_inject__('X'); W = np.ones(2); __grader_inject__('W')\n"
    )
