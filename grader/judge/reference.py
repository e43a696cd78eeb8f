"""Reference values: the solution run exactly as a submission is, once per content, cached on disk.

The cache key covers the grader's version, the assignment's config section, its limits and
variant rules, and the bytes of the solution and its data files, so any change computes afresh.
Each variant of the given inputs is run on the solution too, for the variant's reference values.

A reference bundle is the same values compiled once, for grading where the solution must not be:
``References.save_bundle(assignment, path)`` writes everything grading needs of the solution
(the reference values of the notebook's data and of every variant, hint values, the sources of
the cells the instructor tagged to be skipped) into one file readable by the grader's uid only,
and an assignment whose config names it (``reference_bundle:``) is graded from it by
``References.get`` with no solution at all (``load_bundle``). Anything else that must carry
references (to a cluster, say) or compiled solution steps should go through this pair.

Why one module: every run of the solution grading needs (the notebook's data, the course's
variants, a submission's own variants) shares one cache key, one on-disk layout and one warm
sandbox; split, each would re-derive them. A student's own inputs (``per_student``) are run
beside it, in grader.judge.students, through ``solution_steps`` and the codec here.

A submission's own variants (``variants.per_submission``) are computed by ``variants_for``: the
solution's cells (from the notebook, or the steps a Gradescope bundle carries) run on the
variants of the submission's seed, cached in memory and on disk by seed like the reference.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader import __version__, capture, notebook
from grader.course.model import Assignment, Course
from grader.errors import NotebookError, ProtocolError, SolutionError
from grader.files import write_atomic
from grader.judge import variants, wording
from grader.judge.checks import changed_answers
from grader.judge.jobs import JobTemplate, answer_cells, locked_cells, run_notebook, skip_sources
from grader.run.execute import Executor, Session
from grader.run.job import Captured, RunError
from grader.vocab import RunStatus

BUNDLE_FORMAT = 1
ATTEMPTS = 8  # draws per variant of a submission's own, before the course's variant stands in for it
OWN_VARIANT_SETS = 64  # submissions whose own variants stay in memory (``References.variants_for``)


@dataclass(frozen=True)
class VariantSet:
    """The variants a submission is checked on, with the solution's values on each."""

    variants: list[variants.Variant]
    captures: list[dict[str, Captured]]
    changed: list[frozenset[str]]  # per variant, the ids whose reference value it changes
    own: bool = False  # drawn for this submission (else the course's, from ``variants.seed``)
    note: str = ""  # why the course's variants stand in, in whole or in part


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

    def course_set(self, note: str = "") -> VariantSet:
        """The course's variants (``variants.seed``)."""
        return VariantSet(list(self.variants), list(self.variant_captures), list(self.changed), note=note)

    def given(self) -> dict[str, capture.Value]:
        return {
            cid[len(variants.GIVEN_PREFIX) :]: c.value
            for cid, c in self.captures.items()
            if cid.startswith(variants.GIVEN_PREFIX) and c.value is not None
        }


_BLANKS = "(`?`, `...` or a `raise NotImplementedError()` stub)"
_EVERY_ANSWER = "the solution must hold every answer"


def _asks_for_input(cell: Any) -> bool:
    """Whether a cell of the solution stopped at ``input()``, which a run without a person has no
    answer to (``EOFError: EOF when reading a line``; a Jupyter kernel's ``StdinNotImplementedError``)."""
    return bool(
        cell.ename == "StdinNotImplementedError"
        or cell.ename == "EOFError"
        and str(cell.evalue).startswith("EOF when reading a line")
    )


def _given_as_is(assignment: Assignment) -> set[int]:
    """The cells the skeleton gives exactly as the solution has them, placeholders and all (an
    exercise a course leaves ungraded): a blank there is not an answer the solution fails to give."""
    try:
        solution = {c.index: c.source for c in notebook.read(assignment.solution)}
        skeleton = {c.index: c.source for c in notebook.read(assignment.skeleton)}
    except NotebookError:
        return set()
    return {i for i, text in solution.items() if skeleton.get(i) == text and notebook.find_blanks(text)}


class References:
    """Reference values from running each solution the same way, cached on disk by content hash."""

    def __init__(self, course: Course, executor: Executor):
        self.course, self.executor = course, executor
        self.memory: dict[str, Reference] = {}
        # (config digest, limits, variants, (path, mtime, size) per file) -> key
        self._keys: dict[tuple[str, str, str, tuple[tuple[str, int, int], ...]], str] = {}
        self._bundles: dict[str, tuple[Reference, list[str]]] = {}  # path -> (references, skip sources)
        # (reference key, seed) -> a submission's variants, the latest few only: a class of 10,000 would
        # otherwise keep 10,000 sets of captured values; the cache on disk serves the rest.
        self._own: OrderedDict[tuple[str, int], VariantSet] = OrderedDict()
        self._own_lock = threading.Lock()  # grading threads draw for their submissions at once
        self._steps: dict[str, tuple[list[notebook.Cell], list[notebook.CellInfo]]] = {}
        self._draw_templates: dict[str, JobTemplate] = {}  # the solution's jobs for draws, per assignment
        self.secret: bytes | None = None  # the variant secret (``variant_secret``), once read or given

    def key(self, assignment: Assignment) -> str:
        if assignment.bundle is not None:  # the key its references were computed under, with the solution
            return self._bundle(assignment)[0].key
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
        if assignment.bundle is not None:
            return self.load_bundle(assignment)
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

    def skip_sources(self, assignment: Assignment) -> set[str]:
        """Sources of the cells tagged to be skipped, from the notebooks or the assignment's bundle."""
        if assignment.bundle is not None:
            return set(self._bundle(assignment)[1])
        return skip_sources(assignment)

    def locked_cells(self, assignment: Assignment) -> list[notebook.Cell]:
        """The given read-only cells (``locked``), from the notebooks or the assignment's bundle."""
        if assignment.bundle is None:
            return locked_cells(assignment)
        try:
            data = json.loads(assignment.bundle.read_text(encoding="utf-8"))
            return [
                notebook.Cell(index=0, source=str(c["source"]), tags=tuple(map(str, c["tags"])), cell_id=str(c["id"]))
                for c in data.get("locked_cells", [])
            ]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SolutionError(
                f"The reference bundle {assignment.bundle} of {assignment.name} cannot be used: {exc}"
            ) from None

    def save_bundle(self, assignment: Assignment, path: Path, *, solution_steps: bool = False) -> Path:
        """Write the assignment's reference bundle (computing the references if need be); with
        ``solution_steps``, also the solution's cells, which the carry-forward runs execute, when
        this grader has them (an assignment graded from a bundle without them has none to pass on).
        Works from a bundle as from the notebooks: a bundle's bundle is the same bundle."""
        ref = self.get(assignment)
        data: dict[str, object] = {
            "format": BUNDLE_FORMAT,
            "grader": __version__,
            "assignment": assignment.name,
            "config_digest": assignment.config_digest,
            "key": ref.key,
            "skip_sources": sorted(self.skip_sources(assignment)),
            "reference": self._to_data(ref),
            "locked_cells": [
                {"id": c.cell_id, "source": c.source, "tags": list(c.tags)} for c in self.locked_cells(assignment)
            ],
        }
        if solution_steps:  # the solution code grading itself must run: the carry-forward runs (``carry``)
            try:
                cells = self.solution_cells(assignment)
            except SolutionError:
                cells = None
            if cells is not None:
                data["carry_cells"] = [{"index": c.index, "source": c.source, "tags": list(c.tags)} for c in cells]
        write_atomic(path, json.dumps(data))
        os.chmod(path, 0o600)  # the grader's alone: a student process never runs as its uid
        return path

    def solution_cells(self, assignment: Assignment) -> list[notebook.Cell]:
        """The solution's cells, for the carry-forward runs: from the notebook, or from the bundle of
        an assignment graded without its solution. Raises SolutionError when neither has them."""
        if assignment.bundle is None:
            try:
                return notebook.read(assignment.solution)
            except NotebookError as exc:
                raise SolutionError(f"The solution notebook {assignment.solution} cannot be read: {exc}") from None
        try:
            data = json.loads(assignment.bundle.read_text(encoding="utf-8"))
            return [
                notebook.Cell(index=int(c["index"]), source=str(c["source"]), tags=tuple(c["tags"]))
                for c in data["carry_cells"]
            ]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SolutionError(
                f"The reference bundle {assignment.bundle} of {assignment.name} has no solution "
                f"steps for carry-forward ({exc})"
            ) from None

    def load_bundle(self, assignment: Assignment) -> Reference:
        """The references of an assignment graded from its bundle."""
        return self._bundle(assignment)[0]

    def _bundle(self, assignment: Assignment) -> tuple[Reference, list[str]]:
        path = assignment.bundle
        assert path is not None
        memo = self._bundles.get(str(path))
        if memo is not None:
            return memo
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != BUNDLE_FORMAT or data.get("assignment") != assignment.name:
                raise ValueError(f"it is not a reference bundle for {assignment.name}")
            if data.get("grader") != __version__ or data.get("config_digest") != assignment.config_digest:
                raise ValueError(
                    "it was built by another version of the grader or for another version of the "
                    "assignment's config section; build it again"
                )
            ref = self._from_data(data["reference"], str(data["key"]))
            skip = [str(s) for s in data["skip_sources"]]
        except (OSError, ValueError, KeyError, TypeError, ProtocolError) as exc:
            raise SolutionError(f"The reference bundle {path} of {assignment.name} cannot be used: {exc}") from None
        self._bundles[str(path)] = (ref, skip)
        return ref, skip

    @staticmethod
    def decode(raw: dict[str, Any]) -> dict[str, Captured]:
        captures = {}
        for cid, item in raw.items():
            if "value" in item:
                captures[cid] = Captured(value=capture.decode(item["value"]))
            else:
                error = (
                    RunError(str(item["ename"]), str(item.get("evalue", "")), name=str(item.get("name", "")))
                    if item.get("ename")
                    else None
                )
                captures[cid] = Captured(missing=bool(item.get("missing", False)), error=error)
        return captures

    @staticmethod
    def encode(captures: dict[str, Captured]) -> dict[str, Any]:
        return {
            cid: (
                {"value": capture.to_wire(c.value)}
                if c.value is not None
                else {
                    "missing": c.missing,
                    "name": c.name,
                    **({"ename": c.error.ename, "evalue": c.error.evalue} if c.error is not None else {}),
                }
            )
            for cid, c in captures.items()
        }

    def _load(self, path: Path, key: str) -> Reference | None:
        try:
            return self._from_data(json.loads(path.read_text(encoding="utf-8")), key)
        except (OSError, ValueError, KeyError, TypeError, ProtocolError):
            return None  # a damaged file is computed again

    @classmethod
    def _from_data(cls, data: dict[str, Any], key: str) -> Reference:
        if len(data["variants"]) != len(data["variant_captures"]):
            raise ValueError("one set of captures per variant")
        return Reference(
            captures=cls.decode(data["captures"]),
            key=key,
            variants=[variants.Variant(number=v["number"], values=v["values"]) for v in data["variants"]],
            variant_captures=[cls.decode(c) for c in data["variant_captures"]],
        )

    @classmethod
    def _to_data(cls, ref: Reference) -> dict[str, Any]:
        return {
            "captures": cls.encode(ref.captures),
            "variants": [{"number": v.number, "values": v.values} for v in ref.variants],
            "variant_captures": [cls.encode(c) for c in ref.variant_captures],
        }

    def _store(self, path: Path, ref: Reference) -> None:
        write_atomic(path, json.dumps(self._to_data(ref)))

    def variants_for(self, assignment: Assignment, sha256: str) -> VariantSet:
        """The variants of the submission whose content hash is ``sha256``: its own, drawn from a
        seed only the course's secret gives (``variants.submission_seed``), with the solution run on
        each. A draw must change every answer the course's variant of the same number changes (an
        instructor's seed may have been chosen for that: "both variants change which word bank
        attends to most"), else another is drawn, up to ``ATTEMPTS``; past that, or where the
        solution fails on every draw, the course's variant stands in. Without the solution's cells
        (a ``grading-bundle``) or the secret, the course's variants stand in, and ``note`` says why."""
        ref = self.get(assignment)
        if not ref.variants:
            return ref.course_set()
        try:
            secret = self.variant_secret()
        except OSError as exc:
            return ref.course_set(f"the course's variants: the variant secret cannot be read ({exc})")
        seed = variants.submission_seed(secret, sha256, assignment.name)
        memo = (ref.key, seed)
        with self._own_lock:
            if memo in self._own:
                self._own.move_to_end(memo)
                return self._own[memo]
        path = (
            self.course.cache_dir
            / "references"
            / "variants"
            / f"{assignment.name}-{ref.key[:12]}-{hashlib.sha256(str(seed).encode()).hexdigest()[:20]}.json"
        )
        found = self._load_set(path, ref)
        if found is None:
            try:
                cells, infos = self.solution_steps(assignment)
            except SolutionError:
                return ref.course_set(
                    "the course's variants: this grader has no solution steps to compute a "
                    "submission's own variants with"
                )
            found = self._draw(assignment, ref, seed, cells, infos)
            if found.own:
                write_atomic(
                    path,
                    json.dumps(
                        {
                            "variants": [{"number": v.number, "values": v.values} for v in found.variants],
                            "variant_captures": [self.encode(c) for c in found.captures],
                            "note": found.note,
                        }
                    ),
                )
        with self._own_lock:
            self._own[memo] = found
            while len(self._own) > OWN_VARIANT_SETS:
                self._own.popitem(last=False)
        return found

    def variant_secret(self) -> bytes:
        """The course secret the seeds of submissions' own variants are derived from: given (a
        cluster's workers get the client's), or ``variants.variant_secret``. Raises OSError."""
        if self.secret is None:
            self.secret = variants.variant_secret(self.course.cache_dir)
        return self.secret

    def solution_steps(self, assignment: Assignment) -> tuple[list[notebook.Cell], list[notebook.CellInfo]]:
        if assignment.name not in self._steps:
            cells = answer_cells(assignment, self.solution_cells(assignment))
            self._steps[assignment.name] = (cells, notebook.analyse(cells))
        return self._steps[assignment.name]

    def _draw_jobs(
        self, assignment: Assignment, cells: list[notebook.Cell], infos: list[notebook.CellInfo]
    ) -> JobTemplate:
        """The solution's job for a draw, once per assignment: its data files only (no notebook file
        needed), its process kept for the next run (``Job.stay``)."""
        if assignment.name not in self._draw_templates:
            jobs = JobTemplate.of(assignment, cells, infos, assignment.solution, hints=False, skip=set())
            jobs.base = replace(
                jobs.base,
                files=tuple(f for f in jobs.base.files if f[0] != assignment.solution),
                stay=True,
                trusted=True,
            )
            self._draw_templates[assignment.name] = jobs
        return self._draw_templates[assignment.name]

    def _draw(
        self,
        assignment: Assignment,
        ref: Reference,
        seed: int,
        cells: list[notebook.Cell],
        infos: list[notebook.CellInfo],
    ) -> VariantSet:
        out = VariantSet([], [], [], own=True)
        stood_in = []
        given = ref.given()
        # The solution's runs share one sandbox, kept open from one submission's draws to the next,
        # and one warm process (``Job.stay``): trusted code, put back as it was after each run.
        with self.executor.session(reuse=("solution", assignment.name)) as session:
            for slot, course_variant in enumerate(ref.variants):
                for attempt in range(ATTEMPTS):
                    variant = variants.make_variants(
                        assignment, given, seed=variants.attempt_seed(seed, attempt), only=slot + 1
                    )[0]
                    run = session.run(self._draw_jobs(assignment, cells, infos).job(variant))
                    if run.status != RunStatus.OK or run.errors:
                        continue  # a draw the solution itself cannot run: another
                    changed = changed_answers(ref.captures, run.captures)
                    if changed >= ref.changed[slot]:
                        out.variants.append(variant)
                        out.captures.append(run.captures)
                        out.changed.append(changed)
                        break
                else:
                    stood_in.append(course_variant.number)
                    out.variants.append(course_variant)
                    out.captures.append(ref.variant_captures[slot])
                    out.changed.append(ref.changed[slot])
        if stood_in:
            which = ", ".join(str(n) for n in stood_in)
            return replace(
                out,
                note=f"the course's variant {which}: no draw of this submission's own changed every answer it changes",
            )
        return out

    def _load_set(self, path: Path, ref: Reference) -> VariantSet | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            vs = [variants.Variant(number=v["number"], values=v["values"]) for v in data["variants"]]
            caps = [self.decode(c) for c in data["variant_captures"]]
            if len(vs) != len(caps):
                return None
        except (OSError, ValueError, KeyError, TypeError, ProtocolError):
            return None  # absent or damaged: computed again
        return VariantSet(
            vs, caps, [changed_answers(ref.captures, c) for c in caps], own=True, note=str(data.get("note", ""))
        )

    def _compute(self, assignment: Assignment, key: str) -> Reference:
        with self.executor.session() as session:  # the solution's runs share one sandbox
            return self._compute_in(assignment, key, session)

    def _compute_in(self, assignment: Assignment, key: str, session: Session) -> Reference:
        run, _ = run_notebook(assignment, assignment.solution, session, hints=True)
        if isinstance(run, NotebookError):
            raise SolutionError(f"The solution notebook {assignment.solution} cannot be read: {run}")
        where = f"solution of {assignment.name} ({assignment.solution.name})"
        if run.status != RunStatus.OK:
            raise SolutionError(f"The {where} did not run to the end: {run.reason}.")
        given = _given_as_is(assignment) if any(c.name == notebook.BLANK_NAME for c in run.errors) else set()
        for cell in run.errors:
            if cell.name == notebook.BLANK_NAME:
                if cell.index in given:
                    continue  # an exercise left ungraded, released as it is: harmless unless a value needs it (below)
                # a master notebook released as it is given to students
                raise SolutionError(
                    f"The {where} leaves a blank to fill in cell {cell.index} {_BLANKS}: {_EVERY_ANSWER}"
                )
            if _asks_for_input(cell):
                continue  # stopped there, as a kernel without input stops it: what it defined before is graded
            failed = SolutionError(f"The {where} fails in cell {cell.index}: {cell.ename}: {cell.evalue}")
            failed.ename = cell.ename
            raise failed
        left = [c.index for c in run.errors if c.name == notebook.BLANK_NAME]  # of cells released as they are
        for check in assignment.checks:
            if check.is_test:
                continue  # judged by its asserts; ``grader validate`` runs it against the solution
            got = run.captures.get(check.id)
            if got is None or got.value is None:
                if left:
                    raise SolutionError(
                        f"The {where} leaves a blank to fill in cell {left[0]} {_BLANKS}, and does not "
                        f"produce {check.label} for question {check.question_id}: {_EVERY_ANSWER}"
                    )
                why = wording.capture_problem(got)
                raise SolutionError(
                    f"The {where} does not produce {check.label} for question {check.question_id}: {why}."
                )
        ref = Reference(captures=run.captures, key=key)
        ref.variants = variants.make_variants(assignment, ref.given())
        for variant in ref.variants:
            vrun, _ = run_notebook(assignment, assignment.solution, session, hints=False, variant=variant)
            if isinstance(vrun, NotebookError) or vrun.status != RunStatus.OK or vrun.errors:
                why = vrun.reason if not isinstance(vrun, NotebookError) and vrun.reason else ""
                if not why and not isinstance(vrun, NotebookError) and vrun.errors:
                    cell = vrun.errors[0]
                    why = f"cell {cell.index} raises {cell.ename}: {cell.evalue}"
                raise SolutionError(
                    f"The {where} fails on variant {variant.number} of its given inputs "
                    f"({', '.join(variant.names)}): {why}. Fix the variant rules in config.yaml."
                )
            ref.variant_captures.append(vrun.captures)
        return ref
