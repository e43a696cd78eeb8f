"""Each step judged as the reference step would behave on the student's own upstream (issue 40).

A property, a hint and a "typed in?" message apply to a step only where the solution's step, run
on the student's own upstream values and functions, does not show the same thing: rows that do not
sum to one because the student's ``softmax`` does not are the softmax's mistake, not the weights'.
Each class is exercised on a real notebook, with the guarantee beside it that a step wrong on its
own still loses its points.
"""

from __future__ import annotations

from conftest import NUMPY_CORRECT, question

LOG_SOFTMAX = "return x - np.log(np.sum(np.exp(x)))"


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
