"""Records the scorecards a test's subprocess makes (``grader grade`` run by a test), for
``benchmarks/cards_plugin.py``, which puts this folder on the ``PYTHONPATH`` of the tests it runs.

Python imports ``sitecustomize`` at start-up. With ``CARDS_OUT`` set, this one waits, at the cost
of one entry in ``sys.meta_path``, until the process imports ``grader.judge.grading``, then wraps
``Grader.grade`` as ``benchmarks/cards_plugin.py`` does in the pytest process. Nothing else is imported before that, so
a process that does not grade (the forking server, a student's process) starts as it would.
"""

from __future__ import annotations

import os
import sys
from typing import Any

WATCHED = "grader.judge.grading"


class _Watch:
    """A meta path finder that finds nothing itself: it lets the others load the grading module,
    then has it wrapped."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != WATCHED:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module: Any) -> None:
            original(module)
            try:
                sys.path.insert(1, os.environ["CARDS_BENCHMARKS"])
                import cards

                cards.record_from_environment()
            except Exception as exc:  # noqa: BLE001 - recording must never change what a test sees
                print(f"cards_plugin: not recording in this process: {type(exc).__name__}: {exc}", file=sys.stderr)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if os.environ.get("CARDS_OUT") and os.environ.get("CARDS_BENCHMARKS"):
    sys.meta_path.insert(0, _Watch())
