"""Names shared by both sides of the process boundary, and the ids of what a job captures.

The grader rewrites cells and builds captures; the student process runs them. Both must spell the
injected helpers the same way, so they are defined here once, with no imports, and read by
``grader.run.worker`` (the student side) as much as by ``grader.judge`` (the grader's side).

Capture ids are built by the functions below and never taken apart by splitting a string: a
caller that needs a check's question asks the ``Check`` (``Check.question_id``), and a given
input's name is read back by ``given_name``, the inverse of ``given_id`` kept next to it.
"""

from __future__ import annotations

# Called by a rewritten cell after the statement that binds a varied input: ``__grader_inject__(key)``.
INJECT = "__grader_inject__"
# Where the student process keeps the value a carried step held before the solution's replaced it.
CARRIED = "__grader_carried__"
# The file name a check's expression is compiled under in the student process (frames in it are
# the check's, not the student's).
CHECK_FILE = "<check>"
# A cell's file name in the student process's tracebacks: ``<cell 3>``.
CELL_FILE = "<cell {}>"

# Error carried forward through a function (``grader.run.calls``): an injection key that wraps the
# student's function so that its calls are recorded under ``__grader_calls__[name]``, or one that
# puts in the solution's process a stand-in answering from that record.
RECORD = "__grader_record__:"
REPLAY = "__grader_replay__:"
CALLS = "__grader_calls__"
# Error carried forward past a function that raised: an injection key that puts the solution's
# definition of the student's function or class in its place, defined apart from the notebook's
# names (``grader.judge.fixes``).
FIX = "__grader_fix__:"
# A variant's input put in under the student's own name for it (``judge.variants.aliases``)
ALIAS = "__grader_alias__:"

# A plot question's figures: the capture that closes what earlier cells drew has this target.
FIGURES_BEFORE = "before"

_GIVEN = "__given__/"
_FIGURES = "__figures__/"
_CALLS = "__calls__/"


def check_id(question_id: str, index: int) -> str:
    """The id of a question's ``index``-th check, as scorecards and jobs carry it."""
    return f"{question_id}/{index}"


def hint_id(check: str, index: int) -> str:
    """The capture id of a check's ``index``-th hint expression."""
    return f"{check}#h{index}"


def given_id(name: str) -> str:
    """The capture id of a given input's value (to see whether the student changed the data)."""
    return _GIVEN + name


def figures_id(question_id: str, before: bool = False) -> str:
    """The capture id of the figures a question's answer cells draw (or of the capture just before
    them, which closes what earlier cells drew)."""
    return _FIGURES + question_id + ("/before" if before else "")


def given_name(capture: str) -> str | None:
    """The given input a capture id names (``given_id``'s inverse), or None for any other capture."""
    return capture[len(_GIVEN) :] if capture.startswith(_GIVEN) else None


def autotest_id(stage: str, cell: int, line: int, snippet: int, template: int | None = None) -> str:
    """The capture id of a value an expanded test line reads from the solution: a snippet's type
    (``stage`` "type") or one template's value for it ("value"). Whoever builds one keeps the tuple
    it was built from beside it, so that nothing reads it back."""
    tail = "" if template is None else f"/{template}"
    return f"__autotest__/{stage}/{cell}.{line}.{snippet}{tail}"


def calls_id(function: str) -> str:
    """The capture id of the record of a student's function's calls (``grader.run.calls``)."""
    return _CALLS + function


# The helpers an instructor's rewritten test calls, on both sides: the student's process records
# what each call into the student's code returned, the grader replays the test on those records
# (``grader.run.test_recorder``, ``grader.judge.testcheck``).
TEST_SITE = "__grader_site__"  # __grader_site__(n, thunk): a value from the student's code
TEST_ITER = "__grader_iter__"  # __grader_iter__(n, thunk): iterating over a student's value
TEST_WITH = "__grader_with__"  # __grader_with__(n, thunk): a student's context manager
TEST_DEL = "__grader_del__"  # __grader_del__(name): ``del`` of one of the notebook's names
# __grader_snap__(n, thunk) before a call into the student's code that is handed one of the test's
# own values, __grader_sync__(n, thunk) after it: the value as the call left it, where it changed it
TEST_SNAP = "__grader_snap__"
TEST_SYNC = "__grader_sync__"
TEST_ASSERT = "__grader_assert__"  # __grader_assert__(n, thunk, message): one of the test's asserts
TEST_AT = "__grader_at__"  # __grader_at__(n): the statement about to run (grader side only)
# The record of NumPy's print options in the student's process where a test runs, under this key,
# and the options it holds: the grader replays the test within them, so ``str(array)`` reads there
# as it does in the notebook (a notebook's ``np.set_printoptions(precision=2)``).
PRINTOPTIONS = "numpy.printoptions"
PRINTOPTION_KEYS = frozenset(
    {"precision", "threshold", "edgeitems", "linewidth", "suppress", "nanstr", "infstr", "sign", "floatmode", "legacy"}
)
# __grader_modules__(names): before the test, the course's own modules it imports (files of the run's
# working directory, never a library), recorded as they stand: their plain-data values (student side only)
TEST_MODULES = "__grader_modules__"
