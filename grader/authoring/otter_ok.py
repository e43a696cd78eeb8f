"""Otter's OK-format test files (``tests/q1.py`` beside the notebook), as ``test`` checks.

A file holds ``test = {"name": ..., "points": ..., "suites": [{"cases": [...], "setup": ...,
"teardown": ..., "type": "doctest"}]}``; it is read with ``ast.literal_eval``, never run. Each case
is a doctest (``>>> square(1)`` then ``1``) with ``hidden``, ``points``, ``success_message`` and
``failure_message``. A case becomes one ``test`` check: its statements, and for each example with
an expected output the assert ``otter_import.expected_assert`` makes of it (with the case's
``failure_message`` as the assert's message). The file's points are shared among its cases as
otter shares them (a case's own ``points`` first), each case earning its share.
"""

from __future__ import annotations

import ast
import doctest
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.authoring.importing import Imported, clean_id


def _read(path: Path) -> dict[str, Any] | None:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "test" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


Expected = Callable[[str, str], tuple[str, str | None]]  # ``otter_import.expected_assert``


def case_source(code: str, failure: str | None, expected_assert: Expected) -> tuple[str, str | None]:
    """(the test's source, a problem) for one doctest case."""
    lines: list[str] = []
    for ex in doctest.DocTestParser().get_examples(code):
        source, want = ex.source.rstrip("\n"), ex.want.strip()
        if not want:
            lines.append(source)
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError as exc:
            return "", f"its code is not Python ({exc.msg})"
        if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
            return "", "it compares printed output, which a test here does not see"
        check, _ = expected_assert(f"({source})" if "\n" in source else source, want)
        if failure and check.startswith("np.testing.assert_allclose("):  # a message needs an assert
            check = "assert np.allclose(" + check.removeprefix("np.testing.assert_allclose(")
        if failure and check.startswith("assert "):
            check += f", {failure!r}"
        lines.append(check)
    return "\n".join(lines), None


def questions(folder: Path, item: Imported, shares: Any, expected: Expected) -> list[dict[str, Any]]:
    """The questions of the OK-format files in ``folder`` (``shares``: otter's rule for points;
    ``expected``: the assert an expression and its expected output make)."""
    out = []
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        test = _read(path)
        if test is None:
            item.notes.append(f"tests/{path.name}: not an OK-format test file (no literal `test = {{...}}`); skipped")
            continue
        qid = clean_id(str(test.get("name") or path.stem), path.stem)
        checks: list[dict[str, Any]] = []
        configs: list[dict[str, Any]] = []
        for suite in test.get("suites") or []:
            setup, teardown = str(suite.get("setup") or ""), str(suite.get("teardown") or "")
            for case in suite.get("cases") or []:
                source, problem = case_source(f"{setup}\n{case.get('code', '')}\n{teardown}", case.get("failure_message"),
                                              expected)
                configs.append({"points": case["points"]} if case.get("points") is not None else {})
                if problem:
                    item.notes.append(f"tests/{path.name}: a case of question {qid!r} not converted: {problem}")
                    checks.append({})
                    continue
                checks.append({"test": source, **({"hidden": True} if case.get("hidden") else {})})
        if not configs:
            continue
        points = shares(test.get("points"), configs)
        kept = [dict(c, points=round(p, 10)) for c, p in zip(checks, points, strict=True) if c]
        lost = sum(p for c, p in zip(checks, points, strict=True) if not c)
        if kept:
            out.append({"id": qid, "points": round(sum(points) - lost, 8), "checks": kept})
        if lost:
            out.append({"id": f"{qid}_by_hand", "title": f"{qid}: tests to grade by hand", "points": round(lost, 10),
                        "manual": True})
    return out
