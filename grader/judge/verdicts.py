"""Verdicts as data: why a check or a question ended as it did, in typed, frozen records.

Each judging step returns one of these records instead of writing a sentence; ``grader.judge.wording``
alone turns them into the sentences students and instructors read. So a reworded sentence never
changes a grade, and code that needs to know *why* (a renderer hiding what a withheld question
would reveal, a class report counting typical mistakes) reads a field, never a sentence.

    CheckReason             why one check did not simply pass
    ├── NotProduced         the solution itself has no value for it (the instructor's problem)
    ├── Unanswered          a blank ``?`` it depends on is still there
    ├── Missing             no value: one of the ``Absence`` records says why
    ├── Differs             the value differs (``compare``'s report) or breaks a property
    ├── CarriedForward      right given the student's own wrong upstream values
    ├── UsesWrongCallable   wrong, and computed with the student's function or class that is wrong itself
    ├── VariantFails        right on the notebook's data, but the code fails on a variant
    ├── VariantUpstream     not right on a variant, and computed from a wrong answer
    ├── VariantTypedIn      right on the notebook's data only: typed in, or a size fixed
    ├── VariantUntestable   every variant broke first in a wrong answer's code
    └── TestFailed          an instructor's ``test`` check did not pass (``TestFinding`` records)

    PersonGrade             a person's grade of a question graded by a person (``RubricMark`` records)
    AwaitingPerson          such a question before a person graded it (or after its answer changed)

The records hold what the sentence needs as data (labels, question titles, the cell records of
the run), so wording is a pure function of a record.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.run.job import CellRun, RunError
from grader.vocab import RunStatus, Uncapturable, Unprepared

# --------------------------------------------------------------------------------------------
# Why a value is missing


@dataclass(frozen=True)
class CannotBeJudged:
    """Computed, but not in a form the grader can judge (``Captured.uncapturable``)."""

    target: str  # the check's variable or expression
    why: Uncapturable
    detail: str = ""  # FORM: what the value is, in ``grader.capture``'s words
    error: RunError | None = None  # INAPPLICABLE: what the check's own expression raised


@dataclass(frozen=True)
class Raised:
    """The student's code raised while the check's value was computed."""

    computing: str  # what was computed, as the check kind says it ("calling `f`", "computing it")
    error: RunError


@dataclass(frozen=True)
class CellFailed:
    """The cell that computes the value failed itself."""

    cell: CellRun


@dataclass(frozen=True)
class NeedsBlank:
    """The value needs a name from a cell that still has a blank ``?``."""

    needed: str
    cell: int


@dataclass(frozen=True)
class NeedsFailed:
    """The value needs a name that an earlier cell failed to compute."""

    needed: str
    root: CellRun
    owner: str = ""  # the title of the question whose code that cell is, when a check grades it


@dataclass(frozen=True)
class NotReached:
    """The run ended before the value was captured."""


@dataclass(frozen=True)
class NeverDefined:
    """A name the check reads is defined nowhere in the notebook."""

    name: str
    called: bool = False  # the check calls it (a function the question asks for)


@dataclass(frozen=True)
class NotYetDefined:
    """Not defined at the point where the question is answered (``before: NAME``)."""

    before: str


@dataclass(frozen=True)
class NotDefinedAtEnd:
    """Not defined when the notebook finishes."""


Absence = (
    CannotBeJudged
    | Raised
    | CellFailed
    | NeedsBlank
    | NeedsFailed
    | NotReached
    | NeverDefined
    | NotYetDefined
    | NotDefinedAtEnd
)


# --------------------------------------------------------------------------------------------
# Why a variant run has no value (never its message: it could show the variant's inputs)


@dataclass(frozen=True)
class VariantCause:
    """The kind of failure and where: a cell's status and error type, or the run's end."""

    cell: CellRun | None = None
    error: RunError | None = None  # raised while the value itself was computed
    uncapturable: bool = False
    run: RunStatus = RunStatus.OK


# --------------------------------------------------------------------------------------------
# Why a check did not simply pass


@dataclass(frozen=True)
class NotProduced:
    label: str


@dataclass(frozen=True)
class Unanswered:
    label: str
    where: str  # the blank's place, as ``BlankReport`` words it
    mark: str = "?"  # the placeholder left there: ``?``, or a released stub (``raise NotImplementedError()``, ``...``)
    place: str = ""  # ``cell 3, line 2``


@dataclass(frozen=True)
class Missing:
    label: str
    why: Absence


@dataclass(frozen=True)
class Differs:
    label: str
    report: tuple[str, ...]  # ``compare``'s or a property's own report of the difference
    hint: str = ""  # the typical mistake the value matches, in the instructor's words


@dataclass(frozen=True)
class CarriedForward:
    label: str
    inputs: tuple[str, ...]  # the student's wrong values it is right given
    roots: tuple[str, ...]  # the titles of the questions where the mistakes are
    share: float  # the share of the step's points it keeps


@dataclass(frozen=True)
class RightOnceFixed:
    """A step with no value because the student's function or class raised, which another question
    tests: run with the solution's definition in its place, the student's code for the step gives
    the right value on every run (``grader.judge.fixes``)."""

    label: str
    callables: tuple[str, ...]  # as the student calls them: `self_attention()`, `CausalAttention`
    roots: tuple[str, ...]  # the titles of the questions that test them
    share: float  # the share of the step's points it keeps


@dataclass(frozen=True)
class UsesWrongCallable:
    """A wrong value computed with the student's own functions or classes, which another question
    tests and which do not pass it: the mistake may well be there, not in this step."""

    label: str
    functions: tuple[str, ...]  # the student's functions it is computed with
    classes: tuple[str, ...]  # the student's classes
    roots: tuple[str, ...]  # the titles of the questions that test them and do not pass


@dataclass(frozen=True)
class VariantFails:
    label: str
    changed: tuple[str, ...]
    cause: VariantCause


@dataclass(frozen=True)
class VariantUpstream:
    label: str
    changed: tuple[str, ...]
    lost: str  # the property lost on the variant, or "" when its values do not follow
    upstream: tuple[str, ...]  # the wrong answers it is computed from


@dataclass(frozen=True)
class VariantTypedIn:
    label: str
    changed: tuple[str, ...]
    lost: str
    shape: bool  # the shape is what does not follow


@dataclass(frozen=True)
class VariantUntestable:
    label: str
    blocking: tuple[str, ...]  # the wrong answers whose code fails first


# ``test`` checks --------------------------------------------------------------------------


@dataclass(frozen=True)
class AssertionSaid:
    """An ``AssertionError``'s own message (``np.testing``'s, say), expected values taken out."""

    text: str
    where: str = ""  # the test's statement, when the assert was not one of its own ``assert``s


@dataclass(frozen=True)
class Compared:
    """A single comparison in an ``assert`` did not hold: the student's side, shown in brief."""

    left: str  # the test's left side, as written
    op: str  # the comparison, as ``ast``'s class name (``Eq``, ``Lt``, ...)
    shown: str  # the student's value, briefly
    right: str = ""  # the right side, shown only when it is a literal the test may show
    source: str = ""  # the whole assert, for an assert whose right side is not shown


@dataclass(frozen=True)
class DoesNotHold:
    """An ``assert`` that is not a single comparison did not hold: the student's values it reads."""

    source: str
    values: tuple[tuple[str, str], ...] = ()  # (the student's name or site, their value briefly)
    shows_source: bool = True  # False: the assert holds the reference formula, so it is not quoted


@dataclass(frozen=True)
class SiteRaised:
    """The student's code raised when the test used it."""

    site: str
    ename: str
    evalue: str


@dataclass(frozen=True)
class TestRaised:
    """The test's own code raised (not an assert, not the student's code)."""

    ename: str
    evalue: str
    where: str = ""


@dataclass(frozen=True)
class DidNotRaise:
    where: str
    expected: str  # the exception the test expected, as pytest names it


@dataclass(frozen=True)
class Said:
    """A message the test itself gives (``assert x, "message"``, ``pytest.fail``), or why a site
    could not be used (its inputs come from the student's values)."""

    text: str


@dataclass(frozen=True)
class NotClose:
    """``np.allclose(yours, expected)`` did not hold: how the student's value differs, in kind
    (``compare``'s report, which shows no expected value unless the course allows it)."""

    left: str
    report: tuple[str, ...]
    source: str = ""  # the assert, when it holds no formula


@dataclass(frozen=True)
class SiteUnusable:
    """The test used as data a value that stayed in the student's process (a generator, a module)."""

    site: str
    detail: str  # what the value is, in ``grader.capture``'s words


@dataclass(frozen=True)
class SiteUnprepared:
    """The grader's run of the test reached a site the student's run of it did not record."""

    site: str
    why: Unprepared
    ended: str = ""  # for ``Unprepared.STOPPED``: the exception the student's run ended with


@dataclass(frozen=True)
class TestFailedItself:
    """The test called ``pytest.fail`` (or a block it expected to raise ended it that way)."""

    text: str  # the test's own message, or ""


@dataclass(frozen=True)
class WroteToStderr:
    """The test passed its asserts, but something wrote to stderr while it ran in the student's
    notebook (a warning, an error message), and the check counts that as failed (``stderr_fails``)."""

    text: str  # the first line written


TestFinding = (
    AssertionSaid
    | Compared
    | DoesNotHold
    | NotClose
    | SiteRaised
    | TestRaised
    | DidNotRaise
    | Said
    | SiteUnusable
    | SiteUnprepared
    | TestFailedItself
    | WroteToStderr
)


@dataclass(frozen=True)
class TestFailed:
    label: str
    findings: tuple[TestFinding, ...]
    line: int = 0  # the test's line where it first failed (for an instructor: ``grader import`` names it)


@dataclass(frozen=True)
class AuthorSaid:
    """The message a test's author wrote for a student, for when it passes or when it fails
    (``success_message`` / ``failure_message``): shown beside the verdict, never instead."""

    label: str
    text: str
    passed: bool


CheckReason = (
    NotProduced
    | Unanswered
    | Missing
    | Differs
    | CarriedForward
    | RightOnceFixed
    | UsesWrongCallable
    | VariantFails
    | VariantUpstream
    | VariantTypedIn
    | VariantUntestable
    | TestFailed
    | AuthorSaid
)


# --------------------------------------------------------------------------------------------
# A question graded by a person (``manual: true``)


@dataclass(frozen=True)
class RubricMark:
    """One rubric item a person applied to an answer: its text and points (negative: a deduction)."""

    text: str
    points: float


@dataclass(frozen=True)
class PersonGrade:
    """A person's grade of one answer: the rubric items applied, free points, a comment, who and when.
    Its points are the items' sum plus ``adjustment``, kept within 0 and the question's points."""

    points: float
    max_points: float
    grader: str
    at: str  # ISO 8601, UTC
    marks: tuple[RubricMark, ...] = ()
    adjustment: float = 0.0
    comment: str = ""


@dataclass(frozen=True)
class AwaitingPerson:
    """Not graded by a person yet. ``untouched``: the answer is still the skeleton's prompt;
    ``review_again``: a person graded an earlier version of the answer, which has changed since."""

    untouched: bool = False
    review_again: bool = False


@dataclass(frozen=True)
class LeftAsReleased:
    """A question graded by a person whose answer is exactly as the notebook was released (the
    course scores such an answer 0 without a person, ``unchanged_scores_zero``). ``markdown``: a
    written answer, else code."""

    markdown: bool = False
