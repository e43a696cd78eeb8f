"""Otter's test files (``tests/q1.py`` beside the notebook), as ``test`` checks: OK-format files
here, exception-based ones through ``grader.authoring.otter.exception``.

A file holds ``test = {"name": ..., "points": ..., "suites": [{"cases": [...], "setup": ...,
"teardown": ..., "type": "doctest"}]}``; it is read with ``ast.literal_eval``, never run. Each case
is a doctest (``>>> square(1)`` then ``1``) with ``hidden``, ``points``, ``success_message`` and
``failure_message`` (a case is hidden unless it says otherwise, as otter reads it). A case becomes
one ``test`` check: its statements, and for each example with an expected output the assert
``importer.expected_assert`` makes of it (of an example that prints, an assert that what it printed
is that output as doctest compares them: ``doctest_match(printed_text(), want)``); its messages become the check's ``success_message``
and ``failure_message``. The file's points are shared among its cases as otter shares them (a
case's own ``points`` first), each case earning its share unless the file is ``all_or_nothing``.
"""

from __future__ import annotations

import ast
import doctest
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.authoring.importing import Imported, clean_id
from grader.authoring.otter import exception as otter_exception


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


Expected = Callable[[str, str], tuple[str, str | None]]  # ``importer.expected_assert``


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
        if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr) or _prints(tree):
            # it prints: what it printed is compared with the expected output as doctest compares them
            lines += [source, f"assert doctest_match(printed_text(), {ex.want!r})"]
            continue
        check, _ = expected_assert(f"({source})" if "\n" in source else source, want)
        if failure and check.startswith("np.testing.assert_allclose("):  # a message needs an assert
            check = "assert np.allclose(" + check.removeprefix("np.testing.assert_allclose(")
        if failure and check.startswith("assert "):
            check += f", {failure!r}"
        lines.append(check)
    return "\n".join(lines), None


def _prints(tree: ast.Module) -> bool:
    """An example that is a call of ``print``: its output is what it printed, not a value."""
    (stmt,) = tree.body
    value = stmt.value if isinstance(stmt, ast.Expr) else None
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "print"


def doctest_want(output: str) -> str:
    """The expected output of a doctest example whose stored output is ``output``, as doctest reads
    it from otter's test file: up to the first blank line, tabs expanded, ending in a newline."""
    examples = doctest.DocTestParser().get_examples(">>> None\n" + output)
    return examples[0].want if examples else ""


def question(
    qid: str, points: Any, all_or_nothing: bool, cases: list[tuple[dict[str, Any], dict[str, Any]]], shares: Any
) -> list[dict[str, Any]]:
    """A question from its cases ((check, its config) each; an empty check: not converted): each
    check with its share of the points as otter resolves them, the unconverted ones left for a person."""
    configs = [c for _, c in cases]
    if not configs:
        return []
    each = shares(points, configs)
    out = []
    kept = [
        dict(c, points=round(p, 10)) if not all_or_nothing else dict(c)
        for (c, _), p in zip(cases, each, strict=True)
        if c
    ]
    lost = sum(p for (c, _), p in zip(cases, each, strict=True) if not c)
    if kept:
        out.append({"id": qid, "points": question_points(sum(each) - lost, kept), "checks": kept})
    if lost:
        out.append(
            {
                "id": f"{qid}_by_hand",
                "title": f"{qid}: tests to grade by hand",
                "points": round(lost, 10),
                "manual": True,
            }
        )
    return out


def messages(config: dict[str, Any]) -> dict[str, Any]:
    """A case's ``hidden`` and its author's messages, as a ``test`` check's keys."""
    out: dict[str, Any] = {"hidden": True} if config.get("hidden") else {}
    for key in ("success_message", "failure_message"):
        if config.get(key):
            out[key] = str(config[key])
    return out


def questions(folder: Path, item: Imported, shares: Any, expected: Expected) -> list[dict[str, Any]]:
    """The questions of the test files in ``folder``, OK-format or exception-based (``shares``:
    otter's rule for points; ``expected``: the assert an expression and its expected output make)."""
    out = []
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        text = path.read_text(encoding="utf-8", errors="replace")
        exc = otter_exception.read(text)
        if exc is not None:
            qid = clean_id(str(exc.name or path.stem), path.stem)
            item.notes.extend(f"tests/{path.name}: {p}" for p in exc.problems)
            cases = [({"test": src, **messages(c)} if src else {}, c) for src, c in exc.cases]
            out.extend(checked_at(question(qid, exc.points, exc.all_or_nothing, cases, shares), path.stem))
            continue
        test = _read(path)
        if test is None:
            item.notes.append(
                f"tests/{path.name}: not an otter test file (no literal `test = {{...}}`, no "
                "`@test_case` function); skipped"
            )
            continue
        qid = clean_id(str(test.get("name") or path.stem), path.stem)
        cases = []
        for suite in test.get("suites") or []:
            setup, teardown = str(suite.get("setup") or ""), str(suite.get("teardown") or "")
            for case in suite.get("cases") or []:
                source, problem = case_source(f"{setup}\n{case.get('code', '')}\n{teardown}", None, expected)
                # An OK-format case is hidden unless it says otherwise (otter's ``OKTestFile``).
                config = {
                    "points": case.get("points"),
                    "hidden": case.get("hidden", True),
                    "success_message": case.get("success_message"),
                    "failure_message": case.get("failure_message"),
                }
                if problem:
                    item.notes.append(f"tests/{path.name}: a case of question {qid!r} not converted: {problem}")
                    cases.append(({}, config))
                    continue
                cases.append(({"test": source, **messages(config)}, config))
        out.extend(
            checked_at(question(qid, test.get("points"), bool(test.get("all_or_nothing")), cases, shares), path.stem)
        )
    return out


def checked_at(questions: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """Each check taken where the student's notebook calls ``grader.check(NAME)``, the last such
    call (otter runs a question's tests at each call in grading mode, the last result counting, and
    on the final environment only those never called): ``after_line``."""
    for q in questions:
        for check in q.get("checks", []):
            check["after_line"] = check_call(name)
    return questions


def check_call(name: str) -> str:
    """The line otter writes in a student's notebook to check question ``name``."""
    return f"grader.check({json.dumps(name)})"


def question_points(total: float, checks: list[dict[str, Any]]) -> float:
    """A question's points as a person writes them (1, not 0.9999999999 from three thirds), unless
    its checks' rounded points then add up to something else (two thirds of a point): their sum."""
    points = round(total, 8)
    given = [float(c["points"]) for c in checks if "points" in c]
    if given and len(given) == len(checks) and abs(sum(given) - points) > 1e-9:
        return round(sum(given), 10)
    return points


def shares(points: Any, configs: list[dict[str, Any]]) -> list[float]:
    """Each test's points, as otter resolves them (``TestFile.resolve_test_file_points``): a
    question's ``points`` (a number, ``{each: p}``, or one value per test) less what tests give
    themselves, shared by the rest; with no total, 1 shared when no test gives any, else 0 each."""
    n = len(configs)
    own: list[Any] = [c.get("points") for c in configs]
    if isinstance(points, dict):
        points = float(points.get("each", 1)) * n
    if isinstance(points, list):
        if len(points) != n:
            raise ValueError(f"'points' lists {len(points)} values for {n} tests")
        own, points = list(points), None
    given = sum(float(p) for p in own if p is not None)
    rest = sum(1 for p in own if p is None)
    if points is not None:
        if given > float(points):
            raise ValueError(f"its tests give {given:g} points, more than its {float(points):g}")
        each = (float(points) - given) / rest if rest else 0.0
    elif given == 0:
        each = 1.0 / rest if rest else 0.0
    else:
        each = 0.0
    return [float(p) if p is not None else each for p in own]
