"""A scorecard is built once and never changed: a person's grade or any later verdict makes a new
card. Frozen dataclasses refuse an assignment at run time; this file also reads the grader's source
for code that would try (an assignment to a card's field, ``setattr`` or ``object.__setattr__`` on
one), so such code fails here before it fails a grading run."""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT

from grader.judge.scorecard import CheckResult, Execution, Feedback, QuestionResult, Scorecard, with_questions
from grader.vocab import CheckStatus, FeedbackKind, QuestionStatus

# The card and the records it is made of.
CARD_TYPES = {"Scorecard", "QuestionResult", "CheckResult", "Execution", "CellError", "Feedback"}
MUTATING = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "setdefault"}


def _mentions_card(node: ast.expr | None) -> bool:
    return node is not None and any(name in ast.unparse(node) for name in CARD_TYPES)


def _root(node: ast.expr) -> ast.expr:
    """``card`` of ``card.execution.time`` or ``card.questions[0]``."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node


def card_makers(trees: list[ast.Module]) -> set[str]:
    """The functions whose return annotation names a card type, and the card types themselves."""
    found = set(CARD_TYPES) | {"replace"}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _mentions_card(node.returns):
                found.add(node.name)
    return found


def _called(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return ""


class _Scan(ast.NodeVisitor):
    def __init__(self, path: str, makers: set[str]):
        self.path, self.makers = path, makers
        self.found: list[str] = []
        self.cards: list[set[str]] = [set()]
        self.classes: list[str] = []
        self.functions: list[str] = []

    def _is_card(self, node: ast.expr) -> bool:
        root = _root(node)
        return isinstance(root, ast.Name) and root.id in self.cards[-1]

    def _flag(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{self.path}:{getattr(node, 'lineno', 0)}: {what}")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        names = set(self.cards[-1])  # a closure sees the cards of the function around it
        args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        names |= {a.arg for a in args if _mentions_card(a.annotation)}
        if self.classes and self.classes[-1] in CARD_TYPES and args:
            names.add(args[0].arg)  # self of a card's own method
        self.cards.append(names)
        self.functions.append(node.name)
        self.generic_visit(node)
        self.functions.pop()
        self.cards.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _bind(self, target: ast.expr, value: ast.expr | None, annotation: ast.expr | None = None) -> None:
        """A name bound to a card: made by a card's maker, annotated so, or taken from a card."""
        if not isinstance(target, ast.Name):
            return
        if (
            _mentions_card(annotation)
            or (value is not None and _called(value) in self.makers)
            or (value is not None and self._is_card(value))
        ):
            self.cards[-1].add(target.id)

    def _loop(self, target: ast.expr, over: ast.expr) -> None:
        text = ast.unparse(over)
        if self._is_card(over) or ".questions" in text or ".checks" in text:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    self.cards[-1].add(name.id)

    def _assigned(self, target: ast.expr, node: ast.AST) -> None:
        # ``card.x = ...`` and ``card.questions[0] = ...``; not ``cards[key] = card``, a container's item
        if isinstance(target, ast.Subscript) and not isinstance(target.value, ast.Attribute):
            return
        if isinstance(target, ast.Attribute | ast.Subscript) and self._is_card(target):
            self._flag(node, f"assigns to a card: {ast.unparse(target)}")
        elif isinstance(target, ast.Tuple | ast.List):
            for t in target.elts:
                self._assigned(t, node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._assigned(t, node)
            self._bind(t, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._assigned(node.target, node)
        self._bind(node.target, node.value, node.annotation)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._assigned(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for t in node.targets:
            if isinstance(t, ast.Attribute | ast.Subscript) and self._is_card(t):
                self._flag(node, f"deletes from a card: {ast.unparse(t)}")
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self._loop(node.target, node.iter)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._loop(node.target, node.iter)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        f = node.func
        name = ast.unparse(f)
        if name in ("setattr", "object.__setattr__", "object.__delattr__", "delattr") and node.args:
            first = node.args[0]
            building = (
                self.functions[-1:] == ["__post_init__"] and self.classes[-1:] != [] and self.classes[-1] in CARD_TYPES
            )
            if self._is_card(first) and not building:
                self._flag(node, f"{name} on a card: {ast.unparse(node)}")
        if isinstance(f, ast.Attribute) and f.attr in MUTATING and isinstance(f.value, ast.Attribute):
            if self._is_card(f.value):
                self._flag(node, f"changes a card's field in place: {ast.unparse(node)}")
        self.generic_visit(node)


def scan(sources: dict[str, str]) -> list[str]:
    trees = {path: ast.parse(text) for path, text in sources.items()}
    makers = card_makers(list(trees.values()))
    found: list[str] = []
    for path, tree in trees.items():
        s = _Scan(path, makers)
        s.visit(tree)
        found += s.found
    return found


def test_no_code_of_the_grader_changes_a_card_after_it_is_built():
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "grader").rglob("*.py"))}
    assert scan(sources) == []


def test_the_scan_finds_the_ways_a_card_was_changed_before():
    # What grading, the review store and the batch did before cards were frozen, and more.
    old = textwrap.dedent(
        """
        def grade(self, path) -> Scorecard:
            card = Scorecard(assignment="a", submission="s", sha256="", status="graded", score=0, max_score=1)
            card.sha256 = sha256_file(path)
            card.status, card.reason = "crashed", "it crashed"
            card.execution = replace(card.execution, notes=())
            return card

        def apply(name, card: Scorecard) -> Scorecard:
            out = Scorecard(**{**card.__dict__})
            out.score = sum(q.score for q in out.questions)
            for q in out.questions:
                q.score += 1
            object.__setattr__(out, "score", 2)
            setattr(card, "student", "x")
            card.execution.time = 0
            card.questions.append(None)
            return out

        def crashed() -> Scorecard:
            card = crashed_card()
            card.questions[0] = None
            del card.reason

        def crashed_card() -> Scorecard: ...
        """
    )
    found = scan({"old.py": old})
    lines = sorted(int(f.split(":")[1]) for f in found)
    assert lines == [4, 5, 5, 6, 11, 13, 14, 15, 16, 17, 22, 23], found


def test_a_card_refuses_a_change_at_run_time():
    q = QuestionResult("q", "Q", 1.0, 1.0, QuestionStatus.PASSED, (Feedback(FeedbackKind.CORRECT, "Correct."),))
    card = Scorecard("a", "s.ipynb", "", "graded", 1.0, 1.0, questions=[q])  # type: ignore[arg-type]
    assert card.questions == (q,)  # kept as a tuple, whatever it was built from
    for record, field in (
        (card, "score"),
        (card, "questions"),
        (q, "score"),
        (CheckResult("c", "x", CheckStatus.PASSED, 1.0, 1.0), "hint"),
        (Execution("forking"), "time"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, field, None)
    graded = with_questions(card, [dataclasses.replace(q, score=0.5, status=QuestionStatus.PARTIAL)])
    assert (graded.score, card.score, graded.questions[0].status) == (0.5, 1.0, "partial")


def test_the_scan_reads_every_module_of_the_grader():
    files = list((ROOT / "grader").rglob("*.py"))
    assert len(files) > 100 and Path(ROOT / "grader/judge/grading.py") in files
