"""Error carried forward through a student's function (issue 29): a descent loop that calls the
student's ``gradient()`` is judged against the solution's loop run with the student's function in
place of the solution's. The student's calls are recorded in the student's process and answered
from that record in the solution's (``grader.run.calls``), so no code crosses either way.
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import notebook_with, question

from grader.course import config
from grader.judge.grading import Grader

CONFIG = """\
course: {name: descent}
assignments:
  descent:
    solution: descent.ipynb
    given: [A, b]
    variants:
      count: 2
      seed: 7
      inputs:
        A: "rng.uniform(-1, 1, shape)"
        b: "rng.uniform(-1, 1, shape)"
    questions:
      - id: gradient
        title: Gradient of the MSE
        points: 2
        checks:
          - expr: "gradient(A, b, np.zeros(2))"
          - expr: "gradient(A, b, np.array([0.5, -1.0]))"
      - id: descent
        title: Gradient descent
        points: 2
        checks:
          - value: w_final
"""

DATA = "import numpy as np\nA = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])\nb = np.array([1.0, 2.0, 2.5])"

SOLUTION = [
    DATA,
    "def gradient(A, b, w):\n    return 2 / len(b) * A.T @ (A @ w - b)",
    "w = np.zeros(2)\nlr = 0.01\nfor step in range(100):\n    w = w - lr * gradient(A, b, w)\nw_final = w",
]


def student(factor: str = "2 / len(b)", lr: str = "0.01") -> list[str]:
    """Written freely: one cell, the loop updating in place, the data given as it is."""
    return [
        DATA
        + f"""

def gradient(A, b, w):
    residual = A @ w - b
    return {factor} * (A.T @ residual)

w = np.zeros(2)
for _ in range(100):
    w -= {lr} * gradient(A, b, w)
w_final = w
"""
    ]


def typed_w_final() -> str:
    import numpy as np

    A, b = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.array([1.0, 2.0, 2.5])
    w = np.zeros(2)
    for _ in range(100):
        w -= 0.01 * (1 / len(b) * (A.T @ (A @ w - b)))
    return f"np.array([{w[0]!r}, {w[1]!r}])"


@pytest.fixture(scope="module")
def cards(tmp_path_factory):
    root = tmp_path_factory.mktemp("descent")
    notebook_with(SOLUTION, root / "descent.ipynb")
    (root / "config.yaml").write_text(CONFIG)
    course = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    grader = Grader(course)
    a = course.assignment("descent")
    notebooks = {
        "right": student(),
        "no_factor_2": student(factor="1 / len(b)"),
        # ... and a second, independent mistake in the loop: the step size.
        "no_factor_2_and_lr": student(factor="1 / len(b)", lr="0.03"),
        # The value the student's own loop gives with that gradient, typed in.
        "typed": [student(factor="1 / len(b)")[0].split("w = np.zeros(2)")[0] + f"w_final = {typed_w_final()}"],
    }
    return {name: grader.grade(a, notebook_with(cells, root / f"{name}.ipynb")) for name, cells in notebooks.items()}


def test_a_loop_calling_a_right_function_scores_full_marks(cards):
    card = cards["right"]
    assert card.score == card.max_score, [q.lines for q in card.questions]


def test_a_loop_calling_a_wrong_function_keeps_its_points_and_names_the_function(cards):
    card = cards["no_factor_2"]
    assert question(card, "gradient").score == 0
    descent = question(card, "descent")
    assert descent.status == "passed" and descent.score == 2 and descent.carried_forward == ("gradient",)
    assert descent.lines == [
        "`w_final` is correct given your `gradient()`; the mistake is upstream, in *Gradient of "
        "the MSE*: this step keeps its points (error carried forward)."
    ]
    assert descent.variants == 2  # judged again on each variant, with the function's answers there


def test_a_value_typed_in_after_a_wrong_function_still_loses_its_points(cards):
    descent = question(cards["typed"], "descent")
    assert descent.score == 0 and not descent.carried_forward, descent.lines
    # The solution's loop asks the student's gradient() at points the notebook never called it at.
    assert any(line.startswith("`w_final`: ") and "differ" in line for line in descent.lines), descent.lines


def test_a_second_mistake_in_the_loop_is_still_caught(cards):
    card = cards["no_factor_2_and_lr"]
    descent = question(card, "descent")
    assert descent.score == 0 and not descent.carried_forward
    assert any(
        "uses your `gradient()`, which is not right yet (*Gradient of the MSE* does not pass)" in line
        for line in descent.lines
    ), descent.lines


# --------------------------------------------------------------------------------------------
# The record and its replay, as each side's process runs them


def test_a_record_keeps_the_arguments_as_they_were_and_a_recursive_function_recurses_as_deep():
    import numpy as np

    from grader.run import calls

    ns: dict = {}
    exec(
        "def fact(n):\n    return 1 if n <= 1 else n * fact(n - 1)\n"  # noqa: S102 - the test's own code
        "def step(w):\n    return w * 2",
        ns,
    )
    log: list = []
    ns["fact"] = calls.recorder(ns["fact"], log, ns, "fact")
    assert ns["fact"](900) > 0 and len(log) == 1  # 900 deep, as without the grader; only the outer call kept
    steps: list = []
    ns["step"] = calls.recorder(ns["step"], steps, ns, "step")
    w = np.ones(2)
    for _ in range(3):
        w -= 0.1 * ns["step"](w)  # changed in place after each call: the record keeps each call's w
    assert [e["args"][0].tolist() for e in steps] == [[1.0, 1.0], [0.8, 0.8], [0.64, 0.64]]
    differs: dict = {}
    replay = calls.replayer("step", steps, own=lambda w: w * 3, differs=differs)
    assert replay(np.array([0.8, 0.8])).tolist() == [1.6, 1.6]  # the student's answer
    assert differs == {"step": True}  # the solution's own would have said [2.4, 2.4]
    assert replay(np.array([5.0, 5.0])).tolist() == [15.0, 15.0]  # never called so: the solution's own answers
    with pytest.raises(LookupError):
        calls.replayer("step", steps)(np.array([5.0, 5.0]))


def test_recording_never_changes_what_the_student_s_code_does():
    import torch

    from grader.run import calls

    ns: dict = {"torch": torch}
    exec(
        "def first(it):\n    return next(it)\n"  # noqa: S102 - the test's own code
        "class Head(torch.nn.Module):\n"
        "    def __init__(self, n):\n        super(Head, self).__init__()\n        self.w = torch.nn.Linear(n, n)\n"
        "    def forward(self, x):\n        return super(Head, self).forward(x) if False else self.w(x)\n"
        "class Twice(Head):\n    def forward(self, x):\n        return 2 * super().forward(x)\n",
        ns,
    )
    ns["first"] = calls.recorder(ns["first"], log := [], ns, "first")
    assert ns["first"](x for x in [7]) == 7 and log == []  # a generator cannot be kept: the call goes on, unrecorded
    record: dict = {}
    ns["Head"] = calls.module_recorder(ns["Head"], record, ns, "Head")
    torch.manual_seed(0)
    head = ns["Head"](3)  # the old-style super(Head, self) still means the student's class
    out = head(torch.ones(1, 3))
    assert len(record["made"]) == 1 and len(record["calls"]) == 1 and torch.equal(record["calls"][0]["result"], out)
    replayed = calls.module_replayer("Head", record)
    torch.manual_seed(0)
    again = replayed(3)  # made from the same random state with the same arguments: the student's instance
    assert torch.equal(again(torch.ones(1, 3)), out)
    with pytest.raises(LookupError):
        replayed(3)  # another random state: not an instance the student's notebook made


def test_a_module_record_keeps_each_random_state_once_and_no_more_than_its_entries_need(monkeypatch):
    import torch

    from grader.run import calls

    ns: dict = {}
    exec(
        "import torch\nclass Head(torch.nn.Module):\n"  # noqa: S102 - the test's own code
        "    def __init__(self, n):\n        super().__init__()\n        self.w = torch.nn.Linear(n, n)\n"
        "    def forward(self, x):\n        return self.w(x)\n",
        ns,
    )
    record: dict = {}
    ns["Head"] = calls.module_recorder(ns["Head"], record, ns, "Head")
    x = torch.ones(1, 3)
    torch.manual_seed(0)
    first = ns["Head"](3)
    outs = [first(x), first(x)]  # no draw in a forward: the same state before and after both calls
    torch.manual_seed(0)
    again = ns["Head"](3)  # the same seed again: the same states as the first instance's
    assert [e["rng"] for e in record["made"]] == [0, 0] and [e["after"] for e in record["made"]] == [1, 1]
    assert [(e["rng"], e["after"]) for e in record["calls"]] == [(1, 1), (1, 1)] and len(record["states"]) == 2
    replayed = calls.module_replayer("Head", record)
    torch.manual_seed(0)
    assert torch.equal(replayed(3)(x), outs[0]) and torch.equal(again(x), outs[1])
    monkeypatch.setattr(calls, "MAX_CALLS", 3)
    for _ in range(5):  # each made from a new state; those past MAX_CALLS keep none
        ns["Head"](3)
    assert len(record["made"]) == 3 and len(record["states"]) == 3
