"""The course as typed, frozen objects: what config.yaml declares, once validated (``grader.course.config``).

Settings are looked up in one order: check -> question -> assignment -> course defaults -> built-in
default (a question sets only ``carry_forward``; ``grader.course.inherited`` says which level may set
what); the loader resolves that order, so every object here holds its own final values.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grader.course.kinds import KINDS, CheckKind
from grader.course.late import LatePolicy
from grader.vocab import Format, QuestionVisibility, ShowExpected


@dataclass(frozen=True)
class Limits:
    """Resource limits for one notebook run; enforced by the executor and the sandbox."""

    cell_timeout: float = 30.0  # wall-clock seconds per cell
    notebook_timeout: float = 300.0  # wall-clock seconds for the whole notebook
    cpu_time: int = 300  # CPU seconds
    memory_mb: int = 4096  # each process's address space; the whole run's memory where a cgroup can be made
    output_kb: int = 256  # stdout + stderr + display data kept per cell
    processes: int = 64  # processes the student may have at once
    open_files: int = 256
    file_size_mb: int = 64  # largest file the student may write
    capture_mb: int = 128  # largest payload of one capture (a value, a test's records); a run's, 4 times that
    disk_mb: int = 256  # the working directory, /tmp and /dev/shm: each a tmpfs of this size
    grader_cpu: float = 60.0  # CPU seconds of the grader's own work on one submission (analysis, decoding, verdicts)
    memfd: bool = False  # allow memfd_create: memory in such files is counted by no limit but file_size_mb


@dataclass(frozen=True)
class Hint:
    """A typical wrong computation, evaluated in the solution's namespace, and what it means."""

    expr: str
    message: str


@dataclass(frozen=True)
class Check:
    """One check of a question: a variable or expression of the student's compared with the
    solution's, or a test's asserts on the student's values (its ``kind``)."""

    id: str  # stable, e.g. "qkv/0" (``grader.names.check_id``)
    question_id: str  # the question it belongs to
    kind: str  # a key of ``grader.course.kinds.KINDS``: "value" | "expr" | "test"
    target: str  # a variable name, an expression, or a test's Python code
    points: float | None
    rtol: float
    atol: float
    strict_types: bool
    seed: int | None = None  # seeds random, NumPy and torch before an ``expr`` (or a test's student-side code) runs
    before: str | None = None  # capture just before the first statement that binds this name
    # Taken where a cell stands in the student's notebook: just before the cell with this id (a
    # given cell tagged ``locked`` named by a ``test`` check runs there as released, its errors the
    # test's, not the run's); or just after the cell holding this line (a call the tool that wrote
    # the notebook made there). At the end where the notebook has neither.
    at_cell: str | None = None
    after_line: str | None = None
    properties: tuple[str, ...] = ()
    compare: bool = True
    hints: tuple[Hint, ...] = ()
    hidden: bool = False  # students see pass/fail only
    public: bool = False  # the reference value may be given to students for self-checks
    # The share of the points a value earns when it is right given the student's own (wrong)
    # upstream answers (error carried forward): 1.0 full credit, 0.0 none.
    carry_forward: float = 1.0
    partial: bool = False  # a ``test`` check earns its points by the share of its asserts that pass
    # A ``test`` check that fails when the test writes to stderr in the student's notebook (a warning
    # too), as a test cell that shows an error message fails.
    stderr_fails: bool = False
    # A ``test`` check: builtin names the test means as the notebook's own (a notebook that defines
    # its own ``sum``, where a test cell would run over the notebook's names). Only names the
    # instructor lists: a student cannot make ``len`` theirs.
    notebook_names: tuple[str, ...] = ()
    # What its author wrote for a student when it passes or fails; a hidden check's are shown only
    # where its details are.
    success_message: str = ""
    failure_message: str = ""

    @property
    def spec(self) -> CheckKind:
        """What this check's kind means (``grader.course.kinds``)."""
        return KINDS[self.kind]

    @property
    def label(self) -> str:
        return self.spec.label(self.target)

    @functools.cached_property  # asked by every verdict of every submission; parsing the target once is enough
    def names(self) -> frozenset[str]:
        """The notebook's names the check reads: what must be answered, and computed, for it."""
        return self.spec.names(self.target) | frozenset(self.notebook_names)

    @property
    def variable(self) -> str | None:
        """The one variable the check looks up, for a kind that looks one up (``value``)."""
        return self.spec.variable(self.target)

    @property
    def is_test(self) -> bool:
        """A ``test`` check: judged by the instructor's asserts, not compared with a reference value."""
        return self.kind == "test"


@dataclass(frozen=True)
class RubricItem:
    """A rubric item of a question graded by a person, as config.yaml lists it: the review page
    starts with these (``grader.review.store.GradeStore.seed_rubric``)."""

    text: str
    points: float  # negative: a deduction


@dataclass(frozen=True)
class Question:
    id: str
    title: str
    points: float
    checks: tuple[Check, ...]
    visible: bool = True  # shown in student-facing feedback, unless ``scorecard.visibility`` says otherwise
    manual: bool = False  # graded by a person: the autograder scores it 0 and lists it as waiting
    # A manual answer left exactly as released scores 0 and waits for no one.
    unchanged_scores_zero: bool = False
    rubric: tuple[RubricItem, ...] = ()  # a manual question's rubric items, in order
    # The skeleton's given code answers the question and fails its tests (``ans = None`` before the
    # blank): ``grader validate`` accepts it failed there, as long as it earns nothing.
    skeleton_fails: bool = False
    # The skeleton's given code already passes the question's tests (an imported course whose release
    # holds the answer, as TU Delft's ``answer_1a = "B"`` above the solution): every notebook earns
    # its points there, as in the course's own tool, and ``grader validate`` accepts it.
    skeleton_passes: bool = False

    @property
    def split(self) -> bool:
        """Whether points are split across checks (partial credit) or all-or-nothing."""
        return any(c.points is not None or c.partial for c in self.checks)


@dataclass(frozen=True)
class VariantSpec:
    """How the given inputs are varied to catch typed-in answers (see grader.judge.variants)."""

    count: int = 2
    seed: int = 0  # the course's variants: what ``grader validate`` checks, and the fallback
    # Each submission gets variants of its own (a seed from its content and a course secret), so
    # inputs that leak from one run serve no other; costs solution runs per submission.
    per_submission: bool = True
    # (name, rule): an expression, None for random values of the same shape and dtype, or KEEP for
    # an input that is never varied. A given input without a rule is varied at random.
    inputs: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class CellSeed:
    """A notebook seeded cell by cell (``seed_each_cell``): before every code cell, NumPy's global
    generator and ``random`` are seeded with ``seed``; with a ``variable``, that name is set to
    ``seed`` instead, for the notebook's own generators to read."""

    seed: int
    variable: str = ""


KEEP = "keep"  # the rule of a given input that variants leave as the notebook defines it


@dataclass(frozen=True)
class PerStudentInput:
    """One given input that differs per student (``per_student.inputs``): drawn with ``rule`` (an
    expression with ``rng``, ``np``, ``value`` and ``shape`` in scope), as one of ``choices``, or
    (neither) as random values of the solution's shape and dtype."""

    name: str
    rule: str = ""
    choices: tuple[Any, ...] = ()


@dataclass(frozen=True)
class PerStudentSpec:
    """Each student's own data (``per_student:``, see grader.judge.per_student)."""

    inputs: tuple[PerStudentInput, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs)


@dataclass(frozen=True)
class Assignment:
    name: str
    title: str
    solution: Path  # the solution notebook
    skeleton: Path  # the generated student notebook
    data: tuple[str, ...]  # files relative to ``solution_dir``, copied for students
    given: tuple[str, ...]
    questions: tuple[Question, ...]
    limits: Limits
    rtol: float
    atol: float
    strict_types: bool
    variants: VariantSpec
    config_digest: str  # hash of this assignment's section, for caches
    # The compiled references to grade from instead of the solution (grader.judge.reference); the
    # data files are then next to it. The solution need not exist.
    bundle: Path | None = None
    preload: tuple[str, ...] = ()  # modules to import in the forking server besides what the notebooks import
    # Where students install the checker from: the course's ``student_install`` (``"wheel"``, a
    # requirement such as ``notebook-grader==0.2.0``, or a URL such as ``git+https://...``).
    student_install: str = "wheel"
    seed_each_cell: CellSeed | None = None  # every run's code cells seeded, each before it runs
    # Lines a student's notebook may hold that run as ``pass`` (regular expressions, each matched
    # against a whole line after its indentation): calls of a tool the course is graded without.
    inert_lines: tuple[str, ...] = ()
    # The code a released notebook held in place of each blank ``?`` line, where students got the
    # course's notebooks from elsewhere: a manual answer that still holds it is left as released.
    blank_released_as: str = ""
    # Where the course's notebooks name each answer cell's question in their own metadata, as a
    # dotted path into a cell's metadata (students who got the notebooks from elsewhere carry none of
    # this grader's tags); "": nowhere.
    answer_ids: str = ""
    # The given inputs each student gets drawn for them (``per_student:``); None: one notebook for all.
    per_student: PerStudentSpec | None = None
    # Sentences every scorecard of the assignment carries once among its run's notes (a cell the
    # grading environment cannot run, such as a demo needing a module it does not install).
    notes: tuple[str, ...] = ()
    late: LatePolicy | None = None  # ``late:``, the late policy (``grader.course.late``)

    @property
    def max_score(self) -> float:
        return sum(q.points for q in self.questions)

    @property
    def solution_dir(self) -> Path:
        """Where the data files are: beside the solution, or beside the bundle graded from."""
        return self.bundle.parent if self.bundle is not None else self.solution.parent

    @property
    def checks(self) -> tuple[Check, ...]:
        return tuple(c for q in self.questions for c in q.checks)

    def question(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(qid)


@dataclass(frozen=True)
class ReviewSettings:
    """How people grade together (``review:``): the JupyterHub group whose members grade."""

    graders_group: str = ""


@dataclass(frozen=True)
class ScorecardSettings:
    """What a run writes and what students see; the defaults never show a reference value."""

    formats: tuple[Format, ...] = (Format.YAML,)
    show_expected: ShowExpected = ShowExpected.NEVER
    due: str | None = None  # ISO date or datetime (UTC when no zone is given)
    rounding: int = 2  # decimals of points
    traceback_lines: int = 8  # frames kept, all in the student's own cells
    # (assignment, question id, level): when a question's result is shown
    visibility: tuple[tuple[str, str, QuestionVisibility], ...] = ()

    def past_due(self, now: datetime | None = None) -> bool:
        if not self.due:
            return False
        due = datetime.fromisoformat(self.due)
        if due.tzinfo is None:
            due = due.replace(tzinfo=UTC)
        return (now or datetime.now(UTC)) > due

    def question_visibility(self, assignment: str, question: Question) -> QuestionVisibility:
        """When the question's result is shown; a question with ``visible: false`` is hidden by default."""
        for a, q, level in self.visibility:
            if a == assignment and q == question.id:
                return level
        return QuestionVisibility.VISIBLE if question.visible else QuestionVisibility.HIDDEN

    def shown(self, assignment: str, question: Question, now: datetime | None = None) -> bool:
        """Whether students may see this question's result now."""
        level = self.question_visibility(assignment, question)
        return level == QuestionVisibility.VISIBLE or (level == QuestionVisibility.AFTER_DUE and self.past_due(now))

    def reveal(self, now: datetime | None = None) -> bool:
        """Whether feedback may show expected values now (``show_expected``)."""
        return self.show_expected == ShowExpected.ALWAYS or (
            self.show_expected == ShowExpected.AFTER_DUE and self.past_due(now)
        )


@dataclass(frozen=True)
class Course:
    file: Path
    root: Path
    name: str
    defaults_limits: Limits
    assignments: dict[str, Assignment] = field(hash=False)
    scorecard: ScorecardSettings = ScorecardSettings()
    review: ReviewSettings = ReviewSettings()
    cache_dir: Path = Path(".grader-cache")

    def assignment(self, name: str) -> Assignment:
        return self.assignments[name]
