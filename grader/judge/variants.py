"""Variants: the notebook's given inputs replaced by values the student never saw.

A notebook prints every intermediate result, and those printouts circulate. Typing them in, or
writing code that only works for the given sizes, matches the reference on the notebook's own
data. So each submission is run again with each *given* input (declared per assignment) replaced
right after the cell that defines it, and the solution is run the same way for the variant's
reference values. A question passes only when it matches on the original data and on every
variant.

Variant values are made here, in the grader's process, from the solution's own given values:
random numbers of the same shape and dtype from a seeded generator by default, or an expression
the instructor writes in config.yaml (with ``rng``, ``np``, ``value``, ``shape`` and ``variant``
in scope). Every given input is varied unless its rule says ``keep``: rules for some inputs never
silently stop the others from being tested. They are hidden from students: neither the values nor
the seeds are written to any file students get.

The course's seed (``variants.seed``) gives the variants ``grader validate`` checks. With
``variants.per_submission`` each submission also gets variants of its own, from a seed derived
from its content and a course secret (``submission_seed``), so inputs that leak from one
submission's run serve no other: the secret comes from ``GRADER_VARIANT_SECRET``, else from a file
made once in the course's cache (``variant_secret``).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import hmac
import os
import secrets
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grader import capture
from grader.capture import Value
from grader.course.model import KEEP, Assignment
from grader.errors import NotebookError, SolutionError
from grader.notebook import CellInfo, input_definitions, parse_cell
from grader.notebook.inject import inject_after

GIVEN_PREFIX = "__given__/"


@dataclass(frozen=True)
class Variant:
    number: int  # 1-based, as shown in scorecards
    values: dict[str, dict[str, Any]]  # name -> encoded plain data

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.values)


def varied_names(assignment: Assignment) -> tuple[str, ...]:
    """The inputs that variants replace: every given input, in ``given`` order, except those whose
    rule says ``keep``. A given input without a rule is varied at random, so declaring rules for
    some inputs never silently stops the others from being tested."""
    rules = dict(assignment.variants.inputs)
    return tuple(n for n in assignment.given if rules.get(n) != KEEP)


@functools.lru_cache(maxsize=32)
def _solution_definitions(path: Path, mtime_ns: int, names: tuple[str, ...]) -> dict[str, str]:
    """Each varied input -> the expression (``ast.dump``) the solution first assigns it alone."""
    from grader import notebook

    out: dict[str, str] = {}
    for cell in notebook.read(path):
        try:
            tree = ast.parse(notebook.fill_blanks(cell.source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for stmt in tree.body:
            target = _assigned_name(stmt)
            if target in names and target not in out and isinstance(stmt, ast.Assign):
                out[target] = ast.dump(stmt.value)
    return out


def _assigned_name(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    return None


def aliases(assignment: Assignment, sources: list[str], infos: list[CellInfo]) -> dict[str, tuple[str, int, int]]:
    """The student's own names for varied inputs: a name assigned the very expression the solution
    defines a varied input with (``x = embedding_layer(token_ids)`` where the solution has
    ``embeddings = embedding_layer(token_ids)``), before the notebook defines the input itself (the
    name the exercise asks for assigned only at the end: ``embeddings = x``). Name -> (the varied
    input, cell position, statement index): a variant puts its input in under that name there too,
    so the answers computed from it follow the variant as the solution's do."""
    names = varied_names(assignment)
    if not names:
        return {}
    try:
        solution = _solution_definitions(assignment.solution, assignment.solution.stat().st_mtime_ns, names)
    except (OSError, NotebookError):
        return {}
    if not solution:
        return {}
    defined = input_definitions(infos, names, assignment.given)
    out: dict[str, tuple[str, int, int]] = {}
    for pos, source in enumerate(sources):
        parsed = parse_cell(source)  # the notebook's own reading first: a cell it cannot read has no place
        if parsed.syntax_error is not None:
            continue
        try:  # a student's cell: nested past the parser's depth, or a null byte (ValueError on 3.11)
            body = ast.parse(source).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if len(body) != len(parsed.statements):
            continue  # read otherwise by the notebook's own parser (magics): no place to trust
        for k, stmt in enumerate(body):
            alias = _assigned_name(stmt)
            if alias is None or alias in names or alias in out or not isinstance(stmt, ast.Assign):
                continue
            try:
                value = ast.dump(stmt.value)
            except RecursionError:
                continue
            for name, expression in solution.items():
                first = defined.get(name) or []
                if value == expression and (not first or first[0] > (pos, k)):
                    out[alias] = (name, pos, k)
                    break
    return out


def with_injections(
    source: str,
    names: tuple[str, ...],
    statements: dict[str, set[int]] | None = None,
    extra: dict[int, list[str]] | None = None,
) -> str:
    """The cell with a call that swaps in the variant value right after each statement that
    defines a varied name afresh (binds it without reading it), or after the statements right
    behind it that only rebuild it from itself (``ids = tok(words)`` then ``ids = torch.tensor([ids])``):
    the variant is made from the value the name has once its cell ran, so it goes in where the
    name has that form. Placed as ``notebook.inject.inject_after`` places it: on the statement's own
    last line, or after a block, so line numbers (the student's tracebacks) stay as they are. ``statements`` narrows, per name, the statements (by
    index in the cell) that define the input at all (see ``input_definitions``); ``extra``: more
    keys to inject after given statements (an alias of an input, ``aliases``)."""
    parsed = parse_cell(source)  # cached: every variant run rewrites the same cells
    if parsed.syntax_error is not None:
        return source
    flow = parsed.statements
    calls: dict[int, list[str]] = {}  # statement -> names; `a = 1; b = 2` is two places
    for name in names:
        for i, stmt in enumerate(flow):
            if name not in stmt.binds or name in stmt.reads:
                continue
            if statements is not None and i not in statements.get(name, ()):
                continue
            while i + 1 < len(flow) and name in flow[i + 1].binds and name in flow[i + 1].reads:
                i += 1
            calls.setdefault(i, []).append(name)
    for i, keys in (extra or {}).items():
        calls.setdefault(i, []).extend(keys)
    return inject_after(source, calls)


def injection_points(
    infos: list[CellInfo], names: tuple[str, ...], given: tuple[str, ...] = ()
) -> dict[str, list[int]]:
    """For each name, the cells after which its variant value is put in place (``input_definitions``)."""
    out: dict[str, list[int]] = {}
    for name, found in input_definitions(infos, names, given).items():
        out[name] = sorted({pos for pos, _ in found})
    return out


def first_definitions(infos: list[CellInfo], names: tuple[str, ...], given: tuple[str, ...] = ()) -> dict[str, int]:
    points = injection_points(infos, names, given)
    return {n: p[0] for n, p in points.items() if p}


def undefined_given_message(assignment: Assignment, name: str) -> str:
    """What to do about a given input the solution never defines: without it no variant can run."""
    return (
        f"the given input `{name}` of {assignment.name} is never defined by its solution "
        f"({assignment.solution.name}): no statement binds it, so it cannot be varied. Fix the name in "
        f"`given:` in config.yaml to the solution's variable, or remove it from `given:`."
    )


def _rng(seed: int, number: int, name: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}/{number}/{name}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _random_like(value: Value, rng: np.random.Generator) -> Value:
    if value.kind == "array":
        arr = value.data
        if arr.dtype.kind == "f":
            new = rng.uniform(-1.0, 1.0, size=arr.shape).astype(arr.dtype)
        elif arr.dtype.kind in "iu":
            high = int(arr.max()) + 1 if arr.size else 10
            new = rng.integers(0, max(high, 2), size=arr.shape).astype(arr.dtype)
        elif arr.dtype.kind == "b":
            new = rng.integers(0, 2, size=arr.shape).astype(bool)
        elif arr.dtype.kind == "c":
            new = (rng.uniform(-1, 1, arr.shape) + 1j * rng.uniform(-1, 1, arr.shape)).astype(arr.dtype)
        else:
            return value
        return Value("array", new, origin=value.origin, dtype=value.dtype, requires_grad=value.requires_grad)
    if value.kind in ("list", "tuple"):
        return Value(value.kind, tuple(_random_like(v, rng) for v in value.data), origin=value.origin)
    if value.kind == "dict":
        return Value("dict", {k: _random_like(v, rng) for k, v in value.data.items()}, origin="dict")
    return value  # strings, booleans, None: kept, they are labels rather than data


def random_like(value: Value, rng: np.random.Generator) -> Any:
    """Random values of ``value``'s shape and dtype, as plain numpy/python data (per-student draws)."""
    return _plain(_random_like(value, rng))


def plain(value: Value) -> Any:
    """A decoded value as numpy/python data, as a rule of config.yaml sees it."""
    return _plain(value)


def _plain(value: Value) -> Any:
    """A decoded value as numpy/python data, for instructors' variant expressions."""
    if value.kind == "array":
        return value.data.copy()
    if value.kind in ("list", "tuple"):
        items = [_plain(v) for v in value.data]
        return items if value.kind == "list" else tuple(items)
    if value.kind == "dict":
        return {k: _plain(v) for k, v in value.data.items()}
    return capture.to_python(value)  # a frame, a set...: a copy of its own for the rule


SECRET_ENV = "GRADER_VARIANT_SECRET"
SECRET_FILE = "variant-secret"


def variant_secret(cache_dir: Path) -> bytes:
    """The course's secret for per-submission seeds: ``GRADER_VARIANT_SECRET`` when set (the same
    on every machine that grades the course, so shards and re-runs agree), else 32 random bytes
    written once to ``cache_dir/variant-secret``, readable by the grader's uid alone."""
    given = os.environ.get(SECRET_ENV, "")
    if given:
        return given.encode("utf-8", errors="surrogateescape")
    path = cache_dir / SECRET_FILE
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".variant-secret-")  # mode 0600
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
            os.link(tmp, path)  # whole or not at all; of graders starting at once, the first wins
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    text = path.read_text().strip()
    if len(text) < 32:
        raise OSError(f"{path} does not hold a variant secret; remove it to make a new one")
    return text.encode()


def submission_seed(secret: bytes, sha256: str, assignment: str) -> int:
    """The seed of one submission's variants: HMAC-SHA256 of the course secret over the
    submission's content hash and the assignment. Unpredictable without the secret, so a variant
    that leaks from one submission tells nothing about another's."""
    digest = hmac.new(secret, f"{sha256}/{assignment}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "little")


def attempt_seed(seed: int, attempt: int) -> int:
    """Another seed from ``seed``, for a draw that did not test what the course's variant tests."""
    if attempt == 0:
        return seed
    return int.from_bytes(hashlib.sha256(f"{seed}/attempt/{attempt}".encode()).digest()[:8], "little")


@functools.lru_cache(maxsize=256)
def _compiled_rule(rule: str, name: str) -> types.CodeType:
    """A variant rule of config.yaml, compiled once (every submission's draws evaluate it)."""
    return compile(rule, f"<variants.inputs.{name}>", "eval")


def make_variants(
    assignment: Assignment, given: dict[str, Value], *, seed: int | None = None, only: int | None = None
) -> list[Variant]:
    """The assignment's variants, from the solution's given values: with the course's seed, or
    with ``seed``. Deterministic, each variant from its own number alone: ``only`` (a number)
    makes that one, as the full list would hold it."""
    spec = assignment.variants
    seed = spec.seed if seed is None else seed
    rules = dict(spec.inputs)
    names = varied_names(assignment)
    out = []
    for number in range(1, spec.count + 1) if only is None else [only]:
        values = {}
        for name in names:
            original = given.get(name)
            if original is None:
                raise SolutionError(undefined_given_message(assignment, name))
            rng = _rng(seed, number, name)
            rule = rules.get(name)
            if rule is None:
                new = _random_like(original, rng)
            else:
                scope = {"rng": rng, "np": np, "value": _plain(original), "variant": number, "shape": original.shape}
                try:
                    result = eval(_compiled_rule(rule, name), scope)  # noqa: S307 - config
                    new = capture.decode(capture.encode(result, budget=[64 << 20]))
                except Exception as exc:  # noqa: BLE001 - the rule is any Python from config.yaml: name its failure
                    raise SolutionError(
                        f"The variant rule for `{name}` in {assignment.name} fails: {type(exc).__name__}: {exc}"
                    ) from None
                if original.kind == "array" and new.kind == "array":
                    new = Value(
                        "array",
                        new.data.astype(original.data.dtype, copy=False),
                        origin=original.origin,
                        dtype=original.dtype,
                        requires_grad=original.requires_grad,
                    )
            values[name] = capture.to_wire(new)
        out.append(Variant(number=number, values=values))
    return out
