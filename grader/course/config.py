"""config.yaml -> frozen, typed objects, validated once.

Every error names the file, the key path and the line, e.g.
``config.yaml:14: assignments.attention_numpy.questions[2].points must be a number, got 'two'``.
Unknown keys are errors too, so a typo never silently changes how a course is graded.

Settings are looked up in one order: check -> assignment -> course defaults -> built-in default.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from grader.errors import ConfigError

PROPERTIES = ("shape", "dtype_kind", "finite", "rows_sum_to_one", "causal")
VISIBILITY = ("never", "after_due", "always")
QUESTION_VISIBILITY = ("visible", "after_due", "hidden")
FORMATS = ("yaml", "json", "md", "html", "gradescope", "classroom", "junit", "gradebook", "report")
ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Limits:
    """Resource limits for one notebook run; enforced by the executor and the sandbox."""

    cell_timeout: float = 30.0  # wall-clock seconds per cell
    notebook_timeout: float = 300.0  # wall-clock seconds for the whole notebook
    cpu_time: int = 300  # CPU seconds
    memory_mb: int = 4096  # address space
    output_kb: int = 256  # stdout + stderr + display data kept per cell
    processes: int = 64  # processes the student may have at once
    open_files: int = 256
    file_size_mb: int = 64  # largest file the student may write
    capture_mb: int = 64  # largest payload of captured values
    disk_mb: int = 256  # the working directory, /tmp and /dev/shm: each a tmpfs of this size


@dataclass(frozen=True)
class Hint:
    """A typical wrong computation, evaluated in the solution's namespace, and what it means."""

    expr: str
    message: str


@dataclass(frozen=True)
class Check:
    """One comparison: a variable or expression of the student's against the solution's."""

    id: str  # stable, e.g. "qkv/0"
    kind: str  # "value" | "expr"
    target: str  # a variable name or an expression
    points: float | None
    rtol: float
    atol: float
    strict_types: bool
    seed: int | None = None
    before: str | None = None  # capture just before the first cell that assigns this name
    properties: tuple[str, ...] = ()
    compare: bool = True
    hints: tuple[Hint, ...] = ()
    hidden: bool = False  # students see pass/fail only
    public: bool = False  # the reference value may be given to students for self-checks

    @property
    def label(self) -> str:
        return f"`{self.target}`"


@dataclass(frozen=True)
class Question:
    id: str
    title: str
    points: float
    checks: tuple[Check, ...]
    visible: bool = True  # shown in student-facing feedback at all

    @property
    def split(self) -> bool:
        """Whether points are split across checks (partial credit) or all-or-nothing."""
        return any(c.points is not None for c in self.checks)


@dataclass(frozen=True)
class VariantSpec:
    """How the given inputs are varied to catch typed-in answers (see grader.variants)."""

    count: int = 2
    seed: int = 0
    inputs: tuple[tuple[str, str | None], ...] = ()  # (name, expression or None for random)


@dataclass(frozen=True)
class Assignment:
    name: str
    title: str
    solution: Path  # the solution notebook
    skeleton: Path  # the generated student notebook
    data: tuple[str, ...]  # files relative to the solution folder, copied for students
    given: tuple[str, ...]
    questions: tuple[Question, ...]
    limits: Limits
    rtol: float
    atol: float
    strict_types: bool
    variants: VariantSpec
    config_digest: str  # hash of this assignment's section, for caches

    @property
    def max_score(self) -> float:
        return sum(q.points for q in self.questions)

    @property
    def solution_dir(self) -> Path:
        return self.solution.parent

    @property
    def checks(self) -> tuple[Check, ...]:
        return tuple(c for q in self.questions for c in q.checks)

    def question(self, qid: str) -> Question:
        for q in self.questions:
            if q.id == qid:
                return q
        raise KeyError(qid)


@dataclass(frozen=True)
class ScorecardSettings:
    """What a run writes and what students see; the defaults never show a reference value."""

    formats: tuple[str, ...] = ("yaml",)
    show_expected: str = "never"  # never | after_due | always
    due: str | None = None  # ISO date or datetime (UTC when no zone is given)
    rounding: int = 2  # decimals of points
    traceback_lines: int = 8  # frames kept, all in the student's own cells
    # (assignment, question id, visible | after_due | hidden): when a question's result is shown
    visibility: tuple[tuple[str, str, str], ...] = ()

    def past_due(self, now: datetime | None = None) -> bool:
        if not self.due:
            return False
        due = datetime.fromisoformat(self.due)
        if due.tzinfo is None:
            due = due.replace(tzinfo=timezone.utc)
        return (now or datetime.now(timezone.utc)) > due

    def question_visibility(self, assignment: str, question: Question) -> str:
        """visible | after_due | hidden; a question with ``visible: false`` is hidden by default."""
        for a, q, level in self.visibility:
            if a == assignment and q == question.id:
                return level
        return "visible" if question.visible else "hidden"

    def shown(self, assignment: str, question: Question, now: datetime | None = None) -> bool:
        """Whether students may see this question's result now."""
        level = self.question_visibility(assignment, question)
        return level == "visible" or (level == "after_due" and self.past_due(now))


@dataclass(frozen=True)
class Course:
    file: Path
    root: Path
    name: str
    defaults_limits: Limits
    assignments: dict[str, Assignment] = field(hash=False)
    scorecard: ScorecardSettings = ScorecardSettings()
    cache_dir: Path = Path(".grader-cache")

    def assignment(self, name: str) -> Assignment:
        return self.assignments[name]


# --------------------------------------------------------------------------------------------
# Reading YAML with line numbers


class _Doc:
    """Plain data from YAML plus the line of every key path, for error messages."""

    def __init__(self, file: str):
        self.file = file
        self.lines: dict[str, int] = {}

    def build(self, node: yaml.Node, path: str) -> Any:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for knode, vnode in node.value:
                key = knode.value if isinstance(knode, yaml.ScalarNode) else str(knode.value)
                sub = f"{path}.{key}" if path else str(key)
                if key in out:
                    raise ConfigError(self.file, sub, "is given twice", knode.start_mark.line + 1)
                self.lines[sub] = knode.start_mark.line + 1
                out[key] = self.build(vnode, sub)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(v, f"{path}[{i}]") for i, v in enumerate(node.value)]
        return _scalar(node)



def _scalar(node: yaml.Node) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


class _Reader:
    """Typed accessors over one mapping that report errors with key path and line."""

    def __init__(self, doc: _Doc, data: Any, path: str):
        self.doc, self.path = doc, path
        if not isinstance(data, dict):
            raise self._err(path, f"must be a mapping, got {_kind(data)}")
        self.data = data

    def _err(self, path: str, message: str) -> ConfigError:
        line = None
        probe = path
        while probe:
            if probe in self.doc.lines:
                line = self.doc.lines[probe]
                break
            up = re.sub(r"(\.[^.\[\]]+|\[\d+\])$", "", probe)
            if up == probe:
                break
            probe = up
        return ConfigError(self.doc.file, path, message, line)

    def sub(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def only(self, *allowed: str) -> None:
        for key in self.data:
            if key not in allowed:
                near = ", ".join(sorted(allowed))
                raise self._err(self.sub(str(key)), f"is not a known key here (known: {near})")

    def has(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def str(self, key: str, default: Any = ..., *, pattern: re.Pattern[str] | None = None) -> Any:
        if key not in self.data:
            if default is ...:
                raise self._err(self.sub(key), "is required")
            return default
        value = self.data[key]
        if not isinstance(value, str) or not value.strip():
            raise self._err(self.sub(key), f"must be a non-empty string, got {_kind(value)}")
        if pattern and not pattern.match(value):
            raise self._err(self.sub(key), f"must be a simple identifier, got {value!r}")
        return value

    def number(self, key: str, default: Any = ..., *, minimum: float = 0.0) -> Any:
        if key not in self.data:
            if default is ...:
                raise self._err(self.sub(key), "is required")
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._err(self.sub(key), f"must be a number, got {_kind(value)}")
        if value < minimum:
            raise self._err(self.sub(key), f"must be at least {minimum:g}, got {value!r}")
        return value

    def int(self, key: str, default: Any = ..., *, minimum: int = 0) -> Any:
        value = self.number(key, default, minimum=minimum)
        if value is not None and value is not default and not isinstance(value, int):
            raise self._err(self.sub(key), f"must be a whole number, got {value!r}")
        return value

    def bool(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self._err(self.sub(key), f"must be true or false, got {_kind(value)}")
        return value

    def str_list(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._err(self.sub(key), f"must be a list of strings, got {_kind(value)}")
        return tuple(value)

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.data.get(key, default)
        if value not in choices:
            raise self._err(self.sub(key), f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def reader(self, key: str) -> _Reader:
        return _Reader(self.doc, self.data.get(key, {}), self.sub(key))

    def items(self, key: str) -> list[tuple[str, Any]]:
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise self._err(self.sub(key), f"must be a list, got {_kind(value)}")
        return [(f"{self.sub(key)}[{i}]", v) for i, v in enumerate(value)]


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    return {dict: "a mapping", list: "a list"}.get(type(value), type(value).__name__)


# --------------------------------------------------------------------------------------------
# Building the typed objects


def _limits(r: _Reader, base: Limits) -> Limits:
    names = [f.name for f in dataclasses.fields(Limits)]
    r.only(*names)
    values = {}
    for f in dataclasses.fields(Limits):
        default = getattr(base, f.name)
        if f.type in ("int", int):
            values[f.name] = r.int(f.name, default, minimum=1)
        else:
            values[f.name] = float(r.number(f.name, default, minimum=0.001))
    return Limits(**values)


def _hint(r: _Reader) -> Hint:
    r.only("expr", "message")
    expr = r.str("expr")
    _check_expr(r, "expr", expr)
    return Hint(expr=expr, message=r.str("message"))


def _check_expr(r: _Reader, key: str, expr: str) -> None:
    try:
        compile(expr, "<config>", "eval")
    except SyntaxError as exc:
        raise r._err(r.sub(key), f"is not a Python expression: {exc.msg}") from None


def _check(r: _Reader, qid: str, index: int, inherit: dict[str, Any]) -> Check:
    r.only(
        "value", "expr", "points", "rtol", "atol", "strict_types", "seed", "before",
        "properties", "compare", "hints", "hidden", "public",
    )
    if r.has("value") == r.has("expr"):
        raise r._err(r.path, "needs exactly one of 'value' (a variable) or 'expr' (an expression)")
    kind = "value" if r.has("value") else "expr"
    target = r.str(kind)
    if kind == "value" and not target.isidentifier():
        raise r._err(r.sub("value"), f"must be a variable name, got {target!r} (use 'expr' for expressions)")
    _check_expr(r, kind, target)
    props = r.str_list("properties")
    for i, p in enumerate(props):
        if p not in PROPERTIES:
            raise r._err(f"{r.sub('properties')}[{i}]", f"must be one of {', '.join(PROPERTIES)}, got {p!r}")
    compare = r.bool("compare", True)
    if not compare and not props:
        raise r._err(r.path, "compares nothing: set 'compare: true' or list 'properties'")
    seed = r.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise r._err(r.sub("seed"), f"must be a whole number, got {_kind(seed)}")
    before = r.get("before")
    if before is not None and not (isinstance(before, str) and before.isidentifier()):
        raise r._err(r.sub("before"), f"must be a variable name, got {_kind(before)}")
    hints = tuple(_hint(_Reader(r.doc, h, p)) for p, h in r.items("hints"))
    points = r.number("points", None)
    return Check(
        id=f"{qid}/{index}",
        kind=kind,
        target=target,
        points=None if points is None else float(points),
        rtol=float(r.number("rtol", inherit["rtol"])),
        atol=float(r.number("atol", inherit["atol"])),
        strict_types=r.bool("strict_types", inherit["strict_types"]),
        seed=seed,
        before=before,
        properties=props,
        compare=compare,
        hints=hints,
        hidden=r.bool("hidden", False),
        public=r.bool("public", False),
    )


def _question(r: _Reader, inherit: dict[str, Any]) -> Question:
    r.only("id", "title", "points", "checks", "visible")
    qid = r.str("id", pattern=ID_RE)
    title = r.str("title", qid)
    points = float(r.number("points"))
    items = r.items("checks")
    if not items:
        raise r._err(r.sub("checks"), "must list at least one check")
    checks = tuple(_check(_Reader(r.doc, c, p), qid, i, inherit) for i, (p, c) in enumerate(items))
    if any(c.points is not None for c in checks):
        if any(c.points is None for c in checks):
            raise r._err(r.sub("checks"), "give 'points' to every check or to none of them")
        total = sum(c.points or 0 for c in checks)
        if abs(total - points) > 1e-9:
            raise r._err(r.sub("points"), f"is {points:g} but its checks' points add up to {total:g}")
    return Question(id=qid, title=title, points=points, checks=checks, visible=r.bool("visible", True))


def _variants(r: _Reader, default_count: int) -> VariantSpec:
    r.only("count", "seed", "inputs")
    inputs_raw = r.get("inputs", {})
    if not isinstance(inputs_raw, dict):
        raise r._err(r.sub("inputs"), f"must be a mapping of name to expression (or null), got {_kind(inputs_raw)}")
    inputs = []
    for name, expr in inputs_raw.items():
        path = f"{r.sub('inputs')}.{name}"
        if not str(name).isidentifier():
            raise r._err(path, "must be a variable name")
        if expr is not None and not isinstance(expr, str):
            raise r._err(path, f"must be an expression or null (random values of the same shape), got {_kind(expr)}")
        if expr is not None:
            try:
                compile(expr, "<config>", "eval")
            except SyntaxError as exc:
                raise r._err(path, f"is not a Python expression: {exc.msg}") from None
        inputs.append((str(name), expr))
    return VariantSpec(count=r.int("count", default_count, minimum=0), seed=r.int("seed", 0), inputs=tuple(inputs))


def _assignment(r: _Reader, name: str, root: Path, defaults: dict[str, Any], base_limits: Limits) -> Assignment:
    r.only(
        "title", "solution", "skeleton", "data", "given", "questions", "limits", "rtol", "atol",
        "strict_types", "variants",
    )
    if not ID_RE.match(name):
        raise r._err(r.path, f"assignment names must be simple identifiers, got {name!r}")
    solution = root / r.str("solution", f"solutions/{name}/{name}.ipynb")
    skeleton = root / r.str("skeleton", f"assignments/{name}/{name}.ipynb")
    if not solution.is_file():
        raise r._err(r.sub("solution"), f"names {solution.relative_to(root)}, which does not exist")
    data = r.str_list("data")
    for i, rel in enumerate(data):
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise r._err(f"{r.sub('data')}[{i}]", "must be a path inside the solution folder")
        if not (solution.parent / rel).is_file():
            raise r._err(f"{r.sub('data')}[{i}]", f"names {rel}, which is not a file next to the solution")
    inherit = {
        "rtol": float(r.number("rtol", defaults["rtol"])),
        "atol": float(r.number("atol", defaults["atol"])),
        "strict_types": r.bool("strict_types", defaults["strict_types"]),
    }
    questions = tuple(_question(_Reader(r.doc, q, p), inherit) for p, q in r.items("questions"))
    if not questions:
        raise r._err(r.sub("questions"), "must list at least one question")
    seen: set[str] = set()
    for i, q in enumerate(questions):
        if q.id in seen:
            raise r._err(f"{r.sub('questions')}[{i}].id", f"repeats the question id {q.id!r}")
        seen.add(q.id)
    given = r.str_list("given")
    variants = _variants(r.reader("variants"), defaults["variants"])
    digest = hashlib.sha256(json.dumps(r.data, sort_keys=True, default=str).encode()).hexdigest()
    return Assignment(
        name=name,
        title=r.str("title", name),
        solution=solution,
        skeleton=skeleton,
        data=data,
        given=given,
        questions=questions,
        limits=_limits(r.reader("limits"), base_limits),
        rtol=inherit["rtol"],
        atol=inherit["atol"],
        strict_types=inherit["strict_types"],
        variants=variants,
        config_digest=digest,
    )


def _scorecard(r: _Reader, assignments: dict[str, Assignment]) -> ScorecardSettings:
    r.only("formats", "show_expected", "due", "rounding", "traceback_lines", "visibility")
    formats = r.str_list("formats") or ("yaml",)
    for i, f in enumerate(formats):
        if f not in FORMATS:
            raise r._err(f"{r.sub('formats')}[{i}]", f"must be one of {', '.join(FORMATS)}, got {f!r}")
    due = r.get("due")
    if due is not None:
        if isinstance(due, (date, datetime)):
            due = due.isoformat()
        try:
            datetime.fromisoformat(str(due))
        except ValueError:
            raise r._err(r.sub("due"), f"must be an ISO date or date and time (2025-05-01T23:59), got {_kind(due)}") from None
        due = str(due)
    show_expected = r.choice("show_expected", VISIBILITY, "never")
    if show_expected == "after_due" and due is None:
        raise r._err(r.sub("show_expected"), "is after_due, which needs scorecard.due")
    vis = r.reader("visibility")
    levels = []
    for name in vis.data:
        if name not in assignments:
            raise vis._err(vis.sub(str(name)), f"names no assignment (known: {', '.join(assignments)})")
        qr = vis.reader(str(name))
        for qid in qr.data:
            if qid not in {q.id for q in assignments[name].questions}:
                raise qr._err(qr.sub(str(qid)), f"names no question of {name}")
            level = qr.choice(str(qid), QUESTION_VISIBILITY, "visible")
            if level == "after_due" and due is None:
                raise qr._err(qr.sub(str(qid)), "is after_due, which needs scorecard.due")
            levels.append((str(name), str(qid), level))
    return ScorecardSettings(
        formats=tuple(dict.fromkeys(formats)),
        show_expected=show_expected,
        due=due,
        rounding=r.int("rounding", 2),
        traceback_lines=r.int("traceback_lines", 8, minimum=1),
        visibility=tuple(levels),
    )


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
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(shown, "", f"is not valid YAML: {problem}", mark.line + 1 if mark else None) from None
    if node is None:
        raise ConfigError(shown, "", "is empty")
    doc = _Doc(shown)
    data = doc.build(node, "")
    top = _Reader(doc, data, "")
    top.only("course", "assignments", "scorecard")
    course = top.reader("course")
    course.only("name", "defaults", "cache_dir")
    d = course.reader("defaults")
    d.only("rtol", "atol", "strict_types", "limits", "variants")
    defaults = {
        "rtol": float(d.number("rtol", 1e-5)),
        "atol": float(d.number("atol", 1e-8)),
        "strict_types": d.bool("strict_types", False),
        "variants": d.int("variants", 2),
    }
    base_limits = _limits(d.reader("limits"), Limits())
    root = path.resolve().parent
    raw = top.get("assignments")
    if not isinstance(raw, dict) or not raw:
        raise top._err("assignments", "must map assignment names to their settings")
    assignments = {
        str(name): _assignment(_Reader(doc, a, f"assignments.{name}"), str(name), root, defaults, base_limits)
        for name, a in raw.items()
    }
    return Course(
        file=path,
        root=root,
        name=course.str("name", root.name),
        defaults_limits=base_limits,
        assignments=assignments,
        scorecard=_scorecard(top.reader("scorecard"), assignments),
        cache_dir=root / course.str("cache_dir", ".grader-cache"),
    )
