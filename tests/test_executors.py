"""The forking executor and the Jupyter (nbclient) executor give the same scorecards."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import ROOT, own_data_only, shared_variants

from grader import batch
from grader.files import sha256_file
from grader.judge.grading import Grader
from grader.run.jupyter_executor import JupyterExecutor

EXAMPLES = sorted((ROOT / "examples/attention_numpy").glob("*.ipynb"))
# Also graded on the course's variants: an answer that is right and one that is wrong on them.
VARIED = [p for p in EXAMPLES if p.stem in ("bob_correct", "carol_no_sqrt")]
RUN_FIELDS = ("time", "executor", "sandbox", "sandbox_not_enforced")  # how it ran, not what it found


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
    """Every example graded by each executor on its own data, and ``VARIED`` on the course's
    variants too, two notebooks at a time (kernels take a while to start). Each variant is one
    more kernel per notebook, and which notebook takes them changes nothing in how they run."""

    def submissions(paths):
        return [batch.Submission(student=p.stem, path=p, origin=str(p), sha256=sha256_file(p)) for p in paths]

    plans = {
        "own": (own_data_only(numpy_assignment), EXAMPLES),
        "variants": (shared_variants(numpy_assignment), VARIED),
    }
    for assignment, _ in plans.values():  # the solution's runs, once: the Jupyter grader reads them from the cache
        grader.references.get(assignment)
    # Both executors at once: the Jupyter side mostly waits on its kernels' starts.
    with ThreadPoolExecutor(4) as pool:
        graded = {
            (g.executor.name, plan): (paths, pool.submit(batch.grade_all, g, assignment, submissions(paths), jobs=2))
            for g in (grader, jupyter_grader)
            for plan, (assignment, paths) in plans.items()
        }
        return {key: dict(zip(paths, done.result().cards, strict=True)) for key, (paths, done) in graded.items()}


def test_examples_cover_every_kind_of_outcome():
    names = {p.stem for p in EXAMPLES}
    assert {
        "bob_correct",
        "carol_no_sqrt",
        "frank_raises",
        "grace_half_done",
        "henry_not_a_notebook",
        "alice_torch",
    } <= names


@pytest.mark.slow
@pytest.mark.parametrize(
    "plan, path",
    [("own", p) for p in EXAMPLES] + [("variants", p) for p in VARIED],
    ids=[p.stem for p in EXAMPLES] + [f"{p.stem}-on-variants" for p in VARIED],
)
def test_forking_and_jupyter_executors_give_the_same_scorecard(both, plan, path):
    forking, jupyter = both[("forking", plan)][path], both[("jupyter", plan)][path]
    assert (forking.execution.to_dict()["executor"], jupyter.execution.to_dict()["executor"]) == ("forking", "jupyter")
    assert comparable(forking) == comparable(jupyter)


def test_a_hanging_and_a_crashing_cell_end_the_same_way_in_both(grader, jupyter_grader, numpy_assignment):
    from grader.course.model import Limits
    from grader.run.job import CaptureSpec, Job, JobCell

    job = Job(
        cells=(
            JobCell(1, "%load_ext autoreload\nfrom IPython.display import display\ndisplay('hi')\na = 1"),
            JobCell(2, "kernel = 'ipykernel' in str(type(get_ipython()))\nx = 1 / 0"),
            JobCell(3, "import time\nwhile True:\n    time.sleep(1)"),  # hangs without holding a CPU
            JobCell(4, "import os\nos._exit(3)"),
            JobCell(5, "b = a + 1"),
        ),
        captures=(CaptureSpec("b", "value", "b", None), CaptureSpec("kernel", "value", "kernel", None)),
        # A cell limit that a loaded machine's cells 1, 2, 4 and 5 stay well within (a kernel's
        # start is not a cell's time), so only cell 3 ever runs past it.
        limits=Limits(cell_timeout=3, notebook_timeout=60),
        preload=("numpy",),
    )
    # Both executors at once: each attempt mostly waits (the cell limit, a kernel's start), and
    # the executors share nothing.
    with ThreadPoolExecutor(2) as pool:
        started = {g.executor.name: pool.submit(g.executor.run, job) for g in (grader, jupyter_grader)}
        runs = {name: future.result() for name, future in started.items()}
    for name, run in runs.items():
        assert (run.status, run.attempts) == ("timeout", 3), name
        assert run.reason == "cell 3 ran past the 3 s limit and was stopped", name
        assert [c.status for c in run.cells] == ["ok", "error", "timeout", "crashed", "ok"], name
        assert (run.cells[1].ename, run.cells[1].evalue) == ("ZeroDivisionError", "division by zero"), name
        assert run.cells[1].traceback == ("cell 2, line 2: x = 1 / 0",), name
        assert run.captures["b"].value.data == 2, name
    assert runs["jupyter"].captures["kernel"].value.data is True  # a real Jupyter kernel ran the cells
    assert runs["forking"].captures["kernel"].value.data is False


def test_executors_declare_what_they_offer_beyond_runs():
    """Callers read ``capabilities`` (cli's warm-up, the Dask worker plugin) instead of probing."""
    from grader.run.execute import Capabilities
    from grader.run.forking import ForkingExecutor
    from grader.run.subprocess_executor import SubprocessExecutor

    assert ForkingExecutor.capabilities == Capabilities(starts_ahead=True, lives_with_process=True)
    assert SubprocessExecutor.capabilities == JupyterExecutor.capabilities == Capabilities()
