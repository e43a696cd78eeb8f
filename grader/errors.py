"""Every error the grader raises on purpose.

    GraderError                 base; carries a message a user can act on
    ├── ConfigError             config.yaml is malformed; names the file, key path and line
    ├── UsageError              a command was called wrongly (unknown assignment, missing path)
    │   └── RosterConflict      a roster cannot place submissions without a guess (an LMS file written without them)
    ├── NotebookError           a submission cannot be read as a notebook (-> invalid_notebook)
    ├── ProtocolError           the student process sent a malformed or oversized payload (-> crashed)
    ├── SolutionError           the solution notebook fails, so nothing can be graded against it
    ├── DocumentError           a saved scorecard is malformed, of an unknown record, or of another format_version
    │   └── BadValue            one value of it, while its path in the document is being found (never shown as is)
    ├── StaleEdit               a grade changed on an older version than the stored one: refused (the page merges)
    ├── ExecutorError           an executor cannot run notebooks at all (its server does not start)
    │   └── ServerGone          a forking server did not answer; the executor replaces it and asks again
    ├── SandboxError            a planned protection cannot be put in place; the notebook is not run
    │   └── SessionSetupError   a session's sandbox cannot take its submission; carries the control socket
    ├── GradingFailed           pytest plugin: a submission could not be graded; its items fail with the message
    └── QuestionNotEarned       pytest plugin: a question did not earn full marks; its item reports the feedback

Signals that end one step of grading and become a verdict, never an error a person sees:

    OverBudget                  the grader's own work on a submission passed ``limits.grader_cpu``
    CaptureFailed               a student's value exists but cannot be carried as plain data (why, for a student)
    CheckFailed                 a check's own expression fails on the student's values (student process)
    TestSiteError               an instructor's test cannot use a student's value at one of its sites
    ├── SiteUnusable            the value stayed in the student's process and was used as data
    └── SiteUnrecorded          the student's run of the test recorded nothing for the site
    TestStopped                 the first failed assert ends an all-or-nothing test
    TestDidNotRaise             a test's ``pytest.raises`` block raised nothing (the exception it expected)
    TestComparisonFailed        a test's ``np.testing`` comparison did not hold: both values and its tolerance
    HelperFailed                a test's nose-style helper did not hold; its message shows no expected value
    StudentException            base of a student's exception of a non-builtin type, raised again for a test

Nothing here is shown to users as a traceback: the command line and the pytest plugin turn these
into one-line messages and exit statuses. The sandbox raises its errors in the student process
(which reports them on its channel), so this module is imported there too: it imports nothing.
"""

from __future__ import annotations

from typing import Any


class GraderError(Exception):
    """Base class: an error whose message is meant for a person, not a stack trace."""


class ConfigError(GraderError):
    """config.yaml is malformed, or names something that does not exist."""

    def __init__(self, file: str, path: str, message: str, line: int | None = None):
        self.file, self.path, self.line, self.message = file, path, line, message
        where = f"{file}:{line}" if line else file
        key = f" {path}" if path else ""
        super().__init__(f"{where}:{key} {message}")


class UsageError(GraderError):
    """A command was called with arguments that cannot work."""


class RosterConflict(UsageError):
    """Submissions a roster cannot place without a guess: two rows for one submission, or two
    submissions for one row. The LMS's file is written without them; the message names both sides."""


class NotebookError(GraderError):
    """A submission file is not a readable notebook; the message is one sentence."""


class ProtocolError(GraderError):
    """The channel from the student process carried something other than a well-formed payload."""


class SolutionError(GraderError):
    """The solution notebook itself fails to run or lacks a value a check needs."""

    ename: str = ""  # where a cell of it raised: the exception's type name (``TypeError``)


class DocumentError(GraderError):
    """A saved scorecard (``grader.judge.document``) cannot be read: malformed, holding a record the
    grader does not know, or written in another ``format_version`` (the message says how to regrade)."""


class BadValue(DocumentError):
    """One value of a saved scorecard that cannot be read; ``path`` collects where it is (innermost
    first) as the reading unwinds, and the reader turns it into a DocumentError that says so."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []


class StaleEdit(GraderError):
    """A change to a person's grade made on an older version of it than the one stored (another tab,
    another grader, an import since): refused, nothing changed; ``grade`` is the stored one."""

    def __init__(self, grade: object) -> None:
        super().__init__("the grade changed since the page read it")
        self.grade = grade


class ExecutorError(GraderError):
    """The executor itself cannot run notebooks (its server does not start); no submission's fault."""


class ServerGone(ExecutorError):
    """A forking server did not answer: it died, was stopped, or closed its socket."""


class SandboxError(GraderError):
    """The sandbox could not be set up as planned; the notebook is not run without it."""


class SessionSetupError(SandboxError):
    """A session's sandbox could not take its submission; ``control`` is the session's control socket."""

    def __init__(self, message: str, control: int):
        super().__init__(message)
        self.control = control  # the first run can still be told why on it


class TestSiteError(Exception):
    """A site of an instructor's test cannot answer with the student's value; the test's verdict
    says so (``grader.judge.testcheck``), so this never reaches a person as an error."""

    def __init__(self, site: str, why: str, ended: str = ""):
        super().__init__(site)
        self.site, self.why, self.ended = site, why, ended


class SiteUnusable(TestSiteError):
    """The student's value stayed in the student's process (``why``: what it is) and the test used it as data."""


class SiteUnrecorded(TestSiteError):
    """The grader's run of a test reached a site the student's run did not record (``why``: a
    ``vocab.Unprepared``)."""


class StudentException(Exception):
    """Base of a student's exception raised again in the grader, for an instructor's test, when its
    type is not a builtin one (``pytest.raises`` sees the student's exception by its name)."""


class GradingFailed(GraderError):
    """A submission could not be graded under the pytest plugin; the message is each of its items' failure."""


class QuestionNotEarned(GraderError):
    """A question did not earn full marks under the pytest plugin; its item reports the student's feedback."""


class OverBudget(Exception):
    """The grader's own work on a submission passed ``limits.grader_cpu``; the message is the reason."""


class CaptureFailed(Exception):
    """A value exists but cannot be carried as plain data; the message says why, for a student."""


class CheckFailed(Exception):
    """A check's own expression (not the student's code it calls) raised on every form of the
    student's values it was tried on; ``first`` is what it raised on the values as they are."""

    def __init__(self, first: BaseException):
        super().__init__(type(first).__name__)
        self.first = first


class TestStopped(Exception):
    """The first failed assert ends an all-or-nothing test."""


class TestComparisonFailed(AssertionError):
    """A test's ``np.testing.assert_allclose`` (or ``assert_array_equal``, ...) did not hold, as data:
    the student's side, the expected side, the tolerance it compared with and the test's own
    ``err_msg``. An ``AssertionError``, so a test's ``except AssertionError`` still catches it."""

    def __init__(self, actual: Any, desired: Any, rtol: float, atol: float, err_msg: str = ""):
        super().__init__(err_msg)
        self.actual, self.desired, self.rtol, self.atol, self.err_msg = actual, desired, rtol, atol, err_msg


class HelperFailed(AssertionError):
    """A test's nose-style helper (``assert_equal``, ``ok_``, ...) did not hold; its message is the
    test's own, or describes the student's value only (``grader.nose_tools``)."""


class TestDidNotRaise(Exception):
    """A test's ``pytest.raises`` block raised nothing; ``expected`` names the exception it expected."""

    def __init__(self, expected: str):
        super().__init__(expected)
        self.expected = expected
