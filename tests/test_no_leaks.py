"""No message lets a student recover a hidden answer: a scalar's error is said in words, and a hint
never states the answer of its own or of another question."""

from __future__ import annotations

from conftest import question
from test_assignments import SIMILARITY, TOKENS

from grader.capture import number_text


def test_a_wrong_scalar_is_told_the_direction_of_its_error_never_a_relative_difference(grader, course, submit):
    ref = grader.references.get(course.assignment("attention_similarity")).captures["dot_similarities/0"].value
    expected = float(ref.data)
    card = submit({**SIMILARITY, "sim_swam_bank": "torch.dot(X[1], X[-1]) * 1.5"}, assignment="attention_similarity")
    q = question(card, "dot_similarities")
    assert q.status == "partial"
    line = next(m for m in q.lines if m.startswith("`sim_swam_bank` is "))
    assert line.endswith(": it is too large." if expected > 0 else ": it is too small."), line
    text = " ".join(q.lines)
    assert "relative" not in text and "difference" not in text
    assert number_text(expected) not in text


def test_the_q5_hint_does_not_name_the_two_words(grader, course, submit):
    a = course.assignment("attention_similarity")
    words = grader.references.get(a).captures["q5_top2/0"].value
    answer = [w.data for w in words.data]
    # bank's own column left out of its row: the mistake the hint is for
    card = submit(
        {
            **SIMILARITY,
            "?1": "row = S_learned[1].clone()\nrow[1] = -1.0\ntop2 = torch.topk(row, k=2)\n"
            "top2_words = [words[i] for i in top2.indices.tolist()]\n"
            "top2_weights = top2.values.tolist()",
        },
        assignment="attention_similarity",
    )
    q = question(card, "q5_top2")
    assert q.status != "passed"
    assert any("its weight on its own column counts too" in m for m in q.lines), q.lines
    for message in q.lines:
        assert not all(w in message for w in answer if w != "bank"), message


def test_the_reading_hint_does_not_say_which_token_bank_attends_to_most(grader, course, submit):
    card = submit(
        {**TOKENS, "bank_most_attended": "attention_df.loc['bank'].drop('bank').idxmax()"},
        assignment="tokens_to_multihead",
    )
    q = question(card, "reading")
    assert q.status == "failed"
    assert any("its weight on its own column counts too" in m for m in q.lines), q.lines
    assert not any("attends most to" in m for m in q.lines), q.lines


def test_no_hint_message_states_a_word_answer(grader, course):
    # A hint is shown to students who got the question wrong: it must not contain the answer itself.
    for a in course.assignments.values():
        ref = grader.references.get(a).captures
        for check in a.checks:
            value = ref[check.id].value
            if value.kind == "list" and value.data and all(v.kind == "str" for v in value.data):
                answer = " and ".join(v.data for v in value.data)
                for other in a.checks:
                    for hint in other.hints:
                        assert answer not in hint.message, (a.name, check.id, hint.message)
