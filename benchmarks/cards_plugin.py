"""A pytest plugin that records every scorecard the tests make, without changing the tests.

    PYTHONPATH=benchmarks .venv/bin/python -m pytest -p cards_plugin --cards-out=suite.jsonl -n 2 tests/...

(``benchmarks/cards.py save-suite`` runs that.) It wraps ``Grader.grade``, the one entry point of
grading, in each pytest process (pytest-xdist's workers included) and appends one JSON line per
call to ``--cards-out``: the test running, the assignment, the submission's name, a hash of the
notebook without its cell ids (``cards.notebook_hash``) and the scorecard as ``cards.card_data``
compares it. A call that raises records nothing. With ``--cards-subprocesses``, the subprocesses
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
    parser.addoption("--cards-subprocesses", action="store_true",
                     help="record in the tests' subprocesses too (``grader grade`` run by a test)")


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("--cards-out")
    if not out:
        return
    out = str(Path(out).resolve())
    cards.record_to(Path(out), Path(str(config.rootpath)))  # in pytest-xdist's controller too, which grades nothing
    if config.getoption("--cards-subprocesses"):
        # The subprocesses the tests start (``grader grade ...``) record through ``cards_site``.
        here = Path(__file__).resolve().parent
        os.environ.update({"CARDS_OUT": out, "CARDS_ROOT": str(config.rootpath), "CARDS_BENCHMARKS": str(here)})
        path = os.environ.get("PYTHONPATH", "")
        if str(here / "cards_site") not in path.split(os.pathsep):
            os.environ["PYTHONPATH"] = os.pathsep.join([str(here / "cards_site"), *([path] if path else [])])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    cards.current["test"] = item.nodeid
    os.environ["CARDS_TEST"] = item.nodeid  # for its subprocesses
    yield
    cards.current["test"] = ""
    os.environ.pop("CARDS_TEST", None)
