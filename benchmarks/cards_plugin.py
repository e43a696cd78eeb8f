"""A pytest plugin that records every scorecard the tests make, without changing the tests.

    PYTHONPATH=benchmarks .venv/bin/python -m pytest -p cards_plugin --cards-out=suite.jsonl -n 2 tests/...

(``benchmarks/cards.py save-suite`` runs that.) It wraps ``Grader.grade``, the one entry point of
grading, in each pytest process (pytest-xdist's workers included) and appends one JSON line per
call to ``--cards-out``: the test running, the assignment, the submission's name, a hash of the
notebook without its cell ids (``cards.notebook_hash``) and the scorecard as ``cards.card_data``
compares it. A call that raises records nothing. Cell ids that nbformat makes in the tests are
numbered per test rather than random (``_fixed_cell_ids``). With ``--cards-subprocesses``, the subprocesses
the tests start record too (``cards_site/sitecustomize.py``, through ``PYTHONPATH``): ``grader
grade`` run by a test, for one; a process started with an environment of its own is not seen.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import cards
import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cards-out", default=None, help="append a JSON line per Grader.grade call to this file")
    parser.addoption(
        "--cards-subprocesses",
        action="store_true",
        help="record in the tests' subprocesses too (``grader grade`` run by a test)",
    )


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("--cards-out")
    if not out:
        return
    out = str(Path(out).resolve())
    _fixed_cell_ids()
    cards.record_to(Path(out), Path(str(config.rootpath)))  # in pytest-xdist's controller too, which grades nothing
    if config.getoption("--cards-subprocesses"):
        # The subprocesses the tests start (``grader grade ...``) record through ``cards_site``.
        here = Path(__file__).resolve().parent
        os.environ.update({"CARDS_OUT": out, "CARDS_ROOT": str(config.rootpath), "CARDS_BENCHMARKS": str(here)})
        path = os.environ.get("PYTHONPATH", "")
        if str(here / "cards_site") not in path.split(os.pathsep):
            os.environ["PYTHONPATH"] = os.pathsep.join([str(here / "cards_site"), *([path] if path else [])])


_ids = {"next": 0}


def _cell_id() -> str:
    _ids["next"] += 1
    return f"cards-{_ids['next']:06d}"


def _fixed_cell_ids() -> None:
    """Cell ids numbered in each test instead of random: a notebook a test writes is then the same
    file in every run. Per-submission variants are drawn from a hash of the file, so with random
    ids a notebook graded on variants of its own meets other inputs each run, and a card that
    names them (``variant_inputs``, say) changes from run to run."""
    import nbformat.v4.convert
    import nbformat.v4.nbbase
    import nbformat.validator

    nbformat.v4.nbbase.random_cell_id = _cell_id
    nbformat.v4.convert.random_cell_id = _cell_id
    nbformat.validator.generate_corpus_id = _cell_id


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _ids["next"] = 0
    cards.current["test"] = item.nodeid
    os.environ["CARDS_TEST"] = item.nodeid  # for its subprocesses
    yield
    cards.current["test"] = ""
    os.environ.pop("CARDS_TEST", None)
