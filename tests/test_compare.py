"""Comparison verdicts and the exact messages students read."""

from __future__ import annotations

import json

import numpy as np
import torch

from grader.capture import decode, encode, number_text
from grader.course.properties import check_property
from grader.judge.compare import compare


def V(x):
    return decode(json.loads(json.dumps(encode(x, budget=[1 << 24]))))


def msg(actual, expected, **kw):
    kw.setdefault("rtol", 1e-5)
    kw.setdefault("atol", 1e-8)
    result = compare("`x`", V(actual), V(expected), **kw)
    return result.messages[0] if result.messages else None


def test_equal_within_tolerance_across_numpy_torch_and_float32():
    expected = np.array([[0.65693877, 0.01914529], [0.5, 0.5]])
    assert compare("`x`", V(torch.tensor(expected, dtype=torch.float32)), V(expected), rtol=1e-5, atol=1e-6).ok
    assert compare("`x`", V(expected.tolist()), V(expected), rtol=1e-5, atol=1e-8).ok


def test_strict_types_reject_torch_for_numpy():
    assert msg(torch.zeros(2), np.zeros(2), strict_types=True) == (
        "`x` is a torch.Tensor of shape (2,), dtype torch.float32; expected a numpy.ndarray of shape (2,), dtype float64."
    )


def test_shape_message_mentions_transpose():
    assert msg(np.zeros((2, 3)), np.zeros((3, 2))) == (
        "`x` has shape (2, 3); expected shape (3, 2) (the transpose of the expected shape)."
    )
    assert msg(np.zeros((1, 2)), np.zeros(2)) == (
        "`x` has shape (1, 2); expected shape (2,) (same number of elements: a reshape, squeeze or unsqueeze "
        "too many or too few?)."
    )


def test_value_message_counts_and_locates_without_revealing():
    expected = np.arange(9.0).reshape(3, 3)
    actual = expected.copy()
    actual[0, 1] = 10.0
    actual[2, 2] = 0.0
    text = msg(actual, expected)
    assert text == (
        "`x`: 2 / 9 elements (22.2%) differ beyond tolerance (rtol=1e-05, atol=1e-08); first: [0, 1] is 10; "
        "[2, 2] is 0. The largest relative difference is over 100%."
    )
    assert "expected" not in text.split(";")[1]
    # A difference as a number next to the student's value at [0, 1] would give the reference away.
    assert "difference 9" not in text
    revealed = compare("`x`", V(actual), V(expected), rtol=1e-5, atol=1e-8, reveal=True).messages[0]
    assert "[0, 1] is 10 (expected 1)" in revealed
    assert revealed.endswith("Largest absolute difference 9, largest relative difference 9.")
    close = expected.copy()
    close[1, 1] = 6.0
    assert msg(close, expected).endswith("[1, 1] is 6. The largest relative difference is between 10% and 100%.")


def test_nan_positions_come_before_values():
    actual = np.array([1.0, np.nan, 3.0])
    assert msg(actual, np.array([1.0, 2.0, 4.0])) == (
        "`x` has NaN at [1] (1 in all) where a number was expected: a division by zero, log of 0 or an overflow?"
    )
    assert compare("`x`", V(np.array([np.nan, np.inf])), V(np.array([np.nan, np.inf])), rtol=0, atol=0).ok


def test_scalar_message():
    # The error in words, never as a number the student could turn back into the reference.
    assert (
        msg(0.5, 0.25) == "`x` is 0.5, which is not the expected value within rtol=1e-05, atol=1e-08: it is too large."
    )
    assert msg(0.26, 0.25).endswith(": it is slightly too large.")
    assert msg(0.1, 0.25).endswith(": it is too small.")
    assert msg(2.0, 0.25).endswith(": it is much too large.")
    assert msg(-0.25, 0.25).endswith(": it is of the wrong sign.")
    assert msg(1.0, 0.0).endswith(": it is too large.")
    for actual, expected in [(0.5, 0.25), (0.26, 0.25), (-3.0, -2.9)]:
        text = msg(actual, expected)
        assert "relative" not in text and "difference" not in text
        assert number_text(expected) not in text.replace(number_text(actual), "")


def test_strings_lists_dicts_and_frames():
    assert msg("bank", "loan") == "`x` is 'bank', which is not the expected text."
    assert msg(["a", "b"], ["a", "b", "c"]) == "`x` has 2 items; expected 3."
    assert msg({"a": 1}, {"a": 1, "b": 2}) == "`x`: 1 expected key missing."
    import pandas as pd

    e = pd.DataFrame([[0.5, 0.5]], index=["the"], columns=["the", "bank"])
    a = pd.DataFrame([[0.5, 0.5]], index=["the"], columns=["bank", "the"])
    assert msg(a, e) == (
        "`x`: expected a DataFrame with columns ['the', 'bank']; yours has ['bank', 'the'] (the same columns, "
        "in another order)."
    )


def test_properties():
    w = np.array([[0.2, 0.8], [0.6, 0.6]])
    assert check_property("rows_sum_to_one", "`w`", V(w), None, atol=1e-8) == (
        "`w`: 1 of 2 rows do not sum to 1 (first: row [1], sum 1.2); was the softmax taken over the last axis (each row)?"
    )
    causal = np.array([[1.0, 0.0], [0.4, 0.6]])
    assert check_property("causal", "`w`", V(causal), None, atol=1e-8) is None
    assert "gives weight to future positions (1 entries above the diagonal" in check_property(
        "causal", "`w`", V(causal.T), None, atol=1e-8
    )
    assert check_property("dtype_kind", "`t`", V(np.array([1, 2])), V(np.array([1.0])), atol=0) == (
        "`t` holds integers (int64); expected floating-point numbers."
    )
    assert check_property("finite", "`t`", V(np.array([1.0, np.inf])), None, atol=0) == (
        "`t` has 1 NaN or infinite value(s), first at [1]."
    )
