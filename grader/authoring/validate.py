"""``grader validate``: proof that an assignment's loop closes.

- the solution scores full marks;
- the skeleton scores zero, with every question ``unanswered``;
- every check's variable or expression exists in the solution (the reference run fails otherwise);
- every given input is defined by the solution, and the skeleton is what ``grader assign`` makes now;
- every hint is reachable: it differs from the reference, and a value equal to it gets that hint;
- with ``per_student:``, the skeleton's data cells define every input drawn per student, and the
  solution runs on a sample of students' draws, each of which changes the answers.
"""

from __future__ import annotations

from dataclasses import replace

from grader import notebook
from grader.authoring.assign import skeleton_text
from grader.course.model import Assignment, Course
from grader.errors import GraderError, NotebookError, UsageError
from grader.judge import variants, wording
from grader.judge.checks import Context, grade_check
from grader.judge.compare import compare
from grader.judge.grading import Grader
from grader.judge.reference import Reference
from grader.names import hint_id
from grader.notebook import BlankReport
from grader.run.job import Captured
from grader.vocab import CheckStatus, QuestionStatus, SubmissionStatus


def validate(course: Course, assignment: Assignment, grader: Grader | None = None) -> list[str]:
    grader = grader or Grader(course)
    drawn = assignment if assignment.per_student is not None else None
    problems = _given_problems(assignment)
    try:
        ref = grader.references.get(assignment)
    except GraderError as exc:
        # An undefined given input is already reported with its fix; the reference run fails on it too.
        return problems or [str(exc)]
    # The notebooks themselves, not a student's: their own data is what they are graded on.
    assignment = replace(assignment, per_student=None) if assignment.per_student is not None else assignment
    # Graded from its reference bundle (a Gradescope image), the solution is not there to grade.
    card = (
        grader.grade(assignment, assignment.solution, course_variants=True)  # the variants it checks
        if assignment.solution.is_file()
        else None
    )
    if card is not None and (card.score != assignment.max_score or card.status != SubmissionStatus.GRADED):
        for q in card.questions:
            if q.status not in (QuestionStatus.PASSED, QuestionStatus.MANUAL):
                problems.append(f"the solution does not pass question {q.id}: {' '.join(q.lines)}")
        if card.status != SubmissionStatus.GRADED:
            problems.append(f"the solution's run ended {card.status}: {card.reason}")
    assign_cmd = f"run `grader assign {assignment.name}`"
    shown = (
        assignment.skeleton.relative_to(course.root)
        if assignment.skeleton.is_relative_to(course.root)
        else assignment.skeleton
    )
    if not assignment.skeleton.is_file():
        problems.append(f"the skeleton {shown} does not exist: {assign_cmd}")
    elif _stale(assignment):
        # Grading a skeleton made from an older solution says nothing about the markers of this one.
        problems.append(
            f"the skeleton {shown} is out of date with the "
            f"solution (it is not what `grader assign` makes from it now): {assign_cmd}"
        )
    else:
        card = grader.grade(assignment, assignment.skeleton, course_variants=True)
        # A question whose tests read none of the notebook's names (nbgrader's ``print("Success!")``
        # test cell) passes on every notebook, the skeleton too, by its author's design.
        free = {q.id for q in assignment.questions if q.checks and all(c.is_test and not c.names for c in q.checks)}
        # The same for one test of a question (``assert 'x' != ...``, a course's own slip): its points
        # are earned by every notebook, the skeleton's too, and the rest of the question must not be.
        loose = {c.id for c in assignment.checks if c.is_test and not c.names}
        # An imported release whose given code answers a question earns it, as in the course's tool.
        free |= {q.id for q in assignment.questions if q.skeleton_passes}
        earned = sum(
            q.score - sum(ch.score for ch in q.checks if ch.id in loose) for q in card.questions if q.id not in free
        )
        if earned > 1e-9:
            problems.append(f"the skeleton scores {earned:g}, not 0")
        free |= {
            q.id
            for q in card.questions
            if q.status == QuestionStatus.PARTIAL
            and all(ch.id in loose or ch.status == CheckStatus.UNANSWERED for ch in q.checks)
        }
        # Given code that runs and fails its tests (``ans = None`` before the blank) is the skeleton's
        # answer where the course says so; it must earn nothing, as above.
        fails = {q.id for q in assignment.questions if q.skeleton_fails}
        for q in card.questions:
            if q.id in fails and q.status in (QuestionStatus.FAILED, QuestionStatus.ERROR) and q.score == 0:
                continue
            if q.status not in (QuestionStatus.UNANSWERED, QuestionStatus.MANUAL) and q.id not in free:
                problems.append(
                    f"question {q.id} is {q.status} in the skeleton, not unanswered: mark its "
                    f"solution code with # SOLUTION or a BEGIN/END SOLUTION block, then {assign_cmd}"
                )
    ctx = Context(infos=[], blanks=_no_blanks(), cells=[], student={}, reference=ref.captures)
    for check in assignment.checks:
        if check.is_test:
            continue  # a test the solution fails is named by the solution's scorecard, above
        expected = ref.captures[check.id].value
        assert expected is not None, "References.get fails for a solution that does not produce a check's value"
        for i, hint in enumerate(check.hints):
            got = ref.captures.get(hint_id(check.id, i))
            where = f"question {check.question_id}, hint {hint.expr!r}"
            if got is None or got.value is None:
                problems.append(f"{where}: cannot be evaluated in the solution: {wording.capture_problem(got)}")
                continue
            if compare("", got.value, expected, rtol=check.rtol, atol=check.atol).ok:
                problems.append(f"{where}: equals the reference value, so it can never fire")
                continue
            result = grade_check(
                check, replace(ctx, student={check.id: Captured(value=got.value)}), check.points or 1.0
            )
            if result.hint != hint.message:
                problems.append(
                    f"{where}: a submission computing it gets {'another hint' if result.hint else 'no hint'}"
                )
    problems.extend(_variant_problems(assignment, ref))
    if drawn is not None:
        problems.extend(_per_student_problems(drawn, grader, ref))
    return problems


SAMPLE_STUDENTS = 6  # students whose draws ``grader validate`` runs the solution on


def _per_student_problems(assignment: Assignment, grader: Grader, ref: Reference) -> list[str]:
    """The skeleton can be filled per student, the solution runs on a sample of students' inputs,
    and each of their draws changes the answers (else a student's notebook is the generic one)."""
    from grader.authoring.assign import skeleton
    from grader.authoring.per_student import Template

    try:
        Template(assignment, skeleton(assignment.solution, assignment.student_install))
    except (GraderError, ValueError) as exc:
        return [str(exc)]
    problems: list[str] = []
    for k in range(1, SAMPLE_STUDENTS + 1):
        sample = f"validate-sample-{k}"
        try:
            theirs = grader.students.for_student(assignment, sample)
        except (GraderError, OSError) as exc:
            return problems + [str(exc)]
        changed = [
            c.id
            for c in assignment.checks
            if not c.is_test
            and (got := theirs.get(c.id)) is not None
            and got.value is not None
            and (base := ref.captures[c.id].value) is not None
            and not compare("", got.value, base, rtol=0, atol=0).ok
        ]
        if not changed:
            problems.append(
                f"per_student: the draw for sample student {k} of {SAMPLE_STUDENTS} changes no answer of the "
                "solution: that student's notebook would hold the same answers as the generic one (leave the "
                "notebook's own value out of a list of choices, or widen the rule)"
            )
    return problems


def _given_problems(assignment: Assignment) -> list[str]:
    """Every given input must be defined by the solution: one that is not cannot be varied."""
    try:
        infos = notebook.analyse(notebook.read(assignment.solution))
    except NotebookError:
        return []  # the reference run says why the solution cannot be read
    defined = variants.first_definitions(infos, assignment.given)
    return [variants.undefined_given_message(assignment, name) for name in assignment.given if name not in defined]


def _stale(assignment: Assignment) -> bool:
    """Whether the skeleton on disk differs from what ``grader assign`` makes of the solution now."""
    try:
        fresh = skeleton_text(assignment.solution, assignment.student_install)
        return assignment.skeleton.read_text(encoding="utf-8") != fresh
    except (OSError, UsageError, ValueError):
        return False  # an unreadable skeleton or solution is reported by grading it


def _variant_problems(assignment: Assignment, ref: Reference) -> list[str]:
    """Every variant must change at least one reference value of each question it applies to."""
    problems: list[str] = []
    changes: dict[int, set[str]] = {}
    for variant, captures in zip(ref.variants, ref.variant_captures, strict=True):
        changed = set()
        for q in assignment.questions:
            for c in q.checks:
                if c.is_test:
                    changed.add(q.id)  # a test's own inputs are its variants
                    continue
                base, other = ref.captures[c.id].value, captures.get(c.id)
                assert base is not None, "References.get fails for a solution that does not produce a check's value"
                if other is None or other.value is None or not compare("", other.value, base, rtol=0, atol=0).ok:
                    changed.add(q.id)
        changes[variant.number] = changed
    for variant in ref.variants:
        label = f"variant {variant.number} ({', '.join(variant.names)})"
        if not changes[variant.number]:
            problems.append(f"{label} changes no reference value of any question: it tests nothing")
            continue
        for q in assignment.questions:
            others = [n for n, qs in changes.items() if n != variant.number and q.id in qs]
            if q.id not in changes[variant.number] and others:
                problems.append(f"{label} changes no reference value of question {q.id}, which other variants change")
    return problems


def _no_blanks() -> BlankReport:
    return BlankReport(blanks=(), tainted={})
