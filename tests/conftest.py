"""Shared fixtures: the real course file, a grader with a private reference cache, and a way to
hand in a submission built from the real skeleton."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
import review_course

from grader.course import config
from grader.judge.grading import Grader
from grader.testing import fill, write

ROOT = Path(__file__).resolve().parent.parent

pytest_plugins = ["pytester"]

# Arguments for every pytest run a test starts inside itself (pytester): those runs grade in the
# plugin's order, and their tests assert it (which item -x stops at, the JUnit file's order).
# pytest-randomly loads itself in every run it is installed in, inner ones too (pytester drops
# PYTEST_ADDOPTS), and would shuffle them with the outer run's seed; it is kept out of them. A name
# that is not installed is accepted, so the runs are the same without it.
IN_ORDER = ("-p", "no:randomly")

# Each submission's variants are drawn from a seed of its content and the course secret: a fixed
# secret makes them the same in every test session (and in the CLI runs the tests start), so a
# test's notebook is checked on the same inputs each time. Tests of the secret itself unset it.
os.environ.setdefault("GRADER_VARIANT_SECRET", "the test suite's variant secret, fixed for reproducible runs")


@pytest.fixture(scope="session")
def configured(tmp_path_factory) -> config.Course:
    """The course as config.yaml has it: each submission checked on variants of its own."""
    loaded = config.load(ROOT / "config.yaml")
    return dataclasses.replace(loaded, cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def course(configured) -> config.Course:
    """The course with the course's variants for every submission (``variants.per_submission: false``).
    Most tests are about something else than whose variants a notebook meets, and each notebook's
    own cost two more runs of the solution; the tests of variants per submission, the Gradescope
    and cluster paths and everything through the command line use ``configured`` or config.yaml."""
    return dataclasses.replace(
        configured, assignments={name: shared_variants(a) for name, a in configured.assignments.items()}
    )


@pytest.fixture(scope="session")
def grader(course) -> Grader:
    return Grader(course)


@pytest.fixture(scope="session")
def numpy_assignment(course) -> config.Assignment:
    return course.assignment("attention_numpy")


@pytest.fixture(scope="session")
def numpy_with_torch(numpy_assignment) -> config.Assignment:
    """attention_numpy with torch on its ``preload:`` list, as a course whose students write torch
    would have it: for the tests of answers in torch, whose every run (the notebook's data, each
    variant) would otherwise import torch afresh. The student still has to import it (the forking
    server's modules are not in the notebook's namespace), and the reference values are the same."""
    return dataclasses.replace(numpy_assignment, preload=(*numpy_assignment.preload, "torch"))


@pytest.fixture(scope="session")
def review_class(tmp_path_factory) -> Path:
    """The class the review page's tests share (``review_course.graded_class``), graded once per
    worker through ``grader grade``. Never written to: each module takes a copy of its own
    (``test_review.graded``), so no test reads what a test of another module wrote."""
    return review_course.graded_class(tmp_path_factory.mktemp("review-class"))


@pytest.fixture(scope="session")
def chromium() -> Iterator[review_course.Chromium]:
    """One headless Chromium per worker, started at the first page that needs it; each page leaves
    it on a blank tab with every cookie and its origin's storage cleared (``Chromium.reset``)."""
    browser = review_course.Chromium()
    try:
        yield browser
    finally:
        browser.quit()


NUMPY_CORRECT = {
    "Q": "X @ W_q.T",
    "K": "X @ W_k.T",
    "V": "X @ W_v.T",
    "scores": "Q @ K.T",
    "scaled_scores": "scores / np.sqrt(d_k)",
    "?1": "e_x = np.exp(x - np.max(x))\nreturn e_x / np.sum(e_x, axis=-1, keepdims=True)",
    "attention_weights": "np.apply_along_axis(softmax, axis=1, arr=scaled_scores)",
    "output": "attention_weights @ V",
}


@pytest.fixture
def submit(tmp_path, grader, course):
    """Grade a submission built from an assignment's skeleton: submit(answers, name=..., ...)."""
    counter = [0]

    def _submit(
        answers: dict[str, str],
        *,
        assignment: str | config.Assignment = "attention_numpy",
        edit=None,
        append=None,
        name: str | None = None,
    ):
        a = course.assignment(assignment) if isinstance(assignment, str) else assignment
        counter[0] += 1
        nb = fill(a.skeleton, answers, edit=edit, append=append)
        path = write(nb, tmp_path / f"{name or f'sub{counter[0]}'}.ipynb")
        return grader.grade(a, path)

    return _submit


# The modules that take longest, longest first (wall time of each in a serial run, 2026-11-26). Under
# `-n 2` each module goes to one worker whole (``--dist loadfile`` in pyproject.toml: its module
# fixtures, such as the Jupyter runs of test_executors and test_lean_runner, are set up once), in
# this order, so the long ones start at once on both workers and the short ones fill in after them
# instead of a long one starting last.
LONGEST_FIRST = (
    "test_cluster",
    "test_render",
    "test_sandbox",
    "test_plugin",
    "test_variants",
    "test_lean_runner",
    "test_hostile_inputs",
    "test_settings",
    "test_batch",
    "test_import",
    "test_executors",
    "test_assignments",
    "test_forkserver",
    "test_review",
    "test_review_hub",
    "test_carry_forward",
    "test_nbgrader_semantics",
    "test_sessions",
    "test_selfcheck",
    "test_rewrites",
    "test_solution_numbers",
    "test_consumers",
    "test_classroom50",
    "test_setup",
    "test_carry_calls",
    "test_worker_speed",
    "test_grading",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("random_order_enabled", False) or (
        config.pluginmanager.hasplugin("randomly") and config.getoption("randomly_reorganize", False)
    ):
        return  # a shuffled order was asked for (pytest-random-order, pytest-randomly): the suite passes in any
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: each module keeps its order


@pytest.fixture(autouse=True, scope="module")
def _collected_where_left() -> Iterator[None]:
    """What a module's tests left unreachable is finalised as the module ends, so a leak's
    ResourceWarning (pyproject.toml shows them) is reported at the module that made it, not in the
    middle of whichever test a later collection falls in."""
    yield
    gc.collect()


def shared_variants(assignment: config.Assignment) -> config.Assignment:
    """The assignment with the course's variants for every submission (``per_submission: false``):
    for tests about something else, it spares the solution's runs on each notebook's own variants."""
    return dataclasses.replace(assignment, variants=dataclasses.replace(assignment.variants, per_submission=False))


def own_data_only(assignment: config.Assignment) -> config.Assignment:
    """The assignment graded on each notebook's own data, without variants: for tests of how cells
    run, where what the variants add is tested elsewhere and each variant is one more run."""
    return dataclasses.replace(
        assignment,
        variants=dataclasses.replace(assignment.variants, count=0),
        config_digest=assignment.config_digest + "-own-data-only",
    )


def notebook_with(cells: list[str], path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    nbformat.write(nb, str(path))
    return path


def question(card, qid: str):
    return next(q for q in card.questions if q.id == qid)


@contextlib.contextmanager
def torch_cpu_index(folder: Path) -> Iterator[str]:
    """A local stand-in for PyTorch's CPU index, served from ``folder`` on loopback while the block
    runs: its address (``.../whl/cpu``), which answers for torch as the real index does."""
    (folder / "whl/cpu/torch").mkdir(parents=True)
    (folder / "whl/cpu/torch/index.html").write_text("<a href='torch-2.13.0+cpu-cp311-none-any.whl'>torch</a>")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
    finally:
        server.shutdown()
        server.server_close()
