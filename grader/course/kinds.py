"""Check kinds: what a check in config.yaml looks at, and how the student process obtains it.

A check is written with exactly one kind key::

    - value: S_scaled            # a variable of the notebook
    - expr: softmax(X + 1)       # an expression evaluated in the notebook's namespace (the
                                 # student's function run on inputs the notebook never had)
    - test: |                    # Python with asserts on the notebook's names
        assert attention_weights.shape == (3, 3)

Each kind is one class here, registered in ``KINDS`` under its key: the loader validates the
target with it, the grader asks it which captures to plan and which notebook names the target
reads (for blanks, dependencies and error causes), and the feedback takes its words from it.
A ``value`` or ``expr`` check is judged by comparing with the reference, then the properties
(``grader.judge.checks``); a ``test`` check by its asserts (``grader.judge.testcheck``). Only a
kind that looks a variable up (``variable``) is a step of the data flow, whose student value error
carried forward puts into the solution's run (``grader.judge.carry``). Adding a kind: a class here,
registered in ``KINDS``, its verdict in ``grader.judge.checks`` if it is not the comparison, and
its test.
"""

from __future__ import annotations

import builtins
from typing import ClassVar

from grader.course import testcode
from grader.notebook import identifiers
from grader.vocab import CaptureKind

BUILTINS = frozenset(dir(builtins))


class CheckKind:
    """The behaviour shared by every check of one kind; instances hold no state."""

    key: ClassVar[str]  # the key in config.yaml, and the kind's name in public_checks.json (which leaves tests out)
    what: ClassVar[str]  # what the key names, for config errors ("a variable")
    capture: ClassVar[CaptureKind]  # how the student process obtains the value
    computing: ClassVar[str]  # what failed when obtaining it raised, for the student ("calling your code")

    def problem(self, target: str) -> str | None:
        """Why ``target`` cannot be checked (for a config error), or None."""
        try:
            compile(target, "<config>", "eval")
        except SyntaxError as exc:
            return f"is not a Python expression: {exc.msg}"
        return None

    def names(self, target: str) -> frozenset[str]:
        """The notebook's names that ``target`` reads (builtins left out)."""
        return frozenset(n for n in identifiers(target) if n not in BUILTINS)

    def variable(self, target: str) -> str | None:
        """The one variable this check is about, when it looks a variable up rather than computing."""
        return None

    def label(self, target: str) -> str:
        """How feedback names the checked value."""
        return f"`{target}`"


class ValueKind(CheckKind):
    """A variable of the notebook, as it is at the point the question is answered (the end of the
    notebook, or just before the first statement that binds the check's ``before`` name)."""

    key = "value"
    what = "a variable"
    capture = CaptureKind.VALUE
    computing = "reading the value"

    def problem(self, target: str) -> str | None:
        if not target.isidentifier():
            return f"must be a variable name, got {target!r} (use 'expr' for expressions)"
        return super().problem(target)

    def names(self, target: str) -> frozenset[str]:
        return frozenset({target}) - BUILTINS

    def variable(self, target: str) -> str | None:
        return target


class Expr(CheckKind):
    """An expression evaluated in the notebook's namespace at the point the question is answered,
    after seeding random, NumPy and torch when the check gives a ``seed``."""

    key = "expr"
    what = "an expression"
    capture = CaptureKind.EXPR
    computing = "calling your code"


class Test(CheckKind):
    """Ordinary Python that passes when it raises nothing. Run in the student's sandbox, what its
    calls into the notebook's code give back is recorded; the test runs again in the grader on
    those records, and the grader's run is the verdict (``grader.judge.testcheck``)."""

    key = "test"
    what = "Python code with asserts"
    capture = CaptureKind.TEST
    computing = "running your code for the test"

    def problem(self, target: str) -> str | None:
        return testcode.problem(target)

    def names(self, target: str) -> frozenset[str]:
        return testcode.student_names(target)

    def label(self, target: str) -> str:
        lines = [
            line.strip()
            for line in target.splitlines()
            if line.strip() and not line.strip().startswith(("#", '"""', "import ", "from "))
        ]
        first = next((line for line in lines if line.startswith("assert")), lines[0] if lines else "")
        return f"the test `{first[:60]}`" if first else "the test"


KINDS: dict[str, CheckKind] = {kind.key: kind for kind in (ValueKind(), Expr(), Test())}


def choices() -> str:
    """The kinds as a config error lists them: "'value' (a variable), 'expr' (an expression) or
    'test' (Python code with asserts)"."""
    parts = [f"'{k.key}' ({k.what})" for k in KINDS.values()]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]
