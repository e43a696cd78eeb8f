"""Reference values: the solution run exactly as a submission is, once per content, cached on disk.

The cache key covers the grader's version, the assignment's config section, its limits and
variant rules, and the bytes of the solution and its data files, so any change computes afresh.
Each variant of the given inputs is run on the solution too, for the variant's reference values.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import __version__, capture
from grader.course.model import Assignment, Course
from grader.errors import NotebookError, ProtocolError, SolutionError
from grader.files import write_atomic
from grader.judge import variants
from grader.judge.checks import changed_answers
from grader.judge.jobs import run_notebook
from grader.run.execute import Executor
from grader.run.job import Captured
from grader.vocab import RunStatus


@dataclass
class Reference:
    captures: dict[str, Captured]
    key: str
    variants: list[variants.Variant] = field(default_factory=list)
    variant_captures: list[dict[str, Captured]] = field(default_factory=list)

    @functools.cached_property
    def changed(self) -> list[frozenset[str]]:
        """Per variant, the ids whose reference value it changes: the same for every submission."""
        return [changed_answers(self.captures, c) for c in self.variant_captures]

    def given(self) -> dict[str, capture.Value]:
        return {cid[len(variants.GIVEN_PREFIX):]: c.value for cid, c in self.captures.items()
                if cid.startswith(variants.GIVEN_PREFIX) and c.value is not None}


class References:
    """Reference values from running each solution the same way, cached on disk by content hash."""

    def __init__(self, course: Course, executor: Executor):
        self.course, self.executor = course, executor
        self.memory: dict[str, Reference] = {}
        # (config digest, limits, variants, (path, mtime, size) per file) -> key
        self._keys: dict[tuple[str, str, str, tuple[tuple[str, int, int], ...]], str] = {}

    def key(self, assignment: Assignment) -> str:
        paths = [assignment.solution] + [assignment.solution_dir / d for d in assignment.data]
        # Hashing the files is per-submission work otherwise; their stats tell when to do it again.
        stats = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths)
        memo = (assignment.config_digest, repr(assignment.limits), repr(assignment.variants), stats)
        if memo not in self._keys:
            h = hashlib.sha256()
            h.update(__version__.encode())
            h.update(assignment.config_digest.encode())
            h.update(repr(assignment.limits).encode())
            h.update(repr(assignment.variants).encode())  # a copy of the section with other variants is not the same
            for path in paths:
                h.update(path.name.encode())
                h.update(path.read_bytes())
            self._keys[memo] = h.hexdigest()
        return self._keys[memo]

    def path(self, assignment: Assignment, key: str) -> Path:
        return self.course.cache_dir / "references" / f"{assignment.name}-{key[:20]}.json"

    def get(self, assignment: Assignment) -> Reference:
        key = self.key(assignment)
        if key in self.memory:
            return self.memory[key]
        path = self.path(assignment, key)
        ref = self._load(path, key)
        if ref is None:
            ref = self._compute(assignment, key)
            self._store(path, ref)
        self.memory[key] = ref
        return ref

    @staticmethod
    def _decode(raw: dict[str, Any]) -> dict[str, Captured]:
        captures = {}
        for cid, item in raw.items():
            if "value" in item:
                captures[cid] = Captured(value=capture.decode(item["value"]))
            else:
                captures[cid] = Captured(missing=item.get("missing", False), error=item.get("error", ""))
        return captures

    @staticmethod
    def _encode(captures: dict[str, Captured]) -> dict[str, Any]:
        return {
            cid: ({"value": capture.to_wire(c.value)} if c.value is not None else {"missing": c.missing, "error": c.error})
            for cid, c in captures.items()
        }

    def _load(self, path: Path, key: str) -> Reference | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if len(data["variants"]) != len(data["variant_captures"]):
                raise ValueError("one set of captures per variant")  # a damaged file is computed again
            return Reference(
                captures=self._decode(data["captures"]),
                key=key,
                variants=[variants.Variant(number=v["number"], values=v["values"]) for v in data["variants"]],
                variant_captures=[self._decode(c) for c in data["variant_captures"]],
            )
        except (OSError, ValueError, KeyError, TypeError, ProtocolError):
            return None

    def _store(self, path: Path, ref: Reference) -> None:
        data = {
            "captures": self._encode(ref.captures),
            "variants": [{"number": v.number, "values": v.values} for v in ref.variants],
            "variant_captures": [self._encode(c) for c in ref.variant_captures],
        }
        write_atomic(path, json.dumps(data))

    def _compute(self, assignment: Assignment, key: str) -> Reference:
        run, _ = run_notebook(assignment, assignment.solution, self.executor, hints=True)
        if isinstance(run, NotebookError):
            raise SolutionError(f"The solution notebook {assignment.solution} cannot be read: {run}")
        where = f"solution of {assignment.name} ({assignment.solution.name})"
        if run.status != RunStatus.OK:
            raise SolutionError(f"The {where} did not run to the end: {run.reason}.")
        for cell in run.errors:
            raise SolutionError(f"The {where} fails in cell {cell.index}: {cell.ename}: {cell.evalue}")
        for check in assignment.checks:
            got = run.captures.get(check.id)
            if got is None or got.value is None:
                why = got.error if got is not None and got.error else "it is not defined"
                raise SolutionError(f"The {where} does not produce {check.label} for question "
                                    f"{check.question_id}: {why}.")
        ref = Reference(captures=run.captures, key=key)
        ref.variants = variants.make_variants(assignment, ref.given())
        for variant in ref.variants:
            vrun, _ = run_notebook(assignment, assignment.solution, self.executor, hints=False, variant=variant)
            if isinstance(vrun, NotebookError) or vrun.status != RunStatus.OK or vrun.errors:
                why = vrun.reason if not isinstance(vrun, NotebookError) and vrun.reason else ""
                if not why and not isinstance(vrun, NotebookError) and vrun.errors:
                    cell = vrun.errors[0]
                    why = f"cell {cell.index} raises {cell.ename}: {cell.evalue}"
                raise SolutionError(f"The {where} fails on variant {variant.number} of its given inputs "
                                    f"({', '.join(variant.names)}): {why}. Fix the variant rules in config.yaml.")
            ref.variant_captures.append(vrun.captures)
        return ref
