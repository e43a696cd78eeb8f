"""Error carried forward on freely written code (issue 29): the student's value of a step goes in
right after the statement that computes it whatever its shape (a loop, an ``if``, a ``with``, a
``try``, a function that assigns it), each step's inputs are the bindings it really read (a name
checked twice), and the root of a knock-on value is found on the run where the difference shows.

The graded notebooks are written as students write them (one big cell, helper functions, loops),
not only the skeleton filled in; each is graded once per module and shared by its tests.
"""

from __future__ import annotations

import nbformat
import pytest
from conftest import NUMPY_CORRECT, question
from test_assignments import FRENCH, SIMILARITY

from grader import notebook
from grader.course.model import Assignment
from grader.judge import carry
from grader.judge.jobs import answer_cells
from grader.names import INJECT
from grader.notebook.inject import inject_after
from grader.testing import fill, write

# --------------------------------------------------------------------------------------------
# Where the student's value goes in: right after the whole statement, once


SHAPES = {
    "for": ("acc = 0\nfor i in range(3):\n    acc += i\nprint(acc)", 1, 3),
    "for ending the cell": ("acc = 0\nfor i in range(3):\n    acc += i", 1, 3),
    "while": ("acc = 0\nwhile acc < 5:\n    acc += 2\n\nshown = acc", 1, 6),
    "if/else": ("if flag:\n    acc = 1\nelse:\n    acc = 2\n# done\nacc2 = acc", 0, 2),
    "with": ("import contextlib\nwith contextlib.nullcontext():\n    acc = 7\nfor j in range(2):\n    pass", 1, 7),
    "try/except": (
        "try:\n    acc = 1 / 0\nexcept ZeroDivisionError:\n    acc = 9\nelse:\n    acc = 10\nacc2 = acc",
        0,
        9,
    ),
    "nested loops": ("acc = 0\nfor i in range(2):\n    for j in range(2):\n        acc += 1\nacc2 = acc", 1, 4),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_the_value_goes_in_once_after_the_whole_block(name):
    source, statement, final = SHAPES[name]
    seen: list[int] = []
    ns = {"flag": False, INJECT: lambda key: (seen.append(ns["acc"]), ns.__setitem__("acc", 100))}
    rewritten = inject_after(source, {statement: ["acc"]})
    exec(compile(rewritten, "<cell>", "exec"), ns)  # noqa: S102 - the test's own code
    assert seen == [final], rewritten  # once, with the block's final value (the solution's, kept)
    assert ns["acc"] == 100  # and what follows reads the value put in
    if "acc2" in ns:
        assert ns["acc2"] == 100


def test_a_value_put_in_after_a_block_keeps_the_cell_s_line_numbers_where_it_can():
    # A blank or comment line after the block takes the call; else the next simple statement's line.
    for source, statement in (SHAPES["while"][:2], SHAPES["if/else"][:2], SHAPES["for"][:2]):
        assert len(inject_after(source, {statement: ["acc"]}).splitlines()) == len(source.splitlines())
    assert (
        inject_after("for i in r:\n    x = i\nprint(x)", {0: ["x"]})
        == f"for i in r:\n    x = i\n{INJECT}('x'); print(x)"
    )
    assert inject_after("x = 1; y = 2", {0: ["x"]}) == f"x = 1; {INJECT}('x'); y = 2"


def test_a_function_that_assigns_a_notebook_name_binds_it_where_it_is_called():
    cells = [
        notebook.Cell(1, "def compute():\n    global S\n    S = X @ X.T\n"),
        notebook.Cell(2, "compute()\nS_scaled = S / 2"),
    ]
    infos = notebook.analyse(cells)
    assert infos[1].statements[0][0] == {"S"}  # the call binds S
    assert infos[0].statements[0][1] == {"X"}  # the body reads X, not its own locals
    local = notebook.analyse([notebook.Cell(1, "def f(keys):\n    values = keys * 2\n    return values + W")])
    assert local[0].statements[0][1] == {"W"}  # a parameter or local variable is no notebook name


def test_a_value_changed_in_place_is_bound_where_it_changes():
    [info] = notebook.analyse(
        [
            notebook.Cell(
                1,
                "s = torch.empty(3)\nfor i in range(3):\n    s[i] = i\n"
                "h = []\nh.append(1)\nw.add_(1)\nm.weight = 2\nn = len(h)",
            )
        ]
    )
    binds = [set(b) for b, _ in info.statements]
    assert binds == [{"s"}, {"s", "i"}, {"h"}, {"h"}, {"w"}, {"m"}, {"n"}]


def test_a_step_filled_in_by_a_loop_takes_the_student_s_value_after_the_loop(scratch_cards):
    # The solution's attn_scores_2 = torch.empty(6), then a loop fills it: the student's value goes in
    # after the loop, so nor_attn_2 is judged on the student's own scores.
    q = question(scratch_cards["query_0"], "simple_scores")
    assert q.score == 1 and any(
        line.startswith("`nor_attn_2` is correct given your `attn_scores_2`") for line in q.lines
    ), q.lines
    assert question(scratch_cards["query_0"], "context_vec_2").score == 1


# --------------------------------------------------------------------------------------------
# A name checked twice: each step's input is the binding it read


def test_a_step_reads_the_binding_captured_before_the_name_is_used_again(course):
    a = course.assignment("attention_similarity")
    infos = notebook.analyse(answer_cells(a, notebook.read(a.solution)))
    ups = carry.upstream(a, infos)
    # S_scaled is computed from part 1's S (taken before: bank), not from question 1's S at the end.
    assert [u.id for u in ups["softmax_scaling/0"]] == ["similarity_matrix/0"]
    assert [u.id for u in ups["q1_no_learning/1"]] == ["q1_no_learning/0"]


# --------------------------------------------------------------------------------------------
# Graded notebooks, written freely


SCRATCH_FREE = """import torch
import torch.nn as nn

inputs = torch.tensor(
    [[0.43, 0.15, 0.89],
     [0.55, 0.87, 0.66],
     [0.57, 0.85, 0.64],
     [0.22, 0.58, 0.33],
     [0.77, 0.25, 0.10],
     [0.05, 0.80, 0.55]])


def dot_scores(q, xs):
    out = torch.empty(len(xs))
    for i in range(len(xs)):
        out[i] = (q * xs[i]).sum()
    return out


query = {query}
attn_scores_2 = dot_scores(query, inputs)
nor_attn_2 = {nor_attn_2}
context_vec_2 = {context_start}
for w, x in zip(nor_attn_2, inputs):
    context_vec_2 = context_vec_2 + w * x

attn_scores = torch.stack([dot_scores(q, inputs) for q in inputs])
nor_attn = attn_scores.softmax(dim=1)
context_vector = nor_attn @ inputs

d_in, d_out = 3, 2
x_2 = inputs[1]
torch.manual_seed(123)
W_query = nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
W_key = nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
W_value = nn.Parameter(torch.rand(d_in, d_out), requires_grad=False)
query_2, key_2, value_2 = [x_2 @ W for W in (W_query, W_key, W_value)]
keys, values = inputs @ W_key, inputs @ W_value
attn_scores_2 = query_2 @ keys.T
d_k = keys.shape[-1]
attn_weights_2 = torch.softmax(attn_scores_2 / d_k ** 0.5, dim=-1)
context_vector_2 = attn_weights_2 @ values


class SelfAttention_v1(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))

    def forward(self, x):
        keys = x @ self.W_key
        w = torch.softmax(x @ self.W_query @ keys.T / keys.shape[1] ** 0.5, dim=-1)
        return w @ (x @ self.W_value)


torch.manual_seed(123)
model = SelfAttention_v1(d_in, d_out)

context_length = inputs.shape[0]
queries = inputs @ W_query
scores = queries @ keys.T
mask = torch.ones(context_length, context_length, dtype=torch.bool).triu(1)
masked_scores = scores.masked_fill(mask, float("-inf"))
causal_weights = torch.softmax(masked_scores / d_k ** 0.5, dim=-1)
causal_context = causal_weights @ values

torch.manual_seed(123)
dropout = nn.Dropout(0.5)
dropped_weights = dropout(causal_weights)


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).triu(1))

    def forward(self, x):
        n = x.shape[1]
        k, q, v = self.W_key(x), self.W_query(x), self.W_value(x)
        s = (q @ k.transpose(1, 2)).masked_fill(self.mask[:n, :n], -torch.inf)
        {causal_return}


batch = torch.stack((inputs, inputs))
torch.manual_seed(123)
ca = CausalAttention(d_in, d_out, batch.shape[1], 0.0)
context_vecs = ca(batch)


class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList([CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                                    for _ in range(num_heads)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], dim={cat_dim})


torch.manual_seed(123)
mha = MultiHeadAttentionWrapper(d_in, d_out, batch.shape[1], 0.0, num_heads=2)
context_vecs_mha = mha(batch)
"""

RIGHT = {
    "query": "inputs[1]",
    "nor_attn_2": "attn_scores_2 / attn_scores_2.sum()",
    "context_start": "torch.zeros(3)",
    "causal_return": "return self.dropout(torch.softmax(s / k.shape[-1] ** 0.5, dim=-1)) @ v",
    "cat_dim": "-1",
}
# Normalized by the largest score instead of the sum: a mistake in the step, none in the loop after it.
BY_MAX = {**RIGHT, "nor_attn_2": "attn_scores_2 / attn_scores_2.max()"}
# ... and a second, independent mistake in the loop: it starts from ones.
BY_MAX_AND_ONES = {**BY_MAX, "context_start": "torch.ones(3)"}


# A CausalAttention with a mistake, which the multi-head wrapper reuses: scores not scaled, or
# dropout left on in evaluation mode.
UNSCALED = {**RIGHT, "causal_return": "return self.dropout(torch.softmax(s, dim=-1)) @ v"}
DROPOUT_ON = {
    **RIGHT,
    "causal_return": "return torch.nn.functional.dropout(torch.softmax(s / k.shape[-1] ** 0.5, "
    "dim=-1), self.dropout.p, training=True) @ v",
}


# ... and a second, independent mistake in the wrapper: the heads concatenated along the tokens.
UNSCALED_AND_CAT = {**UNSCALED, "cat_dim": "1"}
# Independent parts of one notebook, graded together: a mistake early on and one in the module.
UNSCALED_ONLY = {"causal_return": UNSCALED["causal_return"]}
DROPOUT_ON_ONLY = {"causal_return": DROPOUT_ON["causal_return"]}
UNSCALED_AND_CAT_ONLY = {"causal_return": UNSCALED["causal_return"], "cat_dim": "1"}
# The wrong query: attn_scores_2 is wrong, and the solution fills its attn_scores_2 element by element.
QUERY_0 = {**RIGHT, "query": "inputs[0]"}


def one_cell(source: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    nb.cells = [nbformat.v4.new_code_cell(source)]  # type: ignore[no-untyped-call]
    return nb


@pytest.fixture(scope="module")
def scratch_cards(grader, course, tmp_path_factory):
    a: Assignment = course.assignment("attention_from_scratch")
    folder = tmp_path_factory.mktemp("scratch")
    return {
        name: grader.grade(a, write(one_cell(SCRATCH_FREE.format(**answers)), folder / f"{name}.ipynb"))
        for name, answers in (
            ("right", RIGHT),
            ("by_max", {**BY_MAX, **UNSCALED_ONLY}),
            ("seconds", {**BY_MAX_AND_ONES, **UNSCALED_AND_CAT_ONLY}),
            ("query_0", {**QUERY_0, **DROPOUT_ON_ONLY}),
        )
    }


def lost(card) -> set[str]:
    return {q.id for q in card.questions if q.score < q.max_score}


def test_a_one_cell_notebook_written_freely_scores_full_marks(scratch_cards):
    card = scratch_cards["right"]
    assert card.score == card.max_score, {q.id: q.lines for q in card.questions if q.score < q.max_score}


def test_a_step_computed_in_a_loop_is_carried_forward_from_a_wrong_step_before_it(scratch_cards, course):
    card = scratch_cards["by_max"]  # (its CausalAttention is wrong too: an independent mistake)
    assert lost(card) == {"simple_scores", "causal_attention_module"}
    q = question(card, "context_vec_2")
    assert q.status == "passed" and q.carried_forward == ("simple_scores",)
    title = course.assignment("attention_from_scratch").question("simple_scores").title
    assert q.lines == [
        f"`context_vec_2` is correct given your `nor_attn_2`; the mistake is upstream, in *{title}*: "
        "this step keeps its points (error carried forward)."
    ]


def test_a_second_mistake_in_the_loop_after_it_is_still_caught(scratch_cards):
    card = scratch_cards["seconds"]
    assert lost(card) == {"simple_scores", "context_vec_2", "causal_attention_module", "multihead_wrapper"}
    assert not question(card, "context_vec_2").carried_forward


@pytest.fixture(scope="module")
def similarity_card(grader, course, tmp_path_factory):
    a = course.assignment("attention_similarity")
    # Part 1's S halved; question 1's S (the same name, later) is right.
    answers = {**SIMILARITY, "S": ["torch.matmul(X, X.T) / 2", SIMILARITY["S"][1]]}
    path = write(fill(a.skeleton, answers), tmp_path_factory.mktemp("similarity") / "s_halved.ipynb")
    return grader.grade(a, path, course_variants=True)


def test_a_mistake_in_a_name_checked_twice_carries_into_the_step_that_read_it(similarity_card, course):
    card = similarity_card
    assert lost(card) == {"similarity_matrix"}
    title = course.assignment("attention_similarity").question("similarity_matrix").title
    for qid in ("softmax_scaling", "transformed_embeddings"):
        q = question(card, qid)
        assert q.carried_forward == ("similarity_matrix",), q.lines
        assert any(f"the mistake is upstream, in *{title}*" in line for line in q.lines), q.lines
    assert not question(card, "q1_no_learning").carried_forward


# --------------------------------------------------------------------------------------------
# The root of a knock-on value, found on the run where the difference shows


SHOWS_ON_VARIANTS = {  # a mistake invisible on the notebook's data -> its question, and the steps after it
    "scores kept in float16": ({"scores": "(Q @ K.T).astype(np.float16)"}, "scores", ("scaled", "weights", "output")),
    "Q rounded for display": ({"Q": "np.round(X @ W_q.T, 2)"}, "qkv", ("scores", "scaled", "weights", "output")),
}


@pytest.fixture(scope="module")
def variant_only_cards(grader, numpy_assignment, tmp_path_factory):
    folder = tmp_path_factory.mktemp("variant_only")
    return {
        name: grader.grade(
            numpy_assignment,
            write(fill(numpy_assignment.skeleton, {**NUMPY_CORRECT, **change}), folder / f"{i}.ipynb"),
            course_variants=True,
        )
        for i, (name, (change, _, _)) in enumerate(SHOWS_ON_VARIANTS.items())
    }


@pytest.mark.parametrize("name", list(SHOWS_ON_VARIANTS))
def test_a_mistake_that_shows_only_on_the_variants_is_named_where_it_is(variant_only_cards, numpy_assignment, name):
    _, root, later = SHOWS_ON_VARIANTS[name]
    card = variant_only_cards[name]
    assert lost(card) == {root}
    title = numpy_assignment.question(root).title
    for qid in later:  # every step after it names the step that is wrong, not the one just before
        q = question(card, qid)
        assert q.status == "passed" and q.carried_forward == (root,), q.lines
        assert any(f"the mistake is upstream, in *{title}*" in line for line in q.lines), q.lines


# --------------------------------------------------------------------------------------------
# A step computed with the student's own function or class that is wrong itself


@pytest.mark.parametrize("name, checks", [("by_max", 3), ("query_0", 1)])
def test_a_wrapper_built_from_a_wrong_module_is_right_given_it(scratch_cards, course, name, checks):
    # The solution's wrapper, run with the student's CausalAttention (its instances and forward calls
    # recorded in the student's process, replayed in the solution's), gives the student's values.
    card = scratch_cards[name]  # no scaling in the module, or dropout left on
    assert lost(card) - {"simple_scores"} == {"causal_attention_module"}
    title = course.assignment("attention_from_scratch").question("causal_attention_module").title
    wrapper = question(card, "multihead_wrapper")
    assert wrapper.status == "passed" and wrapper.carried_forward == ("causal_attention_module",)
    said = [
        line
        for line in wrapper.lines
        if f"is correct given your `CausalAttention`; the mistake is upstream, in "
        f"*{title}*: this step keeps its points (error carried forward)." in line
    ]
    assert len(said) == checks == len(wrapper.lines), wrapper.lines  # each check the module changes says so
    # The module's own question keeps its hint: it is where the mistake is.
    assert any(line.startswith("Likely mistake:") for line in question(card, "causal_attention_module").lines)


def test_a_second_mistake_in_the_wrapper_is_still_caught(scratch_cards):
    card = scratch_cards["seconds"]
    assert {"causal_attention_module", "multihead_wrapper"} <= lost(card)
    wrapper = question(card, "multihead_wrapper")
    assert not wrapper.carried_forward
    assert any("uses your `CausalAttention`, which is not right yet" in line for line in wrapper.lines), wrapper.lines


@pytest.fixture(scope="module")
def french_card(grader, course, tmp_path_factory):
    a = course.assignment("attention_french")
    unscaled = FRENCH["?1"].replace(" / K.shape[-1] ** 0.5", "")
    path = write(fill(a.skeleton, {**FRENCH, "?1": unscaled}), tmp_path_factory.mktemp("french") / "unscaled.ipynb")
    return grader.grade(a, path, course_variants=True)


def test_heads_computed_with_a_wrong_function_are_right_given_it(french_card, course):
    # The solution's heads, computed with the student's self_attention() (its recorded answers), are the
    # student's: the multi-head question keeps its points and names the function's question.
    assert lost(french_card) == {"self_attention_fn"}
    title = course.assignment("attention_french").question("self_attention_fn").title
    multihead = question(french_card, "multihead")
    assert multihead.carried_forward == ("self_attention_fn",)
    assert (
        f"`torch.stack(heads)` is correct given your `self_attention()`; the mistake is upstream, in *{title}*: "
        "this step keeps its points (error carried forward)." in multihead.lines
    ), multihead.lines
    assert not any("uses your" in line for line in question(french_card, "self_attention_fn").lines)


# --------------------------------------------------------------------------------------------
# A step built on the student's function that raised: right once the function works


RAISING = FRENCH["?1"].replace("Q @ K.T", "Q @ K")  # (7x2) @ (7x2): the function raises


@pytest.fixture(scope="module")
def raising_cards(grader, course, tmp_path_factory):
    a = course.assignment("attention_french")
    folder = tmp_path_factory.mktemp("raising")
    made = {
        "heads right": {**FRENCH, "?1": RAISING},
        "heads wrong too": {**FRENCH, "?1": RAISING, "multihead_output": "torch.cat(heads, dim=-1)"},
    }
    return {
        name: grader.grade(a, write(fill(a.skeleton, fills), folder / f"{name}.ipynb"), course_variants=True)
        for name, fills in made.items()
    }


def test_a_step_built_on_a_function_that_raised_is_paid_when_it_works_with_a_working_one(raising_cards, course):
    card = raising_cards["heads right"]
    assert lost(card) == {"self_attention_fn"}
    title = course.assignment("attention_french").question("self_attention_fn").title
    multihead = question(card, "multihead")
    assert multihead.status == "passed" and multihead.carried_forward == ("self_attention_fn",), multihead.lines
    assert (
        "`torch.stack(heads)` could not be computed: it uses your `self_attention()`, which is not right yet (an "
        f"error was raised); the mistake is upstream, in *{title}*. Run with a working `self_attention()`, your "
        "code for this step gives the right result: this step keeps its points (error carried forward)."
        in multihead.lines
    ), multihead.lines


def test_a_step_wrong_on_its_own_gets_nothing_from_a_working_function(raising_cards):
    # The heads are right once the function works (their check is carried); the output, which
    # leaves out W_O, is wrong on its own and earns nothing.
    multihead = question(raising_cards["heads wrong too"], "multihead")
    stack, output = (c for c in multihead.checks if c.target in ("torch.stack(heads)", "multihead_output"))
    assert stack.status == "passed" and stack.carried_from and output.status != "passed", multihead.lines
    assert multihead.score == stack.score < multihead.max_score
