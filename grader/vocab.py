"""The grader's vocabulary: every status, kind and reason that crosses a module boundary, defined once.

Each is a ``StrEnum``, so a member equals (and hashes as) the string written in scorecards and
config files: ``QuestionStatus.PASSED == "passed"``. Code compares against members, never bare
strings, so a typo is a name error and a reader finds every use of a status by searching for it.
Scorecards, caches and wire messages carry the plain string values, never the enum itself.
"""

from __future__ import annotations

from enum import StrEnum


class SubmissionStatus(StrEnum):
    """How grading one submission ended (``Scorecard.status``)."""

    GRADED = "graded"  # the notebook ran (errors in cells included) and every question was judged
    INVALID_NOTEBOOK = "invalid_notebook"  # the file is not a readable notebook; nothing ran
    TIMEOUT = "timeout"  # a cell or the whole notebook ran past its limit; the rest was judged
    CRASHED = "crashed"  # the student process ended abnormally; the rest was judged
    OVER_BUDGET = "over_budget"  # the grader's own work on it passed ``limits.grader_cpu``; not judged


class StudentDataStatus(StrEnum):
    """Whose data a per-student submission holds (``StudentData.status``, grader.judge.per_student)."""

    OWN = "own"
    CLASSMATE = "classmate"  # a valid stamp naming another student
    EDITED = "edited"  # a stamp whose signature does not match its id
    GENERIC = "generic"  # no stamp: the generic skeleton
    OTHER_ASSIGNMENT = "other_assignment"


class QuestionStatus(StrEnum):
    """A question's verdict (``QuestionResult.status``)."""

    PASSED = "passed"
    FAILED = "failed"
    PARTIAL = "partial"  # some of its checks earned their points (split points only)
    UNANSWERED = "unanswered"  # a blank `?` it depends on is still unfilled
    ERROR = "error"  # the student's code raised while computing its value
    MANUAL = "manual"  # graded by a person; waiting for one (0 points from the autograder)
    GRADED = "graded"  # graded by a person (``PersonGrade``): their points
    SKIPPED = "skipped"  # the self-check, in a live session past the point a question is checked at


class CheckStatus(StrEnum):
    """One check's verdict (``CheckResult.status``)."""

    PASSED = "passed"
    FAILED = "failed"
    UNANSWERED = "unanswered"
    ERROR = "error"


class FeedbackKind(StrEnum):
    """What a line of a question's feedback is (``Feedback.kind``): renderers choose lines by it."""

    CORRECT = "correct"
    UNANSWERED = "unanswered"  # a blank is still there
    MISSING = "missing"  # no value: not defined, raised, blocked by an earlier error
    DIFFERS = "differs"  # the value differs from what was expected, or breaks a property
    HINT = "hint"  # the typical mistake the value matches
    CARRIED = "carried"  # right given an earlier mistake: says where that mistake is
    VARIANT = "variant"  # right on the notebook's data only
    TEST = "test"  # a finding of an instructor's test
    HIDDEN = "hidden"  # a hidden check did not pass
    GIVEN_CHANGED = "given_changed"  # the student changed the data the notebook gives
    BLOCKS = "blocks"  # the same error leaves later questions without a value
    MANUAL = "manual"  # waiting for a person
    PERSON = "person"  # a person's grade: who, when, points
    RUBRIC = "rubric"  # a rubric item a person applied, or their free points
    COMMENT = "comment"  # a person's comment
    CONFIG = "config"  # the instructor's configuration cannot judge it
    WITHHELD = "withheld"  # the rest comes with a result not shown yet
    NOTE = "note"  # anything else a renderer shows as it is (a whole-notebook reason)


class Unprepared(StrEnum):
    """Why a test's site has no record of the student's process to answer from."""

    NOT_REACHED = "not_reached"  # the notebook stopped before the test ran
    STOPPED = "stopped"  # the test's run in the student's process ended before this site
    OTHER_PATH = "other_path"  # the test took another path there (its inputs or state were changed)


class Uncapturable(StrEnum):
    """Why a value that was computed cannot be judged (``Captured.uncapturable``)."""

    FORM = "form"  # not plain data the grader can carry (a generator, a file handle, too large)
    INAPPLICABLE = "inapplicable"  # the check's own expression fails on the student's values
    RECURSION = "recursion"  # nested too deeply to compare


class CellStatus(StrEnum):
    """What happened to one cell in one run (``CellRun.status``)."""

    OK = "ok"
    ERROR = "error"  # it raised; the notebook went on
    TIMEOUT = "timeout"  # it ran past the cell limit and was stopped
    CRASHED = "crashed"  # it ended the process; the notebook ran again without it
    SKIPPED = "skipped"  # not run on purpose (skip-grading, or after it hung or crashed)
    NOT_RUN = "not_run"  # the run ended before reaching it

    @property
    def failed(self) -> bool:
        """Whether the cell should have produced its names and did not, by its own doing."""
        return self in (CellStatus.ERROR, CellStatus.TIMEOUT, CellStatus.CRASHED)


class RunStatus(StrEnum):
    """How one run of a notebook ended (``RunResult.status``)."""

    OK = "ok"
    TIMEOUT = "timeout"
    CRASHED = "crashed"


class SkipReason(StrEnum):
    """Why a cell of a job is not run (``JobCell.skip``); the empty string means it is run."""

    RUN = ""
    TAGGED = "skip-grading"  # the instructor tagged it, or it is such a cell copied untagged
    TIMEOUT = "timeout"  # it hung in an earlier attempt
    CRASHED = "crashed"  # it ended the process in an earlier attempt


class CaptureKind(StrEnum):
    """How the student process obtains a value to send back (``CaptureSpec.kind``)."""

    VALUE = "value"  # look a variable up in the notebook's namespace
    EXPR = "expr"  # evaluate an expression there (a call of the student's function, say)
    TEST = (
        "test"  # an instructor's test, run over the notebook's names: what its calls gave back (grader.judge.testcheck)
    )
    FIGURES = "figures"  # the figures the cells before drew, as images (grader.run.figures)


class Reason(StrEnum):
    """Why a comparison failed (``Comparison.reason``), in numpy.testing's fixed order of checks."""

    NONE = ""
    TYPE = "type"
    LENGTH = "length"
    KEYS = "keys"
    SHAPE = "shape"
    DTYPE = "dtype"
    NAN = "nan"  # NaN or infinity where a number was expected, or the reverse
    LABELS = "labels"  # a pandas index or columns
    VALUES = "values"


class ShowExpected(StrEnum):
    """When expected values may appear in students' feedback (``scorecard.show_expected``)."""

    NEVER = "never"
    AFTER_DUE = "after_due"
    ALWAYS = "always"


class QuestionVisibility(StrEnum):
    """When students see a question's result at all (``scorecard.visibility``)."""

    VISIBLE = "visible"
    AFTER_DUE = "after_due"
    HIDDEN = "hidden"


class Format(StrEnum):
    """The output formats a run can write (``scorecard.formats``, ``--formats``); each has one
    renderer in ``grader.outputs.formats``."""

    YAML = "yaml"
    JSON = "json"
    MD = "md"
    HTML = "html"
    GRADESCOPE = "gradescope"
    CLASSROOM = "classroom"
    CLASSROOM50 = "classroom50"
    JUNIT = "junit"
    GRADEBOOK = "gradebook"
    REPORT = "report"
    CANVAS = "canvas"
    MOODLE = "moodle"


def names(enum: type[StrEnum]) -> tuple[str, ...]:
    """The members' string values, in order: for help texts and "must be one of" messages."""
    return tuple(member.value for member in enum)
