"""The forking executor and the Jupyter (nbclient) executor give the same scorecards."""

from __future__ import annotations

import pytest

from grader import batch
from grader.grading import Grader
from grader.jupyter_executor import JupyterExecutor

from conftest import ROOT

EXAMPLES = sorted((ROOT / "examples/attention_numpy").glob("*.ipynb"))
RUN_FIELDS = ("time", "executor", "sandbox")  # how it ran, not what it found


def comparable(card) -> dict:
    data = card.to_dict()
    data["execution"] = {k: v for k, v in data["execution"].items() if k not in RUN_FIELDS}
    return data


@pytest.fixture(scope="module")
def jupyter_grader(course):
    executor = JupyterExecutor()
    yield Grader(course, executor)
    executor.close()


@pytest.fixture(scope="module")
def both(grader, jupyter_grader, numpy_assignment):
    """Every example graded by each executor, two at a time (kernels take a while to start)."""
    subs = [batch.Submission(student=p.stem, path=p, origin=str(p), sha256=batch.sha256_of(p)) for p in EXAMPLES]
    return {g.executor.name: dict(zip(EXAMPLES, batch.grade_all(g, numpy_assignment, subs, jobs=2).cards))
            for g in (grader, jupyter_grader)}


def test_examples_cover_every_kind_of_outcome():
    names = {p.stem for p in EXAMPLES}
    assert {"bob_correct", "carol_no_sqrt", "frank_raises", "grace_half_done", "henry_not_a_notebook",
            "alice_torch"} <= names


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_forking_and_jupyter_executors_give_the_same_scorecard(both, path):
    forking, jupyter = both["forking"][path], both["jupyter"][path]
    assert (forking.execution["executor"], jupyter.execution["executor"]) == ("forking", "jupyter")
    assert comparable(forking) == comparable(jupyter)


def test_jupyter_executor_runs_magics_and_display_in_a_real_kernel(jupyter_grader, numpy_assignment, tmp_path):
    from conftest import notebook_with

    from grader.execute import CaptureSpec, Job, JobCell

    job = Job(cells=(JobCell(1, "%matplotlib inline\nfrom IPython.display import display\ndisplay('hi')"),
                     JobCell(2, "import os\nkernel = 'ipykernel' in str(type(get_ipython()))\nx = 1 / 0")),
              captures=(CaptureSpec("kernel", "value", "kernel", None),), limits=numpy_assignment.limits)
    run = jupyter_grader.executor.run(job)
    assert run.status == "ok"
    assert [c.status for c in run.cells] == ["ok", "error"]
    assert (run.cells[1].ename, run.cells[1].evalue) == ("ZeroDivisionError", "division by zero")
    assert run.cells[1].traceback == ("cell 2, line 3: x = 1 / 0",)
    assert run.captures["kernel"].value.data is True
