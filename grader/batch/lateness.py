"""Each submission's time, from where the late policy says (``late.times``), and the policy applied to it.

    lms        the download's own word: Gradescope's ``:created_at:``, Canvas's ``_LATE_`` marker
               (how late is then ``marked_late_counts_as``, one period unless set); Moodle's download
               has no times: give them in a CSV (its grading worksheet is one)
    timestamp.txt  the file an exchange layout writes beside the notebook (or in the folder above it)
    a path     a CSV of times (``grader.course.late.times_csv``), by submission id, LMS id or student

Every submission gets a ``Late`` record or a note saying why it has none. A clock time without a
zone (and no ``late.times_timezone``) is a usage error naming every such time, raised before anything is
graded or written.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from grader.batch.intake import Intake, Submission
from grader.course import late
from grader.course.model import Assignment
from grader.errors import UsageError
from grader.judge.scorecard import Scorecard
from grader.vocab import SubmissionStatus


def apply(found: Intake, assignment: Assignment, roster: Path | None = None) -> None:
    """Set each submission's ``late`` record (in place: intake's submissions are built here once)."""
    policy = assignment.late
    if policy is None:
        return
    times: dict[str, datetime] = {}
    problems: list[str] = []
    if policy.times not in (late.TIMES_LMS, late.TIMES_BESIDE):
        times, problems = late.times_csv(Path(policy.times), policy.times_zone, policy.zone)
    rows = None
    if policy.extensions_column and roster is not None:
        from grader.outputs.roster import load

        rows = load(roster)
    out: list[Submission] = []
    for sub in found.submissions:
        names = _names(sub)
        submitted: datetime | None = None
        marked = ""
        try:
            if policy.times == late.TIMES_LMS:
                if sub.lms is not None and sub.lms.submitted_at:
                    submitted = late.submission_time(sub.lms.submitted_at, policy.times_zone, None)
                elif sub.lms is not None and sub.lms.marked_late:
                    marked = sub.lms.lms.capitalize()
            elif policy.times == late.TIMES_BESIDE:
                for folder in (sub.path.parent, sub.path.parent.parent):
                    submitted = late.timestamp_beside(folder, policy.times_zone)
                    if submitted is not None:
                        break
            else:
                submitted = next((times[late.lms_key(n)] for n in names if late.lms_key(n) in times), None)
        except ValueError as exc:
            problems.append(f"{sub.origin}: {exc}")
            continue
        column = ""
        if rows is not None:
            at = rows.candidates(sub.name, _probe(sub, assignment))
            if len(at) == 1:
                column = rows.students[at[0]].column(policy.extensions_column)
        try:
            extension = policy.extension_for(names, column)
        except ValueError as exc:
            problems.append(f"{sub.origin}: its extension {exc}")
            continue
        if submitted is None and not marked:
            if sub.lms is not None and policy.times == late.TIMES_LMS and sub.lms.lms != "canvas":
                found.notes.append(
                    f"{sub.student}: {sub.lms.lms.capitalize()}'s download gives no submission time; "
                    "the late policy is not applied (give the times in a CSV: late.times)"
                )
            elif policy.times != late.TIMES_LMS or sub.lms is None:
                found.notes.append(
                    f"{sub.student}: no submission time found ({_source(policy)}); the late policy is not applied"
                )
            else:  # Canvas without its marker: on time
                out.append(_with(sub, policy.judge(None, extension=extension)))
                continue
            out.append(sub)
            continue
        record = policy.judge(submitted, marked_by=marked, extension=extension)
        if record.not_accepted:
            found.notes.append(
                f"{sub.student}: {sub.origin} was submitted {late.duration_text(record.late_by)} after the due date, "
                "after the last date the late policy accepts: not accepted, 0 points"
            )
        out.append(_with(sub, record))
    if problems:
        raise UsageError(
            f"The late policy of {assignment.name} cannot read {len(problems)} submission time(s); nothing was graded:\n  "
            + "\n  ".join(problems)
            + "\nWrite each time with its zone (2026-03-06T23:59:00+01:00), or set late.times_timezone to the zone they are in."
        )
    found.submissions = out


def _with(sub: Submission, record: late.Late) -> Submission:
    from dataclasses import replace

    return replace(sub, late=record)


def _names(sub: Submission) -> tuple[str, ...]:
    """The names a student may be given by in an extension or a times file."""
    names = [sub.id, sub.student, sub.name]
    if sub.lms is not None:
        names += [sub.lms.user_id, sub.lms.name, sub.lms.email]
    return tuple(n for n in names if n)


def _source(policy: late.LatePolicy) -> str:
    if policy.times == late.TIMES_BESIDE:
        return "no timestamp.txt beside it"
    if policy.times == late.TIMES_LMS:
        return "not from an LMS's download"
    return f"not in {Path(policy.times).name}"


def _probe(sub: Submission, assignment: Assignment) -> Scorecard:
    """A card holding only this submission's identity, for the roster to place it."""
    return Scorecard(
        assignment=assignment.name,
        submission=sub.path.name,
        sha256="",
        status=SubmissionStatus.GRADED,
        score=0.0,
        max_score=0.0,
        student=sub.student,
        id=sub.id,
        origin=sub.lms,
    )
