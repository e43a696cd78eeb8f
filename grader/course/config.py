"""config.yaml -> frozen, typed objects, validated once.

Every error names the file, the key path and the line, e.g.
``config.yaml:14: assignments.attention_numpy.questions[2].points must be a number, got 'two'``.
Unknown keys are errors too, so a typo never silently changes how a course is graded.

The settings a check inherits (tolerances and error carried forward) are declared once, in
``grader.course.inherited``, and looked up by its ``inherit`` in one order: the check, its question,
its assignment, the course's ``defaults``, the built-in default. Limits and the number of variants are looked up
the same way, from the assignment to the course's ``defaults`` to the built-in default.
The objects are defined in ``grader.course.model``; the YAML reader is ``grader.course.reader``.

Why one module: every section's keys are checked against one another here (a check's kind and its
keys, an assignment's data beside its solution, variants against ``given``), each with the key path
its error names; split up, the readers would pass the document and the paths between them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import textwrap
from datetime import date, datetime
from pathlib import Path

import yaml

from grader.course import kinds, late, placement, properties
from grader.course.inherited import Inherited, Level, inherit
from grader.course.model import (
    KEEP,
    Assignment,
    CellSeed,
    Check,
    Course,
    Hint,
    Limits,
    Question,
    ReviewSettings,
    RubricItem,
    ScorecardSettings,
    VariantSpec,
)
from grader.course.per_student import per_student_spec
from grader.course.reader import Document, Reader, describe
from grader.errors import ConfigError
from grader.names import check_id
from grader.vocab import Format, QuestionVisibility, ShowExpected, names

ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
# course.student_install: "wheel" (built by `grader assign`, placed beside each skeleton), a
# requirement (notebook-grader, notebook-grader==0.2.0), or a URL pip installs from (git+https://...,
# https://.../x.whl). Nothing a shell would read as two words, a redirection or a substitution.
WHEEL = "wheel"
_REQUIREMENT = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?"
    r"(\s*(==|>=|<=|~=|!=|<|>)\s*[A-Za-z0-9.*+!_-]+(\s*,\s*(==|>=|<=|~=|!=|<|>)\s*[A-Za-z0-9.*+!_-]+)*)?$"
)
_URL = re.compile(r"^(git\+)?(https|http|ssh|file)://[^\s`'\"$;&|<>()\\]+$")

__all__ = ["Assignment", "Check", "Course", "Hint", "Limits", "Question", "ScorecardSettings", "VariantSpec", "load"]


# --------------------------------------------------------------------------------------------
# Building the typed objects


def _limits(r: Reader, base: Limits) -> Limits:
    r.only(*(f.name for f in dataclasses.fields(Limits)))
    values: dict[str, float | bool] = {}
    for f in dataclasses.fields(Limits):
        default = getattr(base, f.name)
        if f.type in ("bool", bool):
            values[f.name] = r.flag(f.name, default)
        elif f.type in ("int", int):
            values[f.name] = r.whole(f.name, default, minimum=1)
        else:
            values[f.name] = float(r.number(f.name, default, minimum=0.001))
    return Limits(**values)  # type: ignore[arg-type]


def _hint(r: Reader) -> Hint:
    r.only("expr", "message")
    expr = r.string("expr")
    _check_expr(r, "expr", expr)
    return Hint(expr=expr, message=r.string("message"))


def _check_expr(r: Reader, key: str, expr: str) -> None:
    try:
        compile(expr, "<config>", "eval")
    except SyntaxError as exc:
        raise r.error(r.sub(key), f"is not a Python expression: {exc.msg}") from None


TEST_REF = re.compile(r"^(?P<file>[\w./-]+\.py)::(?P<name>[A-Za-z_]\w*)$")


def _test_in_file(r: Reader, ref: re.Match[str], base: Path) -> str:
    """``checks.py::test_relu``: the function's body, after the file's other top-level code (its
    imports and helpers), as one test."""
    import ast

    rel = ref.group("file")
    path = base / rel
    if rel.startswith("/") or ".." in Path(rel).parts or not path.is_file():
        raise r.error(r.sub("test"), f"names {rel}, which is not a file next to the solution")
    text = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise r.error(r.sub("test"), f"names {rel}, which is not Python: {exc.msg} (line {exc.lineno})") from None
    lines = text.splitlines()
    prelude, body = [], None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == ref.group("name"):
            start = node.body[0].lineno - 1
            body = textwrap.dedent("\n".join(lines[start : node.end_lineno]))
        elif not (isinstance(node, ast.FunctionDef) and node.name.startswith("test")):
            prelude.append("\n".join(lines[node.lineno - 1 : node.end_lineno]))
    if body is None:
        raise r.error(r.sub("test"), f"names {ref.group('name')}, which {rel} does not define")
    return "\n".join([*prelude, body]) + "\n"


def _notebook_names(r: Reader, kind: str) -> tuple[str, ...]:
    names = r.str_list("notebook_names")
    if names and kind != "test":
        raise r.error(r.sub("notebook_names"), "is for a 'test' check only")
    for i, name in enumerate(names):
        if not name.isidentifier():
            raise r.error(f"{r.sub('notebook_names')}[{i}]", f"must be a name such as sum, got {name!r}")
    return names


# A check's keys besides its kind's and those every level inherits
CHECK_KEYS = """points seed before at_cell after_line properties compare hints hidden public partial stderr_fails
notebook_names success_message failure_message""".split()


def _answer_ids(r: Reader) -> str:
    path = r.string("answer_ids", "")
    if path and not all(part.isidentifier() for part in path.split(".")):
        raise r.error(
            r.sub("answer_ids"), f"must be a dotted path into a cell's metadata, such as course.cell_id, got {path!r}"
        )
    return str(path)


def _check(r: Reader, qid: str, index: int, outer: Inherited, base: Path | None = None) -> Check:
    r.only(*kinds.KINDS, *CHECK_KEYS, *Inherited.keys(Level.CHECK))
    given = [key for key in kinds.KINDS if r.has(key)]
    if len(given) != 1:
        raise r.error(r.path, f"needs exactly one of {kinds.choices()}")
    kind = given[0]
    target = r.string(kind)
    ref = TEST_REF.match(target.strip()) if kind == "test" and base is not None else None
    if ref is not None and base is not None:
        target = _test_in_file(r, ref, base)
    problem = kinds.KINDS[kind].problem(target)
    if problem:
        raise r.error(r.sub(kind), problem)
    props = r.str_list("properties")
    for i, p in enumerate(props):
        if p not in properties.PROPERTIES:
            raise r.error(
                f"{r.sub('properties')}[{i}]", f"must be one of {', '.join(properties.PROPERTIES)}, got {p!r}"
            )
    compare = r.flag("compare", True)
    if not compare and not props:
        raise r.error(r.path, "compares nothing: set 'compare: true' or list 'properties'")
    seed = r.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise r.error(r.sub("seed"), f"must be a whole number, got {describe(seed)}")
    before = r.get("before")
    if before is not None and not (isinstance(before, str) and before.isidentifier()):
        raise r.error(r.sub("before"), f"must be a variable name, got {describe(before)}")
    at_cell, after_line = placement.where(r, before)
    hints = tuple(_hint(Reader(r.doc, h, p)) for p, h in r.items("hints"))
    points = r.number("points", None)
    settings = inherit(r, Level.CHECK, outer)
    return Check(
        id=check_id(qid, index),
        question_id=qid,
        kind=kind,
        target=target,
        points=None if points is None else float(points),
        seed=seed,
        before=before,
        at_cell=at_cell,
        after_line=after_line,
        properties=props,
        compare=compare,
        hints=hints,
        hidden=r.flag("hidden", False),
        public=r.flag("public", False),
        partial=r.flag("partial", False),
        stderr_fails=r.flag("stderr_fails", False),
        notebook_names=_notebook_names(r, kind),
        success_message=r.string("success_message", ""),
        failure_message=r.string("failure_message", ""),
        **settings.fields_of(Check),
    )


def _rubric(r: Reader) -> tuple[RubricItem, ...]:
    """``rubric:`` of a manual question: a list of ``{text: ..., points: ...}`` (points may be
    negative, for a deduction)."""
    items = []
    for path, data in r.items("rubric"):
        item = Reader(r.doc, data, path)
        item.only("text", "points")
        text = item.string("text")
        items.append(RubricItem(text=text.strip(), points=float(item.number("points", minimum=-float("inf")))))
    texts = [i.text for i in items]
    for k, text in enumerate(texts):
        if text in texts[:k]:
            raise r.error(f"{r.sub('rubric')}[{k}]", f"repeats the item {text!r}")
    return tuple(items)


def _question(r: Reader, outer: Inherited, base: Path | None = None) -> Question:
    r.only(
        "id",
        "title",
        "points",
        "checks",
        "visible",
        "manual",
        "unchanged_scores_zero",
        "skeleton_fails",
        "skeleton_passes",
        "rubric",
        *Inherited.keys(Level.QUESTION),
    )
    settings = inherit(r, Level.QUESTION, outer)
    qid = r.string("id", pattern=ID_RE)
    title = r.string("title", qid)
    points = float(r.number("points"))
    items = r.items("checks")
    manual = r.flag("manual", False)
    if manual:
        if items:
            raise r.error(r.sub("checks"), "a manually graded question ('manual: true') has no checks")
        for flag in ("skeleton_fails", "skeleton_passes"):
            if r.has(flag):
                raise r.error(r.sub(flag), "a question graded by a person ('manual: true') runs no tests")
        return Question(
            id=qid,
            title=title,
            points=points,
            checks=(),
            visible=r.flag("visible", True),
            manual=True,
            unchanged_scores_zero=r.flag("unchanged_scores_zero", False),
            rubric=_rubric(r),
        )
    if r.has("rubric"):
        raise r.error(r.sub("rubric"), "only a question graded by a person ('manual: true') has a rubric")
    if r.flag("unchanged_scores_zero", False):
        raise r.error(
            r.sub("unchanged_scores_zero"),
            "only a question graded by a person ('manual: true') has an answer to leave unchanged",
        )
    if not items:
        raise r.error(r.sub("checks"), "must list at least one check")
    checks = tuple(_check(Reader(r.doc, c, p), qid, i, settings, base) for i, (p, c) in enumerate(items))
    if any(c.points is not None for c in checks):
        if any(c.points is None for c in checks):
            raise r.error(r.sub("checks"), "give 'points' to every check or to none of them")
        total = sum(c.points or 0 for c in checks)
        if abs(total - points) > 1e-9:
            raise r.error(r.sub("points"), f"is {points:g} but its checks' points add up to {total:g}")
    fails, passes = r.flag("skeleton_fails", False), r.flag("skeleton_passes", False)
    if fails and passes:
        raise r.error(r.sub("skeleton_passes"), "a skeleton cannot both fail and pass a question: give one of them")
    return Question(qid, title, points, checks, r.flag("visible", True), skeleton_fails=fails, skeleton_passes=passes)


def _variants(r: Reader, default_count: int) -> VariantSpec:
    r.only("count", "seed", "inputs", "per_submission")
    inputs_raw = r.get("inputs", {})
    if not isinstance(inputs_raw, dict):
        raise r.error(r.sub("inputs"), f"must be a mapping of name to expression (or null), got {describe(inputs_raw)}")
    inputs = []
    for name, expr in inputs_raw.items():
        path = f"{r.sub('inputs')}.{name}"
        if not str(name).isidentifier():
            raise r.error(path, "must be a variable name")
        if expr is not None and not isinstance(expr, str):
            raise r.error(
                path,
                f"must be an expression, null (random values of the same shape) or {KEEP!r} "
                f"(never varied), got {describe(expr)}",
            )
        if expr is not None and expr.strip() == KEEP:
            expr = KEEP
        elif expr is not None:
            try:
                compile(expr, "<config>", "eval")
            except SyntaxError as exc:
                raise r.error(path, f"is not a Python expression: {exc.msg}") from None
        inputs.append((str(name), expr))
    return VariantSpec(
        count=r.whole("count", default_count, minimum=0),
        seed=r.whole("seed", 0),
        inputs=tuple(inputs),
        per_submission=r.flag("per_submission", VariantSpec.per_submission),
    )


def _student_install(r: Reader) -> str:
    source: str = r.string("student_install", WHEEL).strip()
    if source != WHEEL and not (_REQUIREMENT.match(source) or _URL.match(source)):
        raise r.error(
            r.sub("student_install"),
            f"must be 'wheel', a package requirement (notebook-grader==0.2.0) or a URL pip installs from "
            f"(git+https://github.com/ORG/REPO@TAG), got {source!r}",
        )
    return source


def _assignment(
    r: Reader,
    name: str,
    root: Path,
    defaults: Inherited,
    default_variants: int,
    base_limits: Limits,
    student_install: str = WHEEL,
) -> Assignment:
    r.only(
        "title",
        "solution",
        "skeleton",
        "data",
        "given",
        "questions",
        "limits",
        "variants",
        "reference_bundle",
        "preload",
        "seed_each_cell",
        "inert_lines",
        "blank_released_as",
        "answer_ids",
        "per_student",
        "notes",
        "late",
        *Inherited.keys(Level.ASSIGNMENT),
    )
    if not ID_RE.match(name):
        raise r.error(r.path, f"assignment names must be simple identifiers, got {name!r}")
    solution = root / r.string("solution", f"solutions/{name}/{name}.ipynb")
    skeleton = root / r.string("skeleton", f"assignments/{name}/{name}.ipynb")
    bundle_name = r.string("reference_bundle", "")
    bundle = root / bundle_name if bundle_name else None
    if bundle is not None and not bundle.is_file():
        raise r.error(r.sub("reference_bundle"), f"names {bundle_name}, which does not exist")
    if bundle is None and not solution.is_file():
        raise r.error(r.sub("solution"), f"names {solution.relative_to(root)}, which does not exist")
    data = r.str_list("data")
    beside = "the reference bundle" if bundle is not None else "the solution"
    for i, rel in enumerate(data):
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise r.error(f"{r.sub('data')}[{i}]", f"must be a path inside the folder of {beside}")
        if not ((bundle or solution).parent / rel).is_file():
            raise r.error(f"{r.sub('data')}[{i}]", f"names {rel}, which is not a file next to {beside}")
    settings = inherit(r, Level.ASSIGNMENT, defaults)
    questions = tuple(
        _question(Reader(r.doc, q, p), settings, (bundle or solution).parent) for p, q in r.items("questions")
    )
    if not questions:
        raise r.error(r.sub("questions"), "must list at least one question")
    seen: set[str] = set()
    for i, q in enumerate(questions):
        if q.id in seen:
            raise r.error(f"{r.sub('questions')}[{i}].id", f"repeats the question id {q.id!r}")
        seen.add(q.id)
    given = r.str_list("given")
    preload = r.str_list("preload")
    for i, module in enumerate(preload):
        if not all(part.isidentifier() for part in module.split(".")):
            raise r.error(f"{r.sub('preload')}[{i}]", f"must be a module name such as scipy.linalg, got {module!r}")
    variants = _variants(r.reader("variants"), default_variants)
    for varied, _ in variants.inputs:
        if varied not in given:
            # A rule for a name outside `given` would be silently ignored: the variants would test less.
            raise r.error(
                f"{r.sub('variants')}.inputs.{varied}",
                f"is not a given input of this assignment: add {varied} to `given` (or remove its rule)",
            )
    per_student = per_student_spec(r, given, variants) if r.has("per_student") else None
    # The bundle's name is left out: an assignment graded from its bundle has the digest it was built with.
    # The late policy is applied to graded cards, after grading: changing it never grades again.
    section = {k: v for k, v in r.data.items() if k not in ("reference_bundle", "late")}
    if any(c.is_test for q in questions for c in q.checks):
        # A test is hashed as its code, wherever it was written (config.yaml or checks.py): editing
        # checks.py re-grades, and a reduced config with the code inline has the same digest.
        section = json.loads(json.dumps(section, default=str))
        for q_raw, q in zip(section.get("questions") or [], questions, strict=False):
            for c_raw, c in zip((q_raw or {}).get("checks") or [], q.checks, strict=False):
                if c.is_test and isinstance(c_raw, dict):
                    c_raw["test"] = c.target
    digest = hashlib.sha256(json.dumps(section, sort_keys=True, default=str).encode()).hexdigest()
    return Assignment(
        name=name,
        title=r.string("title", name),
        solution=solution,
        skeleton=skeleton,
        data=data,
        given=given,
        questions=questions,
        limits=_limits(r.reader("limits"), base_limits),
        variants=variants,
        config_digest=digest,
        bundle=bundle,
        preload=tuple(preload),
        student_install=student_install,
        seed_each_cell=_cell_seed(r),
        inert_lines=_inert_lines(r),
        blank_released_as=r.string("blank_released_as", ""),
        answer_ids=_answer_ids(r),
        per_student=per_student,
        notes=tuple(n.strip() for n in r.str_list("notes") if n.strip()),
        late=late.policy(r.reader("late"), root) if r.has("late") else None,
        **settings.fields_of(Assignment),
    )


def _inert_lines(r: Reader) -> tuple[str, ...]:
    """``inert_lines``: regular expressions, each one a whole line (after its indentation) runs as ``pass``."""
    patterns = r.str_list("inert_lines")
    for i, pattern in enumerate(patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise r.error(f"{r.sub('inert_lines')}[{i}]", f"is not a regular expression: {exc}") from None
    return patterns


def _cell_seed(r: Reader) -> CellSeed | None:
    """``seed_each_cell: 42``, or ``seed_each_cell: {variable: rng_seed, value: 42}``."""
    raw = r.data.get("seed_each_cell")
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return CellSeed(seed=raw)
    if isinstance(raw, dict):
        sub = r.reader("seed_each_cell")
        sub.only("variable", "value")
        variable, value = raw.get("variable"), raw.get("value")
        if not (isinstance(variable, str) and variable.isidentifier()):
            raise sub.error(sub.sub("variable"), f"must be a variable name such as rng_seed, got {describe(variable)}")
        if isinstance(value, bool) or not isinstance(value, int):
            raise sub.error(sub.sub("value"), f"must be a whole number, got {describe(value)}")
        return CellSeed(seed=value, variable=variable)
    raise r.error(
        r.sub("seed_each_cell"), f"must be a whole number or a mapping with 'variable' and 'value', got {describe(raw)}"
    )


def _scorecard(r: Reader, assignments: dict[str, Assignment]) -> ScorecardSettings:
    r.only("formats", "show_expected", "due", "rounding", "traceback_lines", "visibility")
    formats = r.str_list("formats") or (Format.YAML,)
    for i, f in enumerate(formats):
        if f not in names(Format):
            raise r.error(f"{r.sub('formats')}[{i}]", f"must be one of {', '.join(names(Format))}, got {f!r}")
    due = r.get("due")
    if due is not None:
        if isinstance(due, (date, datetime)):
            due = due.isoformat()
        try:
            datetime.fromisoformat(str(due))
        except ValueError:
            raise r.error(
                r.sub("due"), f"must be an ISO date or date and time (2025-05-01T23:59), got {describe(due)}"
            ) from None
        due = str(due)
    show_expected = ShowExpected(r.choice("show_expected", names(ShowExpected), ShowExpected.NEVER))
    if show_expected == ShowExpected.AFTER_DUE and due is None:
        raise r.error(r.sub("show_expected"), "is after_due, which needs scorecard.due")
    vis = r.reader("visibility")
    levels = []
    for name in vis.data:
        if name not in assignments:
            raise vis.error(vis.sub(str(name)), f"names no assignment (known: {', '.join(assignments)})")
        qr = vis.reader(str(name))
        for qid in qr.data:
            if qid not in {q.id for q in assignments[name].questions}:
                raise qr.error(qr.sub(str(qid)), f"names no question of {name}")
            level = QuestionVisibility(qr.choice(str(qid), names(QuestionVisibility), QuestionVisibility.VISIBLE))
            if level == QuestionVisibility.AFTER_DUE and due is None:
                raise qr.error(qr.sub(str(qid)), "is after_due, which needs scorecard.due")
            levels.append((str(name), str(qid), level))
    return ScorecardSettings(
        formats=tuple(Format(f) for f in dict.fromkeys(formats)),
        show_expected=show_expected,
        due=due,
        rounding=r.whole("rounding", 2),
        traceback_lines=r.whole("traceback_lines", 8, minimum=1),
        visibility=tuple(levels),
    )


# libyaml's parser where PyYAML has it (ten times quicker on a course file); the same nodes, marks
# and errors as the pure-Python one.
COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(path: str | Path) -> Course:
    """Read and validate a course file. Raises ConfigError with file, key path and line."""
    path = Path(path)
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(shown, "", "does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(shown, "", f"cannot be read: {exc}") from None
    try:
        node = yaml.compose(text, Loader=COMPOSER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(shown, "", f"is not valid YAML: {problem}", mark.line + 1 if mark else None) from None
    if node is None:
        raise ConfigError(shown, "", "is empty")
    doc = Document(shown)
    data = doc.build(node, "")
    top = Reader(doc, data, "")
    top.only("course", "assignments", "scorecard", "review")
    review = top.reader("review")
    review.only("graders_group")  # the Hub group whose members grade in `grader review --hub`
    course = top.reader("course")
    course.only("name", "defaults", "cache_dir", "student_install")
    student_install = _student_install(course)
    d = course.reader("defaults")
    d.only("limits", "variants", *Inherited.keys(Level.COURSE))
    defaults = inherit(d, Level.COURSE, Inherited())
    default_variants = d.whole("variants", 2)
    base_limits = _limits(d.reader("limits"), Limits())
    root = path.resolve().parent
    raw = top.get("assignments")
    if not isinstance(raw, dict) or not raw:
        raise top.error("assignments", "must map assignment names to their settings")
    assignments = {
        str(name): _assignment(
            Reader(doc, a, f"assignments.{name}"),
            str(name),
            root,
            defaults,
            default_variants,
            base_limits,
            student_install,
        )
        for name, a in raw.items()
    }
    return Course(
        file=path,
        root=root,
        name=course.string("name", root.name),
        defaults_limits=base_limits,
        assignments=assignments,
        scorecard=_scorecard(top.reader("scorecard"), assignments),
        cache_dir=root / course.string("cache_dir", ".grader-cache"),
        review=ReviewSettings(graders_group=review.string("graders_group", "")),
    )
