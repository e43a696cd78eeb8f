"""Autograder for numerical Python notebooks."""

import importlib
import importlib.util
import os
import sys
import types

__version__ = "0.1.0"
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))  # the grader package: all a student process may import of it


def _defer_iri_grammar() -> None:
    """Put off building ``rfc3987_syntax``'s IRI grammar until an IRI is first checked.

    nbformat validates notebooks with jsonschema, and jsonschema imports ``rfc3987_syntax`` (when
    installed, as JupyterHub's ``jsonschema[format-nongpl]`` installs it) only to check the ``iri``
    formats no notebook schema uses; that import builds an Earley grammar and costs 1.5 to 2 s of
    CPU in every process that reads a notebook (python-jsonschema/jsonschema#1428). In its place
    jsonschema finds a module whose ``is_valid_syntax`` imports the real one on its first call, so
    an IRI is still checked as before, and a process that checks none never pays for the grammar.
    """
    name = "rfc3987_syntax"
    if name in sys.modules or importlib.util.find_spec(name) is None:
        return
    stand_in = types.ModuleType(name, "Imports the real rfc3987_syntax on the first check.")

    def is_valid_syntax(term: str, value: str) -> bool:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
        real = importlib.import_module(name)
        stand_in.is_valid_syntax = real.is_valid_syntax  # type: ignore[attr-defined]
        return bool(real.is_valid_syntax(term, value))

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    sys.modules[name] = stand_in


_defer_iri_grammar()


def _one_tree_at_a_time() -> None:
    """Make ``ast.parse`` take one lock (``ast.parse.lock``), which code compiled from an ``ast`` tree
    in threads takes too (``grader.judge.testrewrite``).

    CPython 3.11 and 3.12 count the depth of a conversion between C syntax trees and ``ast``
    objects in the interpreter's state, which threads share: a collection or a switch of threads in
    the middle of one lets another thread's ``ast.parse`` change the count, and one of them fails
    with ``SystemError: AST constructor recursion depth mismatch`` (python/cpython#106905). A batch
    grades submissions in threads, each parsing its notebook's cells and tests; one such error
    crashed a submission at random on a loaded machine. Held for the few milliseconds of a parse.
    """
    import ast
    import threading

    if hasattr(ast.parse, "lock"):  # installed already (this package imported again under another name)
        return
    parse, lock = ast.parse, threading.RLock()

    def locked_parse(*args, **kwargs):  # type: ignore[no-untyped-def]
        with lock:
            return parse(*args, **kwargs)

    locked_parse.__wrapped__ = parse  # type: ignore[attr-defined]
    locked_parse.__doc__ = parse.__doc__
    locked_parse.lock = lock  # type: ignore[attr-defined]
    ast.parse = locked_parse


_one_tree_at_a_time()


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
