"""Each step judged as the reference step would behave on the student's own upstream (issue 40).

A property, a hint and a "typed in?" message apply to a step only where the solution's step, run
on the student's own upstream values and functions, does not show the same thing: rows that do not
sum to one because the student's ``softmax`` does not are the softmax's mistake, not the weights'.
Each class is exercised on a real notebook, with the guarantee beside it that a step wrong on its
own still loses its points.
"""

from __future__ import annotations

from conftest import NUMPY_CORRECT, question
from test_assignments import CORRECT

from grader.testing import fill, write

LOG_SOFTMAX = "return x - np.log(np.sum(np.exp(x)))"
ZERO_MASKED = "scores.masked_fill(mask, 0.0)"


def _carried(card, qid: str) -> tuple[str, ...]:
    return question(card, qid).carried_forward


# --------------------------------------------------------------------------------------------
# 1. A declared property the reference step breaks too, on the student's inputs, vetoes nothing


def test_weights_right_given_a_log_softmax_are_carried_though_their_rows_do_not_sum_to_one(submit):
    card = submit({**NUMPY_CORRECT, "?1": LOG_SOFTMAX})
    assert question(card, "softmax").score == 0
    weights = question(card, "weights")
    # rows_sum_to_one fails on the weights, and on the solution's step run with the student's softmax too
    assert (weights.score, weights.status) == (weights.max_score, "passed"), weights.lines
    assert weights.carried_forward == ("softmax",)
    assert weights.lines == [
        "`attention_weights` is correct given your `softmax()`; the mistake is upstream, in *Softmax of a "
        "vector*: this step keeps its points (error carried forward)."
    ]
    # The earliest root is named for the step after it too, not the weights the output is computed from.
    assert _carried(card, "output") == ("softmax",)
    assert "in *Softmax of a vector*" in question(card, "output").lines[0]


def test_weights_wrong_on_their_own_with_a_log_softmax_still_lose_their_points(submit):
    # Over columns: the solution's step with the student's softmax takes it over rows, so nothing explains it.
    card = submit(
        {**NUMPY_CORRECT, "?1": LOG_SOFTMAX, "attention_weights": "np.apply_along_axis(softmax, 0, scaled_scores)"}
    )
    weights = question(card, "weights")
    assert weights.score == 0 and not weights.carried_forward, weights.lines


# --------------------------------------------------------------------------------------------
# 2. A hint names a step's own mistake, never the upstream's made again on the student's inputs


def test_weights_from_masked_scores_set_to_zero_are_carried_and_the_hint_stays_with_the_mask(submit):
    card = submit(
        {**CORRECT["attention_from_scratch"], "masked_scores": ZERO_MASKED}, assignment="attention_from_scratch"
    )
    mask = question(card, "causal_mask")
    assert mask.score < mask.max_score
    assert any("Fill the masked scores with -inf, not 0" in line for line in mask.lines), mask.lines
    weights = question(card, "causal_weights")
    # Neither the causal property (the solution's softmax of these scores breaks it too) nor the hint
    # "masked scores were set to 0" is charged to the weights computed correctly from them.
    assert (weights.score, weights.carried_forward) == (weights.max_score, ("causal_mask",)), weights.lines
    assert not any("Likely mistake" in line for line in weights.lines) and not any(c.hint for c in weights.checks)
    assert question(card, "dropout").carried_forward == ("causal_mask",)  # the root, not the weights


def test_weights_masked_after_the_softmax_still_get_their_own_hint(submit):
    wrong = "torch.softmax(scores / d_k**0.5, dim=-1).masked_fill(mask, 0.0)"
    card = submit(
        {**CORRECT["attention_from_scratch"], "masked_scores": ZERO_MASKED, "causal_weights": wrong},
        assignment="attention_from_scratch",
    )
    weights = question(card, "causal_weights")
    own = weights.checks[0]  # the weights' check (the context vectors are right given them: carried)
    assert own.score == 0 and not own.carried_from, weights.lines
    assert "Likely mistake: The mask is applied after the softmax" in " ".join(weights.lines), weights.lines


# --------------------------------------------------------------------------------------------
# 6 and 4. A value computed from a list or a table graded through an expression over it


TRANSPOSED_TABLE = "pd.DataFrame(attention_weights[0].detach().numpy().T, index=tokens, columns=tokens)"


def test_a_reading_that_follows_the_student_s_transposed_table_is_carried_not_called_typed_in(submit):
    card = submit(
        {**CORRECT["tokens_to_multihead"], "attention_df": TRANSPOSED_TABLE}, assignment="tokens_to_multihead"
    )
    table = question(card, "attention_table")
    assert table.score < table.max_score
    assert any("not transposed" in line for line in table.lines), table.lines  # its hint, on its own values
    reading = question(card, "reading")
    # On the variants the answer changes exactly as the student's table does: right given it.
    assert (reading.score, reading.carried_forward) == (reading.max_score, ("attention_table",)), reading.lines
    assert not any("typed in" in line for line in reading.lines)
    assert reading.lines == [
        "`bank_most_attended` is correct given your `attention_df`; the mistake is upstream, in *Attention "
        "weights as a labelled table*: this step keeps its points (error carried forward)."
    ]


def test_a_reading_typed_in_over_the_student_s_table_is_still_caught_on_the_variants(submit):
    answers = {**CORRECT["tokens_to_multihead"], "attention_df": TRANSPOSED_TABLE}
    card = submit({**answers, "bank_most_attended": "'bank'"}, assignment="tokens_to_multihead")
    reading = question(card, "reading")
    assert reading.score == 0 and not reading.carried_forward, reading.lines


def test_heads_in_the_wrong_order_cost_their_own_check_and_the_output_from_them_is_carried(submit):
    reversed_heads = "[self_attention(embeddings, W_q, W_k, W_v) for W_q, W_k, W_v in head_params[::-1]]"
    card = submit({**CORRECT["attention_french"], "heads": reversed_heads}, assignment="attention_french")
    multihead = question(card, "multihead")
    stack, output = multihead.checks
    assert stack.score == 0 and not stack.carried_from
    assert output.score == output.max_score and output.carried_from == (stack.id,), multihead.lines
    assert "`multihead_output` is correct given your `heads`" in " ".join(multihead.lines)
    assert not any("Likely mistake" in line for line in multihead.lines), multihead.lines
    # The output not projected with W_O is wrong given those heads too: no credit.
    card = submit(
        {
            **CORRECT["attention_french"],
            "heads": reversed_heads,
            "multihead_output": "torch.cat(heads, dim=-1)",
        },
        assignment="attention_french",
    )
    assert question(card, "multihead").score == 0


# --------------------------------------------------------------------------------------------
# 5 and 3. A value reached again through the student's function: linked by the solution's data flow


def _with_cell_prefix(nb, cell: int, source: str):
    nb.cells[cell].source = source + "\n" + nb.cells[cell].source
    return nb


PROJECT = "def project(A, W):\n    return A @ W.T  # the weights transposed: Q, K and V are wrong\n"
BY_PROJECT = {
    "Q": "project(X, W_q)",
    "K": "project(X, W_k)",
    "V": "project(X, W_v)",
    **{f"{m}_{w}": f"project(X[{i}], W_{m})" for w, i in (("bank", 1), ("interest", 3)) for m in "qkv"},
}


def _similarity(tmp_path, grader, course, answers: dict[str, str], name: str):
    a = course.assignment("attention_similarity")
    nb = _with_cell_prefix(fill(a.skeleton, {**CORRECT["attention_similarity"], **answers}), 28, PROJECT)
    return grader.grade(a, write(nb, tmp_path / f"{name}.ipynb"))


def test_rows_computed_again_with_a_wrong_helper_are_right_given_the_student_s_q_k_v(tmp_path, grader, course):
    card = _similarity(tmp_path, grader, course, BY_PROJECT, "project")
    assert question(card, "q2_qkv").score == 0
    rows = question(card, "q2_bank_interest")
    # q_bank is project(X[1], W_q): exactly row 1 of the student's own Q, which the solution's step reads.
    assert (rows.score, rows.carried_forward) == (rows.max_score, ("q2_qkv",)), rows.lines
    assert (
        "`q_bank` is correct given your `Q`; the mistake is upstream, in *Q2: queries, keys and values*"
        in (rows.lines[0])
    )
    assert not any("which is not right yet" in line for line in rows.lines), rows.lines  # the helper is not blamed


def test_a_wrong_row_taken_with_the_wrong_helper_is_still_wrong(tmp_path, grader, course):
    card = _similarity(tmp_path, grader, course, {**BY_PROJECT, "q_bank": "project(X[2], W_q)"}, "row")
    rows = question(card, "q2_bank_interest")
    assert rows.score == 0, rows.lines
    assert not next(c for c in rows.checks if c.target == "q_bank").carried_from


ATTEND = (
    "def attend(scores, mask, values):\n"
    "    w = torch.softmax(scores.masked_fill(mask, -torch.inf) / d_k, dim=-1)  # by d_k, not its root\n"
    "    return w, w @ values\n"
)


def test_context_from_a_function_called_again_is_right_given_the_weights_of_its_first_call(tmp_path, grader, course):
    a = course.assignment("attention_from_scratch")
    answers = {**CORRECT["attention_from_scratch"], "causal_context": "attend(scores, mask, values)[1]"}
    nb = fill(a.skeleton, {**answers, "causal_weights": "attend(scores, mask, values)[0]"})
    card = grader.grade(a, write(_with_cell_prefix(nb, 33, ATTEND), tmp_path / "attend.ipynb"))
    q = question(card, "causal_weights")
    weights, context = q.checks
    assert weights.score == 0 and not weights.carried_from, q.lines
    assert context.score == context.max_score and context.carried_from == (weights.id,), q.lines
    assert "`causal_context` is correct given your `causal_weights`" in " ".join(q.lines)
    assert question(card, "dropout").carried_forward == ("causal_weights",)
    # The context vectors from the keys instead of the values are wrong given those weights too.
    nb = fill(a.skeleton, {**answers, "causal_weights": "attend(scores, mask, values)[0]"})
    wrong = ATTEND.replace("w @ values", "w @ keys")
    card = grader.grade(a, write(_with_cell_prefix(nb, 33, wrong), tmp_path / "attend_keys.ipynb"))
    assert question(card, "causal_weights").score == 0


# --------------------------------------------------------------------------------------------
# A function written early and reused in an earlier question belongs to the question that tests it


UNSCALED = (
    "def self_attention(x, W_Q, W_K, W_V):\n"
    "    Q, K, V = x @ W_Q, x @ W_K, x @ W_V\n"
    "    return torch.softmax(Q @ K.T, dim=-1) @ V  # not scaled by sqrt(d_k)\n"
)


def test_a_function_reused_early_is_blamed_in_its_own_question_and_carried_into_the_heads(tmp_path, grader, course):
    a = course.assignment("attention_french")
    nb = fill(a.skeleton, {**CORRECT["attention_french"], "all_outputs": "self_attention(embeddings, W_Q, W_K, W_V)"})
    nb.cells[8].source = UNSCALED + nb.cells[8].source
    nb.cells[19].source = "# self_attention is defined at the top"
    card = grader.grade(a, write(nb, tmp_path / "early.ipynb"))
    # Its own question tests it directly: not "correct given your self_attention()".
    own = question(card, "self_attention_fn")
    assert own.score == 0 and not own.carried_forward, own.lines
    # all_outputs is not what the solution's step computes from anything of the student's: wrong.
    assert question(card, "all_words").score < question(card, "all_words").max_score
    multihead = question(card, "multihead")
    assert (multihead.score, multihead.carried_forward) == (multihead.max_score, ("self_attention_fn",)), (
        multihead.lines
    )


# --------------------------------------------------------------------------------------------
# 8. A module instance the student configured wrongly, called correctly by a later step


ONE_HEAD = "nn.MultiheadAttention(embed_dim=8, num_heads=1, batch_first=True)"


def test_per_head_weights_from_a_one_head_module_are_right_given_it(submit):
    card = submit({**CORRECT["tokens_to_multihead"], "multihead_attn": ONE_HEAD}, assignment="tokens_to_multihead")
    assert question(card, "multihead").score < question(card, "multihead").max_score
    per_head = question(card, "per_head")
    # (1, 1, 5, 5) where (1, 2, 5, 5) is expected: the solution's step, calling the student's module, gives it too.
    assert (per_head.score, per_head.carried_forward) == (per_head.max_score, ("multihead",)), per_head.lines
    assert per_head.lines == [
        "`head_weights` is correct given your `multihead_attn`; the mistake is upstream, in *Multi-head "
        "self-attention*: this step keeps its points (error carried forward)."
    ]


def test_per_head_weights_averaged_over_the_heads_of_a_one_head_module_are_still_wrong(submit):
    averaged = "multihead_attn(embeddings, embeddings, embeddings)"  # no average_attn_weights=False
    card = submit(
        {**CORRECT["tokens_to_multihead"], "multihead_attn": ONE_HEAD, "_, head_weights": averaged},
        assignment="tokens_to_multihead",
    )
    per_head = question(card, "per_head")
    assert per_head.score == 0 and not per_head.carried_forward, per_head.lines


UNSCALED_MODULE = (
    "class SelfAttention(nn.Module):\n"
    "    def __init__(self, scale=True):\n"
    "        super().__init__()\n"
    "        self.scale = scale\n\n"
    "    def forward(self, x, W_Q, W_K, W_V):\n"
    "        Q, K, V = x @ W_Q, x @ W_K, x @ W_V\n"
    "        s = Q @ K.T\n"
    "        if self.scale:\n"
    "            s = s / K.shape[-1] ** 0.5\n"
    "        return torch.softmax(s, dim=-1) @ V\n\n"
    "self_attention = SelfAttention(scale=False).eval()\n"
)


def test_heads_from_a_module_instance_standing_for_the_function_are_right_given_it(tmp_path, grader, course):
    a = course.assignment("attention_french")
    nb = fill(a.skeleton, CORRECT["attention_french"])
    nb.cells[19].source = UNSCALED_MODULE
    card = grader.grade(a, write(nb, tmp_path / "module.ipynb"))
    assert question(card, "self_attention_fn").score == 0
    multihead = question(card, "multihead")
    assert (multihead.score, multihead.carried_forward) == (multihead.max_score, ("self_attention_fn",)), (
        multihead.lines
    )
    assert "correct given your `self_attention`" in " ".join(multihead.lines), multihead.lines
