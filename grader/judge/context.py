"""What every verdict on one submission reads: the run's cells and values, the reference, the
variants, and the error carried forward from the student's own upstream values.

The helpers here answer questions of fact that several verdicts ask (does a value hold on this
run; which wrong upstream steps is it right given; where is the first error a failed cell follows
from); they return data and write no sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from grader.capture import Value
from grader.course.model import Check
from grader.course.properties import check_property
from grader.judge import carry
from grader.judge.compare import compare, matches
from grader.names import calls_id, given_name
from grader.notebook import BlankReport, CellInfo, before_point, dependencies, first_binds
from grader.run.job import Captured, CellRun
from grader.vocab import RunStatus

T = TypeVar("T")


@dataclass(frozen=True)
class VariantRun:
    """The submission and the solution run again with the given inputs replaced."""

    number: int
    names: tuple[str, ...]  # the inputs this variant replaces
    student: dict[str, Captured]
    reference: dict[str, Captured]
    cells: list[CellRun]
    status: RunStatus = RunStatus.OK
    reason: str = ""
    # The ids whose reference value this variant changes (``changed_answers``), when the caller
    # worked them out once for the reference; None: each check works it out for itself.
    changed: frozenset[str] | None = None
    # The solution's values computed from the student's own values of this run (``grader.judge.carry``).
    carried: dict[str, Captured] = field(default_factory=dict)
    # The student's values of this run with the solution's definition of a function or class that
    # raised put in its place (``grader.judge.fixes``).
    fixed: dict[str, Captured] = field(default_factory=dict)


def changes(variant: Captured | None, base: Captured | None) -> bool:
    """Whether a variant's reference value differs from the original one: only then can the
    variant tell a computed answer from a typed-in one."""
    return (
        variant is not None
        and variant.value is not None
        and base is not None
        and base.value is not None
        and not matches(variant.value, base.value, rtol=0, atol=0)
    )


def changed_answers(reference: dict[str, Captured], variant: dict[str, Captured]) -> frozenset[str]:
    """The ids whose reference value a variant changes. It depends on the solution's runs alone, so
    a grader can work it out once per variant instead of once per submission (``VariantRun.changed``)."""
    return frozenset(cid for cid, captured in variant.items() if changes(captured, reference.get(cid)))


@dataclass(frozen=True)
class Context:
    """Everything about one submission's run that verdicts depend on."""

    infos: list[CellInfo]
    blanks: BlankReport
    cells: list[CellRun]
    student: dict[str, Captured]
    reference: dict[str, Captured]
    reveal: bool = False
    variants: tuple[VariantRun, ...] = ()
    answers: frozenset[str] = frozenset()  # names graded by value checks: the student's work, not given data
    given: tuple[str, ...] = ()  # the assignment's given inputs, where ``before:`` points are found
    wrong: frozenset[str] = frozenset()  # answers whose value does not match on the notebook's data
    # Error carried forward (``grader.judge.carry``): the solution's values (and hints) computed from
    # the student's own upstream values, when they were needed; each step's upstream steps; and
    # question titles, to name where a mistake is.
    carried: dict[str, Captured] = field(default_factory=dict)
    upstream: dict[str, tuple[Check, ...]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    checks: tuple[Check, ...] = ()  # every check of the assignment: who owns a failing statement
    # Steps that call the student's functions (``carry.followed_calls``): check id -> {the id of a
    # check testing the function: the function's name}, to say "correct given your `gradient()`".
    calls: dict[str, dict[str, str]] = field(default_factory=dict)
    # Expression checks that grade a name (``carry.carriers``: ``torch.stack(heads)``) -> that name,
    # which a step right given it is said to be computed from ("given your `heads`").
    through: dict[str, str] = field(default_factory=dict)
    # The upstream steps a step has from the solution's data flow only (``carry.with_solution``):
    # check id -> their ids; kept for a value that follows the data (``follows_data``).
    solution_links: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Where the assignment's data files are: an instructor's test replayed here reads them from there
    # (``np.load("data/x.npy")`` in a test cell), as it does in the student's working directory.
    data_dir: Path | None = None
    # Steps without a value computed with the student's functions or classes that raised, tested
    # by another question, or from such a step (``grader.judge.fixes``): check id -> (name, the
    # question that tests it) of each; and the student's values with the solution's definitions of
    # them in place.
    fixed_by: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    fixed: dict[str, Captured] = field(default_factory=dict)
    # Results that depend on this context alone, asked for by many checks; ``replace`` starts afresh.
    _memo: dict[object, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def remember(self, key: object, make: Callable[[], T]) -> T:
        """``make()``, worked out once per context under ``key`` (a fact every check may ask for)."""
        if key not in self._memo:
            self._memo[key] = make()
        found: T = self._memo[key]
        return found

    def changed_givens(self) -> list[str]:
        """Given inputs whose values in the submission differ from the notebook's own data. A given
        input that the student computes (``embeddings = ?``, graded by its own check) is not data
        the student changed, so it is left out: its check already says what is wrong."""
        if "changed_givens" not in self._memo:
            out = []
            for cid, ref in self.reference.items():
                name = given_name(cid)
                if name is None or ref.value is None or name in self.answers:
                    continue
                got = self.student.get(cid)
                if got is not None and got.value is not None and not matches(got.value, ref.value, rtol=1e-7, atol=0):
                    out.append(name)
            self._memo["changed_givens"] = out
        return list(self._memo["changed_givens"])

    def dependencies(self, names: tuple[str, ...]) -> dict[str, set[str]]:
        """``notebook.dependencies`` of the submission, once per context (every check and variant asks)."""
        key = ("dependencies", names)
        if key not in self._memo:
            self._memo[key] = dependencies(self.infos, names)
        deps: dict[str, set[str]] = self._memo[key]
        return deps

    def first_binds(self) -> dict[str, int]:
        """``notebook.first_binds`` of the submission, once per context."""
        if "first_binds" not in self._memo:
            self._memo["first_binds"] = first_binds(self.infos, self.given)
        binds: dict[str, int] = self._memo["first_binds"]
        return binds

    def before_point(self, check: Check) -> int | None:
        """``notebook.before_point`` of a check with ``before: NAME`` in the submission, once per
        context."""
        key = ("before_point", check.before, check.names)
        if key not in self._memo:
            assert check.before is not None
            self._memo[key] = before_point(self.infos, check.before, check.names, self.given)
        point: int | None = self._memo[key]
        return point

    def bound_anywhere(self, name: str) -> bool:
        return any(name in info.binds for info in self.infos)

    def failed_binder(self, name: str) -> CellRun | None:
        """The first cell that should have bound ``name`` but raised, hung or crashed."""
        for info, run in zip(self.infos, self.cells, strict=True):
            if name in info.binds and run.status.failed:
                return run
        return None


def follows_data(check: Check, ctx: Context) -> bool:
    """Whether the student's value changes on some variant whose reference it changes: computed from
    the data, not typed in (nor a constant behind a show of computing). False without variants."""
    got = ctx.student.get(check.id)
    if got is None or got.value is None:
        return False
    for run in ctx.variants:
        again = run.student.get(check.id)
        if (
            again is not None
            and again.value is not None
            and changes(run.reference.get(check.id), ctx.reference.get(check.id))
            and not matches(again.value, got.value, rtol=0, atol=0)
        ):
            return True
    return False


def without_constant_links(ctx: Context, checks: tuple[Check, ...]) -> Context:
    """The context without the solution's data-flow links of a value that never follows the data:
    a typed-in value is not "right given" upstream values typed in with it."""
    if not ctx.solution_links:
        return ctx
    by_id = {c.id: c for c in checks}
    upstream = dict(ctx.upstream)
    for cid, ids in ctx.solution_links.items():
        check = by_id.get(cid)
        if check is not None and not follows_data(check, ctx):
            upstream[cid] = tuple(u for u in upstream.get(cid, ()) if u.id not in ids)
    return replace(ctx, upstream=upstream)


def holds_on(check: Check, captures: dict[str, Captured], reference: dict[str, Captured]) -> bool:
    got, ref = captures.get(check.id), reference.get(check.id)
    if got is None or got.value is None or ref is None or ref.value is None:
        return False
    if check.compare and not matches(got.value, ref.value, rtol=check.rtol, atol=check.atol):
        return False
    return not any(check_property(p, check.label, got.value, ref.value, atol=check.atol) for p in check.properties)


def carried_from_steps(
    check: Check,
    value: Value,
    ref: Value,
    carried: Captured | None,
    ctx: Context,
    student: dict[str, Captured],
    reference: dict[str, Captured],
) -> list[Check] | None:
    """The wrong upstream steps when the value is right given them (it matches the reference the
    solution computes from the student's own upstream values, and not the plain one); else None."""
    if not explains(check, value, carried) or carried is None or carried.value is None:
        return None
    if matches(carried.value, ref, rtol=check.rtol, atol=check.atol):
        return None
    wrong = [u for u in ctx.upstream.get(check.id, ()) if carry.wrong(u, student, reference)]
    return wrong or None


def explains(check: Check, value: Value, carried: Captured | None) -> bool:
    """Whether the value is what the solution computes from the student's own upstream values."""
    if carried is None or carried.value is None:
        return False
    if not compare(
        check.label, value, carried.value, rtol=check.rtol, atol=check.atol, strict_types=check.strict_types
    ).ok:
        return False
    return not vetoes(check, value, carried.value)


def vetoes(check: Check, value: Value, reference: Value) -> str:
    """The first of the check's properties the value breaks while the reference does not ("" when
    none). Given a reference the solution's step computed from the student's own upstream values, a
    property that reference breaks too (rows that do not sum to one, because the student's
    ``softmax`` does not) is the upstream's mistake, not this step's: it vetoes nothing here."""
    for p in check.properties:
        problem = check_property(p, check.label, value, reference, atol=check.atol)
        if problem and not check_property(p, check.label, reference, reference, atol=check.atol):
            return problem
    return ""


def roots(check: Check, ctx: Context) -> list[str]:
    """The questions where the mistakes behind a carried-forward value are: its wrong upstream
    steps, or theirs when those are right given their own inputs. Walked on each run where the
    value itself differs (the notebook's data first, then the variants), so a mistake that shows
    only on other data (scores kept in float16) is traced on the run that shows it, to the step
    that is wrong there, not to the step just before."""
    out: list[str] = []
    runs = [(ctx.student, ctx.reference, ctx.carried)] + [(r.student, r.reference, r.carried) for r in ctx.variants]
    for student, reference, carried in runs:
        if carry.wrong(check, student, reference):
            for qid in _roots_on(check, ctx, student, reference, carried, frozenset()):
                if qid not in out:
                    out.append(qid)
    return out


def _roots_on(
    check: Check,
    ctx: Context,
    student: dict[str, Captured],
    reference: dict[str, Captured],
    carried: dict[str, Captured],
    seen: frozenset[str],
) -> list[str]:
    out: list[str] = []
    for u in ctx.upstream.get(check.id, ()):
        if u.id in seen or not carry.wrong(u, student, reference):
            continue
        got, up_ref, up_carried = student.get(u.id), reference.get(u.id), carried.get(u.id)
        explained = (
            got is not None
            and got.value is not None
            and up_ref is not None
            and up_ref.value is not None
            and carried_from_steps(u, got.value, up_ref.value, up_carried, ctx, student, reference)
        )
        deeper = _roots_on(u, ctx, student, reference, carried, seen | {check.id}) if explained else []
        for qid in deeper or [u.question_id]:
            if qid not in out:
                out.append(qid)
    return out


def root_failure(run: CellRun, infos: list[CellInfo], cells: list[CellRun]) -> tuple[CellRun, str]:
    """The first error a failed cell follows from, and the name that error left undefined: a
    ``NameError`` for a name an earlier cell should have bound but failed to (it raised, hung or
    still has a blank) follows from that cell, back to the first. A cell that failed on its own is
    its own root."""
    name = ""
    for _ in range(len(cells)):
        undefined = run.name if run.ename == "NameError" else ""
        if not undefined:
            break
        earlier = next(
            (c for info, c in zip(infos, cells, strict=True) if undefined in info.binds and c.status.failed), None
        )
        if earlier is None or earlier.pos >= run.pos:
            break
        run, name = earlier, undefined
    return run, name


def _differs(captured: Captured | None) -> bool:
    return (
        captured is not None
        and captured.value is not None
        and captured.value.kind == "bool"
        and captured.value.data is True
    )


def without_right_calls(ctx: Context) -> Context:
    """The context, with a function a step calls no longer among the step's upstream where the
    carry-forward runs showed its answers are the solution's own on every call the step makes: a
    question that tests it fails for another reason (``load_vocab()`` is right, the tokenizer
    does not lower-case), and the step is not "correct given your ``load_vocab()``"."""
    if not ctx.calls:
        return ctx
    runs = [ctx.carried, *(r.carried for r in ctx.variants)]
    wrong = {
        f
        for by_owner in ctx.calls.values()
        for f in by_owner.values()
        if any(_differs(run.get(calls_id(f))) for run in runs)
    }
    upstream = dict(ctx.upstream)
    calls: dict[str, dict[str, str]] = {}
    for cid, by_owner in ctx.calls.items():
        drop = {o for o, f in by_owner.items() if f not in wrong}
        if drop:
            upstream[cid] = tuple(u for u in upstream.get(cid, ()) if u.id not in drop)
        kept = {o: f for o, f in by_owner.items() if f in wrong}
        if kept:
            calls[cid] = kept
    return replace(ctx, upstream=upstream, calls=calls)
