"""Autograder for numerical Python notebooks."""

import os

__version__ = "0.1.0"
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))  # the grader package: all a student process may import of it


def check(question: str | None = None, *, assignment: str | None = None, checks: str | None = None) -> None:
    """Run the public checks on the variables of this notebook: ``check("q2")``, or ``check()`` for all.

    Uses the ``public_checks.json`` handed out with the assignment (next to the notebook, or in
    ``assignments/NAME/`` above it); prints which questions pass, with the grader's own messages,
    and never shows a reference value the instructor kept hidden.
    """
    import sys

    from grader import selfcheck
    from grader.errors import GraderError

    try:
        selfcheck.check(question, assignment=assignment, checks=checks, namespace=sys._getframe(1).f_globals)
    except GraderError as exc:
        print(f"check: {exc}")
