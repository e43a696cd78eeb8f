"""Every sentence a verdict becomes, written in one place.

The judges return records (``grader.judge.verdicts``); this module alone turns them into what
students and instructors read, and gives each line of feedback its kind (``FeedbackKind``), so a
renderer chooses lines by kind and never by their text. Rewording a sentence here changes what
people read and nothing else.

What a sentence may say is decided here too: a student's own values and what was expected *in
kind* (a type, a shape, a property), never a hidden reference value, a variant's inputs, or an
instructor's test source that holds the reference formula.

Why one module: that rule holds only if every sentence is written where it is checked; split by
verdict kind, a sentence about a hidden test could be worded in a module that does not see what
may be revealed. The records the sentences read are ``grader.judge.verdicts``.
"""

from __future__ import annotations

from collections.abc import Sequence

from grader.files import printable
from grader.judge import verdicts as v
from grader.judge.scorecard import CheckResult, Feedback, StudentData
from grader.run.job import Captured, CellRun, RunError
from grader.vocab import CellStatus, FeedbackKind, RunStatus, StudentDataStatus, Uncapturable, Unprepared

HINT_PREFIX = "Likely mistake: "
MANUAL = "Graded by a person: waiting for a grader (the autograder gives it 0 points for now)."
MANUAL_UNTOUCHED = (
    "Graded by a person, and not answered yet: write your answer in its cell, in place of "
    '"YOUR ANSWER HERE" or the blank (a person grades it after you submit).'
)
MANUAL_SELFCHECK = "Graded by a person after you submit: the self-check does not grade it."
MANUAL_AGAIN = (
    "Graded by a person: the answer changed since it was graded, so a grader looks at it again (0 points until then)."
)
# Shown in place of a question's feedback that would name a mistake in a question not shown yet.
WITHHELD_CARRIED = "Points as shown; the rest of this question's feedback comes with a result not shown yet."

_COMPARISONS = {
    "Eq": "equal",
    "NotEq": "differ from",
    "Lt": "be less than",
    "LtE": "be at most",
    "Gt": "be greater than",
    "GtE": "be at least",
    "Is": "be",
    "IsNot": "not be",
    "In": "be in",
    "NotIn": "not be in",
}


# --------------------------------------------------------------------------------------------
# Small pieces


def names_list(names: Sequence[str], mark: str = "`") -> str:
    """```a```, ```a`` and ``b```, ```a``, ``b`` and ``c```: names as a sentence lists them."""
    quoted = [f"{mark}{n}{mark}" for n in names]
    if len(quoted) < 2:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " and " + quoted[-1]


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 variant``, ``2 variants``: a number and its noun, as a person writes them."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _is_are(items: Sequence[object]) -> str:
    return "is" if len(items) == 1 else "are"


def error_text(error: RunError) -> str:
    """``ValueError: bad shape``: an exception as Python prints its last line."""
    return f"{error.ename}: {error.evalue}"


def _where(error: RunError | CellRun | None) -> str:
    frames = error.frames if isinstance(error, RunError) else error.traceback if error is not None else ()
    return f" ({frames[-1]})" if frames else ""


def cell_error(run: CellRun) -> str:
    """What went wrong in a cell: ``cell 4 raised ValueError: ... (cell 4, line 2: ...)``."""
    if run.status == CellStatus.TIMEOUT:
        return f"cell {run.index} did not finish: {run.evalue}"
    if run.status == CellStatus.CRASHED:
        return f"cell {run.index} stopped the notebook: {run.evalue}"
    return f"cell {run.index} raised {run.ename}: {run.evalue}{_where(run)}"


def capture_problem(got: Captured | None) -> str:
    """Why a capture has no value, for an instructor (the solution's own run)."""
    if got is None:
        return "it is not defined"
    if got.uncapturable is not None:
        return _cannot_be_judged(v.CannotBeJudged("it", got.uncapturable, got.detail, got.error))
    if got.error is not None:
        return error_text(got.error)
    return "it is not defined"


# --------------------------------------------------------------------------------------------
# A check's reasons


def _cannot_be_judged(why: v.CannotBeJudged) -> str:
    if why.why == Uncapturable.FORM:
        return f"{why.target} {why.detail}"
    if why.why == Uncapturable.RECURSION:
        return f"{why.target} is nested too deeply to compare (recursion)"
    raised = f" ({error_text(why.error)})" if why.error is not None else ""
    return (
        f"the grader's own expression `{why.target}` cannot be applied to the values your notebook "
        f"computed{raised}; your code itself did not raise. If they are the right values in another form, "
        "tell your instructor: the check should accept them"
    )


def _absence(label: str, why: v.Absence) -> str:
    if isinstance(why, v.CannotBeJudged):
        return f"{label} cannot be graded: {_cannot_be_judged(why)}."
    if isinstance(why, v.Raised):
        return f"{label}: {why.computing} raised {error_text(why.error)}{_where(why.error)}."
    if isinstance(why, v.CellFailed):
        return f"{label} has no value because {cell_error(why.cell)}."
    if isinstance(why, v.NeedsBlank):
        return f"{label} has no value: it needs `{why.needed}`, which comes from cell {why.cell}, which still has a blank `?`."
    if isinstance(why, v.NeedsFailed):
        cause = (
            f"cell {why.root.index} raised {why.root.ename}, reported under *{why.owner}*"
            if why.owner
            else cell_error(why.root)
        )
        return f"{label} has no value: it needs `{why.needed}`, which is missing because {cause}."
    if isinstance(why, v.NotReached):
        return f"{label} was not reached: the notebook stopped before this check could run."
    if isinstance(why, v.NeverDefined):
        if why.called:
            return (
                f"`{why.name}` is never defined in your notebook, and this question calls it: define a function "
                "with that exact name (was it renamed or deleted?)."
            )
        return (
            f"`{why.name}` is never defined in the notebook; the question expects a variable with that exact "
            "name (was it renamed or deleted?)."
        )
    if isinstance(why, v.NotYetDefined):
        return f"{label} is not defined yet at the point where this question is answered (before `{why.before}`)."
    return f"{label} is not defined when the notebook finishes."


def _changed(names: tuple[str, ...]) -> str:
    return f"{names_list(names)} {'changes' if len(names) == 1 else 'change'}"


def variant_cause(cause: v.VariantCause) -> str:
    """Why a variant run has no value: the kind of error and where, never its message, output or
    values (they could show the variant's inputs, which students never see)."""
    cell = cause.cell
    if cell is not None:
        if cell.status == CellStatus.TIMEOUT:
            return f"cell {cell.index} did not finish in time"
        if cell.status == CellStatus.CRASHED:
            return f"cell {cell.index} stopped the notebook"
        return f"cell {cell.index} raised {cell.ename or 'an error'}{_where(cell)}"
    if cause.error is not None and not cause.uncapturable:
        return f"computing it raised {cause.error.ename}"
    if cause.uncapturable:
        return "it could not be captured"
    if cause.run == RunStatus.TIMEOUT:
        return "the run did not finish in time"
    if cause.run == RunStatus.CRASHED:
        return "the notebook stopped before this point"
    return "it was not defined at this point"


def _lost(lost: str) -> str:
    return f"it loses the property {lost.replace('_', ' ')}" if lost else "its values do not follow"


def _carried(reason: v.CarriedForward) -> str:
    where = ", ".join(f"*{t}*" for t in reason.roots)
    if reason.share >= 1:
        credit = "this step keeps its points (error carried forward)"
    elif reason.share > 0:
        credit = f"this step earns {reason.share:.0%} of its points (error carried forward)"
    else:
        credit = "this step earns no points while the mistake before it stands"
    return f"{reason.label} is correct given your {names_list(reason.inputs)}; the mistake is upstream, in {where}: {credit}."


def _right_once_fixed(reason: v.RightOnceFixed) -> str:
    where = ", ".join(f"*{t}*" for t in reason.roots)
    used = names_list(reason.callables)
    if reason.share >= 1:
        credit = "this step keeps its points (error carried forward)"
    elif reason.share > 0:
        credit = f"this step earns {reason.share:.0%} of its points (error carried forward)"
    else:
        credit = "this step earns no points while the mistake before it stands"
    are = "is" if len(reason.callables) == 1 else "are"
    return (
        f"{reason.label} could not be computed: it uses your {used}, which {are} not right yet (an error "
        f"was raised); the mistake is upstream, in {where}. Run with a working {used}, your code for this "
        f"step gives the right result: {credit}."
    )


def _uses_wrong(reason: v.UsesWrongCallable) -> str:
    used = names_list([f"{name}()" for name in reason.functions] + list(reason.classes))
    are = "is" if len(reason.functions) + len(reason.classes) == 1 else "are"
    where = names_list(reason.roots, mark="*")
    does = "does" if len(reason.roots) == 1 else "do"
    # Said once per question, whichever of its values it is about: the label is left out.
    return (
        f"This step uses your {used}, which {are} not right yet ({where} {does} not pass): the mistake may "
        "well be there rather than in this step; fix that first."
    )


def check_feedback(reason: v.CheckReason) -> list[Feedback]:
    """The lines of feedback a check's reason becomes, each with its kind."""
    if isinstance(reason, v.NotProduced):
        return [
            Feedback(
                FeedbackKind.CONFIG,
                f"{reason.label} could not be checked: the solution does not produce it "
                "(an instructor's configuration problem, not yours).",
            )
        ]
    if isinstance(reason, v.Unanswered):
        return [Feedback(FeedbackKind.UNANSWERED, f"{reason.label} is not answered yet: {_fill_in(reason)}.")]
    if isinstance(reason, v.Missing):
        return [Feedback(FeedbackKind.MISSING, _absence(reason.label, reason.why))]
    if isinstance(reason, v.Differs):
        lines = [Feedback(FeedbackKind.DIFFERS, line) for line in reason.report]
        if reason.hint:
            lines.append(Feedback(FeedbackKind.HINT, HINT_PREFIX + reason.hint))
        return lines
    if isinstance(reason, v.CarriedForward):
        return [Feedback(FeedbackKind.CARRIED, _carried(reason))]
    if isinstance(reason, v.RightOnceFixed):
        return [Feedback(FeedbackKind.CARRIED, _right_once_fixed(reason))]
    if isinstance(reason, v.UsesWrongCallable):
        return [Feedback(FeedbackKind.CARRIED, _uses_wrong(reason))]
    if isinstance(reason, v.VariantFails):
        return [
            Feedback(
                FeedbackKind.VARIANT,
                f"{reason.label} is correct for the notebook's data, but the code fails "
                f"when {_changed(reason.changed)}: {variant_cause(reason.cause)}.",
            )
        ]
    if isinstance(reason, v.VariantUpstream):
        return [
            Feedback(
                FeedbackKind.VARIANT,
                f"{reason.label} matches for the notebook's data but not when "
                f"{_changed(reason.changed)} ({_lost(reason.lost)}): it is computed from "
                f"{names_list(reason.upstream)}, which {_is_are(reason.upstream)} not right yet; fix that first.",
            )
        ]
    if isinstance(reason, v.VariantTypedIn):
        what = "a size fixed" if reason.shape else "a size or constant fixed"
        return [
            Feedback(
                FeedbackKind.VARIANT,
                f"{reason.label} is correct for the notebook's data but not when "
                f"{_changed(reason.changed)} ({_lost(reason.lost)}): is a value typed in, or {what}, rather "
                "than computed?",
            )
        ]
    if isinstance(reason, v.VariantUntestable):
        return [
            Feedback(
                FeedbackKind.VARIANT,
                f"{reason.label} could not be checked on other data: on every variant "
                f"the code of {names_list(reason.blocking)}, which {_is_are(reason.blocking)} not right yet, "
                "fails before it; fix that first.",
            )
        ]
    if isinstance(reason, v.AuthorSaid):
        return [Feedback(FeedbackKind.TEST, reason.text)]
    return [Feedback(FeedbackKind.TEST, finding(f)) for f in reason.findings]


def check_lines(result: CheckResult) -> list[str]:
    """A check's feedback as text, line by line (``grader check`` prints it; tests read it)."""
    return [line.text for reason in result.reasons for line in check_feedback(reason)]


# ``test`` checks --------------------------------------------------------------------------


def finding(f: v.TestFinding) -> str:
    """One finding of an instructor's test, as the student reads it."""
    if isinstance(f, v.Compared):
        if f.right:
            if f.op == "Eq":
                return f"`{f.left}` should be {f.right}; it is {f.shown}."
            return f"`{f.left}` should {_COMPARISONS[f.op]} {f.right}; it is {f.shown}."
        if f.source:
            return f"`{f.left}` is {f.shown}, which does not pass `{f.source}`."
        return f"`{f.left}` is {f.shown}, which is not what the test expects."
    if isinstance(f, v.DoesNotHold):
        if f.shows_source:
            return f"`{f.source}` does not hold."
        if f.values:
            yours = "; ".join(f"`{name}` is {shown}" for name, shown in f.values)
            return f"a check of the test does not hold for your values ({yours})."
        return "a check of the test does not hold for your values."
    if isinstance(f, v.AssertionSaid):
        if f.where and f.text:
            return f"`{f.where}`: {f.text}"
        return f.text or (f"`{f.where}` failed." if f.where else "the test failed.")
    if isinstance(f, v.SiteRaised):
        return f"`{f.site}` raised {f.ename}: {f.evalue}" if f.evalue else f"`{f.site}` raised {f.ename}"
    if isinstance(f, v.TestRaised):
        where = f" while checking `{f.where}`" if f.where else ""
        if f.ename == "ValueError" and "truth value of an array" in f.evalue and "==" in f.where:
            # ``(size_counts) == [1, 6, 2, 3]`` with an array: compared element by element, not as one
            return (
                f"the test compares `{f.where}` as one value, but yours is a NumPy array, which `==` "
                "compares element by element: give the kind of value the test expects here (a list, "
                "with `.tolist()`, or a single number), not an array."
            )
        return f"the test raised {f.ename}{where}: {f.evalue}"
    if isinstance(f, v.DidNotRaise):
        return f"`{f.where}` should raise {f.expected}; it did not."
    if isinstance(f, v.NotClose):
        head = f"`{f.source}` does not hold" if f.source else f"the test's comparison of `{f.left}` does not hold"
        return f"{head}: " + " ".join(f.report)
    if isinstance(f, v.TestFailedItself):
        return f"{f.text}." if f.text else "the test failed."
    if isinstance(f, v.WroteToStderr):
        return (
            f"the test's checks hold, but while it ran your code wrote to the error stream (`{f.text}`); "
            "this course counts a test that shows a warning or an error message as failed. Find what "
            "prints it (often a NumPy warning such as a division by zero) and fix it."
        )
    if isinstance(f, v.SiteUnusable):
        return f"`{f.site}` cannot be checked: it {f.detail}."
    if isinstance(f, v.SiteUnprepared):
        if f.why == Unprepared.STOPPED:
            ended = f" with {f.ended}" if f.ended else ""
            return f"`{f.site}` was not reached when the test ran in your notebook: the test stopped first{ended}."
        if f.why == Unprepared.OTHER_PATH:
            return (
                f"`{f.site}` was not reached when the test ran in your notebook: the test took another path "
                "there (your code changed its inputs or its state)."
            )
        return f"`{f.site}` was not reached: the notebook stopped before the test could run."
    return f.text


# --------------------------------------------------------------------------------------------
# A question's lines


def hidden_failed(title: str) -> Feedback:
    return Feedback(FeedbackKind.HIDDEN, f"A hidden check on {title.lower()} did not pass.")


def given_changed(names: Sequence[str]) -> Feedback:
    return Feedback(
        FeedbackKind.GIVEN_CHANGED,
        f"Note: {names_list(names)} in your notebook {_is_are(names)} not the data the notebook gives, so "
        "answers computed from it cannot match; the grade is for what your notebook computed.",
    )


def correct(variants: int) -> Feedback:
    if not variants:
        return Feedback(FeedbackKind.CORRECT, "Correct.")
    return Feedback(FeedbackKind.CORRECT, f"Correct, also on {count(variants, 'variant')} of the given inputs.")


def manual(awaiting: v.AwaitingPerson | None = None) -> Feedback:
    """A question graded by a person, before a person graded it."""
    if awaiting is not None and awaiting.review_again:
        return Feedback(FeedbackKind.MANUAL, MANUAL_AGAIN)
    if awaiting is not None and awaiting.untouched:
        return Feedback(FeedbackKind.MANUAL, MANUAL_UNTOUCHED)
    return Feedback(FeedbackKind.MANUAL, MANUAL)


def left_as_released(left: v.LeftAsReleased) -> Feedback:
    """A question graded by a person whose answer the student left exactly as released: 0 points,
    no one to wait for (the course counts an unchanged answer as no answer)."""
    where = (
        'the text cell still says "YOUR ANSWER HERE"'
        if left.markdown
        else "the code cell is still the one you were given (its placeholder is still there)"
    )
    return Feedback(
        FeedbackKind.UNANSWERED,
        f"Not answered: {where}, so this question scores 0. Replace it with "
        "your answer; a person grades what you write.",
    )


def restored_cells(cells: Sequence[int]) -> str:
    """The note of a submission that changed given read-only cells: they ran as released."""
    which = f"Cells {', '.join(map(str, cells[:-1]))} and {cells[-1]} are" if len(cells) > 1 else f"Cell {cells[0]} is"
    return (
        f"{which} given read-only, so {'they' if len(cells) > 1 else 'it'} ran as released; "
        "the changes made there were not graded."
    )


def student_data(record: StudentData, assignment: str) -> str:
    """What a per-student submission that is not the student's own notebook is told (its record:
    ``scorecard.StudentData``); never the data or a reference value."""
    if record.not_on_roster:
        who = printable(record.expected or record.notebook_id)
        return (
            f"{who} is not on the roster this autograder was built with, so there is no data of yours to "
            "grade on: nothing was graded. Tell your instructor."
        )
    mine = f"your own data ({printable(record.expected)})" if record.expected else ""
    paid = (
        f"It was graded on {mine}: a notebook that does not hold your own data earns no points. "
        if record.graded_on
        else "Nobody's data can be told from it, so no question was graded. "
    )
    if record.status == StudentDataStatus.CLASSMATE:
        return (
            f"This notebook was made for another student ({printable(record.notebook_id)}), not for you. "
            f"{paid}Hand in the notebook made for you."
        )
    if record.status == StudentDataStatus.EDITED:
        return (
            "The student id in this notebook's metadata was changed: it no longer matches its signature. "
            f"{paid}Hand in the notebook made for you, with its metadata as it was."
        )
    if record.status == StudentDataStatus.GENERIC:
        return (
            "This is the generic notebook, not the one made for you with your own data. "
            f"{paid}Hand in the notebook made for you."
        )
    if record.status == StudentDataStatus.OTHER_ASSIGNMENT:
        which = f" ({printable(record.made_for)})" if record.made_for else ""
        return f"This notebook was made for another assignment{which}, not {printable(assignment)}: nothing was graded."
    return ""


def manual_selfcheck() -> Feedback:
    return Feedback(FeedbackKind.MANUAL, MANUAL_SELFCHECK)


def person_grade(grade: v.PersonGrade) -> tuple[Feedback, ...]:
    """A person's grade: who gave it and when, each rubric item applied, free points, the comment."""

    def pts(x: float) -> str:
        text = f"{x:+.2f}".rstrip("0").rstrip(".")
        return text

    day = grade.at[:10]
    lines = [
        Feedback(
            FeedbackKind.PERSON,
            f"Graded by {grade.grader or 'a grader'} on {day}: {grade.points:g}/{grade.max_points:g} points.",
        )
    ]
    lines += [Feedback(FeedbackKind.RUBRIC, f"{m.text} ({pts(m.points)})") for m in grade.marks]
    if grade.adjustment and grade.marks:  # without rubric items, the points above say it all
        lines.append(Feedback(FeedbackKind.RUBRIC, f"Points adjusted by the grader ({pts(grade.adjustment)})"))
    if grade.comment.strip():
        lines.append(Feedback(FeedbackKind.COMMENT, f"Comment: {grade.comment.strip()}"))
    return tuple(lines)


def leaves_without_value(cell: int, titles: Sequence[str]) -> Feedback:
    return Feedback(
        FeedbackKind.BLOCKS, f"The same error in cell {cell} leaves {names_list(titles, '*')} without a value too."
    )


STILL_HAS = "the cell still has "
UNFILLED_BLANK = STILL_HAS + "an unfilled blank `?`"


def unfilled(mark: str) -> str:
    """A cell's error where the run met a blank: the ``?`` of this grader's skeletons, or the
    placeholder a notebook was released with (a ``raise NotImplementedError()`` stub, ``...``)."""
    if mark == "?":
        return UNFILLED_BLANK
    return f"{STILL_HAS}the placeholder `{mark}` of the notebook you were given; replace it with your code"


def still_have(cells: str, error: str) -> str:
    """Several cells' same ``unfilled`` error, said once: ``cells 3, 5–7 still have ...``."""
    return f"cells {cells} still have {error.removeprefix(STILL_HAS)}"


def _fill_in(reason: v.Unanswered) -> str:
    if reason.mark == "?" or not reason.place:
        return f"fill in the blank `?` at {reason.where}"
    return f"{reason.place} still has the placeholder `{reason.mark}`; replace it with your code"


def not_graded(reason: str) -> tuple[Feedback, ...]:
    """A question's feedback when the submission as a whole could not be graded."""
    return (Feedback(FeedbackKind.NOTE, f"Not graded: {reason}"),)


def withheld_carried() -> Feedback:
    return Feedback(FeedbackKind.WITHHELD, WITHHELD_CARRIED)
