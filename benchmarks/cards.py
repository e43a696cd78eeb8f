"""Scorecards before and after a change: save them once, then compare another checkout's with them.

    .venv/bin/python benchmarks/cards.py save cards.json            # the examples, solutions and skeletons
    .venv/bin/python benchmarks/cards.py compare cards.json         # the same, graded again, against the file
    .venv/bin/python benchmarks/cards.py save-suite suite.jsonl     # the test suite's notebooks (runs pytest)
    .venv/bin/python benchmarks/cards.py compare-suite suite.jsonl  # runs pytest again, compares with the file
    .venv/bin/python benchmarks/cards.py compare-suite suite.jsonl --records other.jsonl  # two files, no run

``save`` grades, with ``grader.batch.grade_all`` (the code behind ``grader grade``) and a fresh
reference cache, every notebook of examples/ (examples/<assignment>/ against that assignment, as
``make demo`` does) and each assignment's solution and skeleton against its own assignment in
config.yaml. ``save-suite`` runs pytest with ``benchmarks/cards_plugin.py``, which records every
``Grader.grade`` call the tests make, in the pytest processes and in the subprocesses they start
(``grader grade``, ``grader validate``): one JSON line each, with the test, the assignment, the
submission's name, a hash of the notebook and the scorecard. ``compare-suite`` matches the cards
by test, assignment, submission and notebook, so a differently ordered or partial run compares on
what both have (and says what only one has).

A scorecard is compared without what depends on how or where it ran: times, the executor and
sandbox, the grader's version and CPU time, the file's hash (nbformat gives cells new random ids
each time a test writes a notebook), and the paths of this checkout and of temporary folders in
messages (``<root>``, ``<tmp>``). Everything else counts, the checks of each question included
(the HTML and report outputs print them). ``compare`` prints ``identical on N of N`` or, for each
card that differs, a unified diff of its feedback lines (question by question, then the checks'
messages and hints, then the execution summary), then each distinct changed line once with the
number of cards it is in, so a reviewer can list the messages that changed. ``--fixed FILE`` names
messages allowed to change (one a line): a card whose changed lines all contain one of them is
shown but not counted. It exits with 1 when anything else differs.

Renderings (the files ``grader grade`` writes, every format):

    .venv/bin/python benchmarks/cards.py render DIR                  # examples, solutions, skeletons
    .venv/bin/python benchmarks/cards.py render DIR --suite          # and the cards of a few test files
    .venv/bin/python benchmarks/cards.py render NEW --compare DIR    # the same again, diffed with DIR

``render`` grades as ``save`` does and writes each scorecard as every per-submission format renders
it (``DIR/<group>/<assignment>/<name><suffix>``) and each group's per-run files (junit.xml,
gradebook.csv, report.html, canvas.csv and moodle.csv from a roster of the names), with a fixed
clock and the times of the run set to 0. ``--suite`` also runs the test files of ``RENDER_SUITE``
with the recording plugin, which writes every card those tests make, rendered the same way, under
``DIR/suite/<assignment>/<submission>#<notebook hash>/<rendering hash>/`` (a notebook graded to
several distinct cards has several folders). ``--compare DIR`` compares unit by unit (a graded
submission's files; a group's per-run files; a suite notebook's renderings) and prints how many are
identical, which differ (with a diff of their first lines that changed) and which only one run has.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_grading import comparable  # noqa: E402

# Per-submission variants are drawn from a seed of the notebook's content and the course secret:
# a fixed secret gives each notebook the same variants in every run (as the test suite does).
VARIANT_SECRET = "benchmarks/cards.py: a fixed variant secret, for comparable runs"
# How a run went rather than what the grader found, besides bench_grading.RUN_FIELDS.
MORE_RUN_FIELDS = ("grader_cpu",)
FORMAT = 1  # of the saved file

# -- one scorecard, comparable --------------------------------------------------------------------

_HEX = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")


def _tmp_pattern() -> re.Pattern[str]:
    roots = sorted({tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"}, key=len, reverse=True)
    return re.compile("(?:" + "|".join(re.escape(r.rstrip("/")) for r in roots) + r")/[^\s'\"`,;:()\[\]{}<>]*")


_TMP = _tmp_pattern()


def plain_text(text: str, root: Path = ROOT) -> str:
    """A message without what changes from run to run or checkout to checkout: this checkout's
    path, temporary paths, object addresses."""
    text = text.replace(str(root), "<root>")
    text = _TMP.sub("<tmp>", text)
    return _HEX.sub("0x<address>", text)


def plain(value: Any, root: Path = ROOT) -> Any:
    if isinstance(value, str):
        return plain_text(value, root)
    if isinstance(value, dict):
        return {str(k): plain(v, root) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, root) for v in value]
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return plain_text(str(value), root)  # an enum member, a Path


def card_data(card: Any, root: Path = ROOT) -> dict[str, Any]:
    """The scorecard as compared: ``bench_grading.comparable`` (no times, executor, sandbox, file
    name or hash), without the grader's version and CPU time, with each question's checks, and
    with paths and addresses made neutral."""
    data = comparable(card)
    data.pop("grader_version", None)
    for key in MORE_RUN_FIELDS:
        data.get("execution", {}).pop(key, None)
    for q, out in zip(card.questions, data.get("questions", []), strict=False):
        out["checks"] = [check_data(c) for c in q.checks]
    return plain(json.loads(json.dumps(data, default=str)), root)


def check_data(check: Any) -> dict[str, Any]:
    """A check's result as compared: its fields, with its reasons as the lines they are worded as
    (``messages``), so cards from before and after verdicts became records compare alike."""
    data = {f.name: getattr(check, f.name) for f in dataclasses.fields(check) if f.name != "reasons"}
    if hasattr(check, "reasons"):
        from grader.judge import wording

        data["messages"] = wording.check_lines(check)
    data["carried_from"] = list(data.get("carried_from") or ())
    return data


def notebook_hash(path: Path, root: Path = ROOT) -> str:
    """The notebook's content without cell ids (random each time nbformat writes a new cell) and
    with neutral paths; the file's own hash when it is not a notebook."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        return f"unreadable:{exc.strerror}"
    try:
        nb = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return hashlib.sha256(raw).hexdigest()
    if isinstance(nb, dict):
        for cell in nb.get("cells") or []:
            if isinstance(cell, dict):
                cell.pop("id", None)
    text = plain_text(json.dumps(nb, sort_keys=True), root)
    return hashlib.sha256(text.encode()).hexdigest()


def canonical(card: dict[str, Any]) -> str:
    return json.dumps(card, sort_keys=True)


# -- what a reviewer reads ------------------------------------------------------------------------


def feedback_lines(card: dict[str, Any] | None) -> list[str]:
    """The card as lines: the verdict, each question's feedback, its checks' messages and hints,
    then the rest (the execution summary)."""
    if card is None:
        return ["(no scorecard)"]
    if "several cards" in card:  # a notebook a test graded in several ways (suite_cards)
        several = card["several cards"]
        return [
            line
            for i, c in enumerate(several, 1)
            for line in [f"##### scorecard {i} of {len(several)}", *feedback_lines(c)]
        ]
    lines = [f"status: {card.get('status')}  score: {card.get('score')}/{card.get('max_score')}"]
    if card.get("reason"):
        lines.append(f"reason: {card['reason']}")
    for q in card.get("questions", []):
        extra = "".join(f"  {k}: {q[k]}" for k in ("variants", "carried_forward") if k in q)
        lines.append(f"[{q.get('id')}] {q.get('status')} {q.get('score')}/{q.get('max_score')}{extra}")
        lines += [f"    {line}" for line in q.get("feedback", [])]
        for c in q.get("checks", []):
            head = {k: v for k, v in c.items() if k not in ("messages", "hint")}
            lines.append(f"  check {json.dumps(head, sort_keys=True)}")
            lines += [f"      message: {m}" for m in c.get("messages", [])]
            if c.get("hint"):
                lines.append(f"      hint: {c['hint']}")
    rest = {k: v for k, v in card.items() if k not in ("status", "score", "max_score", "reason", "questions")}
    lines += json.dumps(rest, indent=1, sort_keys=True).splitlines()
    return lines


def card_diff(before: dict[str, Any] | None, after: dict[str, Any] | None, label: str) -> list[str]:
    return list(
        difflib.unified_diff(
            feedback_lines(before), feedback_lines(after), f"before: {label}", f"after: {label}", lineterm="", n=2
        )
    )


# -- the examples, solutions and skeletons --------------------------------------------------------


def collect(course: Any) -> list[tuple[str, str, list[Path]]]:
    """(group, assignment, paths): examples/<assignment>/ for each assignment with a folder there,
    then each assignment's solution and skeleton."""
    out = []
    examples = ROOT / "examples"
    for folder in sorted(p for p in examples.iterdir() if p.is_dir()) if examples.is_dir() else []:
        if folder.name in course.assignments:
            out.append(("examples", folder.name, [folder]))
    for name, a in course.assignments.items():
        out.append(("solution", name, [a.solution]))
        out.append(("skeleton", name, [a.skeleton]))
    return out


def grade_cards(jobs: int, say: Any = print) -> dict[str, dict[str, Any]]:
    """{"<group>/<assignment>/<submission>": {"notebook": hash, "card": comparable card}}."""
    os.environ["GRADER_VARIANT_SECRET"] = VARIANT_SECRET
    from grader import batch
    from grader.course import config
    from grader.judge.grading import Grader

    with tempfile.TemporaryDirectory(prefix="cards-cache-") as cache:
        course = dataclasses.replace(config.load(ROOT / "config.yaml"), cache_dir=Path(cache))
        grader = Grader(course)
        cards: dict[str, dict[str, Any]] = {}
        try:
            for group, name, paths in collect(course):
                assignment = course.assignment(name)
                with batch.intake(paths, assignment) as found:
                    outcome = batch.grade_all(grader, assignment, found.submissions, jobs=jobs)
                    for sub, card in zip(found.submissions, outcome.cards, strict=True):
                        rel = sub.path.relative_to(ROOT) if sub.path.is_relative_to(ROOT) else sub.path.name
                        key = f"{group} {name}: {rel}"
                        cards[key] = {"notebook": notebook_hash(sub.path), "card": card_data(card)}
                say(f"  {group}/{name}: {len(found.submissions)} graded")
        finally:
            grader.executor.close()
    return cards


def save(out: Path, jobs: int) -> int:
    cards = grade_cards(jobs)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"format": FORMAT, "cards": cards}, indent=1, sort_keys=True) + "\n")
    print(f"{len(cards)} scorecards written to {out}")
    return 0


def read_fixed(path: Path | None) -> list[str]:
    """The messages listed as fixed: one a line, blank lines and lines starting with # left out."""
    if path is None:
        return []
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def only_fixed(diff: list[str], fixed: list[str]) -> bool:
    """Whether every line the diff removes or adds contains one of the fixed messages."""
    changed = [ln[1:] for ln in diff if ln[:1] in "+-" and not ln.startswith(("+++ ", "--- "))]
    return bool(changed) and bool(fixed) and all(any(f in ln for f in fixed) for ln in changed)


def report(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], what: str, fixed: list[str] | None = None
) -> int:
    """Prints the differences of two {key: {"card": ..., "notebook": ...}}; 0 when there are none
    but in lines that hold a message of ``fixed``."""
    keys = sorted(set(before) | set(after))
    differ = [
        k
        for k in keys
        if canonical(before.get(k, {}).get("card") or {}) != canonical(after.get(k, {}).get("card") or {})
    ]
    changed_nb = [
        k for k in keys if k in before and k in after and before[k].get("notebook") != after[k].get("notebook")
    ]
    accepted = []
    removed: dict[str, int] = {}
    added: dict[str, int] = {}
    for k in differ:
        b, a = before.get(k, {}).get("card"), after.get(k, {}).get("card")
        diff = card_diff(b, a, k)
        for ln in diff:
            if ln[:1] in "+-" and not ln.startswith(("+++ ", "--- ")):
                seen = removed if ln[0] == "-" else added
                seen[ln[1:].strip()] = seen.get(ln[1:].strip(), 0) + 1
        if only_fixed(diff, fixed or []):
            accepted.append(k)
        where = "only before" if a is None else "only after" if b is None else "differs"
        print(f"\n=== {k} ({where}{', in fixed messages only' if k in accepted else ''})")
        print("\n".join(diff))
    for k in changed_nb:
        print(f"note: {k}: the notebook itself changed since the saved run")
    rejected = [k for k in differ if k not in accepted]
    if differ:  # each changed line once, for the list of messages that changed
        print(f"\n{what}: the distinct lines that changed, with the number of cards each is in")
        for sign, seen in (("-", removed), ("+", added)):
            for ln, n in sorted(seen.items()):
                print(f"{sign} ({n}) {ln}")
    if accepted:
        print(f"\n{what}: {len(accepted)} of {len(keys)} scorecards differ in messages listed as fixed only")
    if rejected:
        print(f"\n{what}: {len(rejected)} of {len(keys)} scorecards DIFFER: " + ", ".join(rejected))
        return 1
    same = len(keys) - len(differ)
    print(
        f"{what}: identical on {same} of {len(keys)}"
        + (f" (the other {len(accepted)}: fixed messages)" if accepted else "")
    )
    return 0


def load_saved(path: Path) -> dict[str, dict[str, Any]]:
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise SystemExit(f"{path} is not a file of benchmarks/cards.py save (format {FORMAT})")
    cards: dict[str, dict[str, Any]] = data["cards"]
    return cards


def compare(saved: Path, jobs: int, against: Path | None, fixed: list[str]) -> int:
    before = load_saved(saved)
    after = load_saved(against) if against is not None else grade_cards(jobs)
    return report(before, after, f"scorecards against {saved}", fixed)


# -- renderings: the files `grader grade` writes ---------------------------------------------------

FIXED_NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)  # the clock every rendering is made with
RENDER_SUITE = [  # test files whose cards ``render --suite`` renders: many kinds of verdicts, quickly
    "tests/test_grading.py",
    "tests/test_carry_forward.py",
    "tests/test_variants.py",
    "tests/test_testcheck.py",
    "tests/test_review.py",
    "tests/test_batch.py",
]
_STAMPS = re.compile(r'(timestamp|graded_at|datetime)(=|": )"[^"]*"')


def neutral(card: Any, *, keep_sha: bool = True) -> Any:
    """The card without what changes from run to run: its times (0), and its file's hash when the
    file is written anew by each run (``keep_sha=False``)."""
    ex = card.execution
    ex = dataclasses.replace(
        ex,
        time=0.0 if ex.time is not None else None,
        grader_cpu=0.0 if ex.grader_cpu is not None else None,
    )
    return dataclasses.replace(card, execution=ex, **({} if keep_sha else {"sha256": ""}))


_DURATIONS = re.compile(r'("duration": )[0-9.eE+-]+')  # a cell's run time, in the document's cell records


def neutral_text(text: str, root: Path = ROOT) -> str:
    return _DURATIONS.sub(r"\g<1>0", _STAMPS.sub(r'\1\2"<time>"', plain_text(text, root)))


def render_card(path: Path, name: str, card: Any, course: Any, assignment: Any) -> dict[str, str]:
    """{file name: text} of every per-submission format (a format that raises: ``<file>.error``)."""
    from grader.outputs.formats import FORMATS, Output, PerSubmission

    settings = Output(course, assignment, FIXED_NOW)
    out: dict[str, str] = {}
    for spec in FORMATS.values():
        if not isinstance(spec, PerSubmission):
            continue
        for suffix, render in ((spec.suffix, spec.render), *spec.companions):
            try:
                out[f"{name}{suffix}"] = render(path, card, settings)
            except Exception as exc:  # noqa: BLE001 - a rendering that fails is a difference to show
                out[f"{name}{suffix}.error"] = f"{type(exc).__name__}: {exc}\n"
    return out


def render_run(rows: list[tuple[Path, str, Any]], course: Any, assignment: Any) -> dict[str, str]:
    """{file name: text} of every per-run format, the LMS files from a roster of the names."""
    from grader import outputs
    from grader.outputs.formats import FORMATS, PerRun

    formats = tuple(str(f) for f, spec in FORMATS.items() if isinstance(spec, PerRun))
    with tempfile.TemporaryDirectory(prefix="cards-run-") as tmp:
        roster = Path(tmp) / "roster.csv"
        roster.write_text("submission,name,email\n" + "".join(f"{n},{n},{n}@example.org\n" for _, n, _ in rows))
        folder = Path(tmp) / "out"
        try:
            written = outputs.write_run(
                rows, course=course, assignment=assignment, out=folder, formats=formats, roster=roster
            )
        except Exception as exc:  # noqa: BLE001
            return {"run.error": f"{type(exc).__name__}: {exc}\n"}
        return {p.name: p.read_text(encoding="utf-8") for p in written}


def write_files(folder: Path, files: dict[str, str], root: Path = ROOT) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(neutral_text(text, root), encoding="utf-8")


def render(out: Path, jobs: int, suite: bool) -> int:
    """Grade the examples, solutions and skeletons; write their renderings under ``out``."""
    os.environ["GRADER_VARIANT_SECRET"] = VARIANT_SECRET
    from grader import batch
    from grader.course import config
    from grader.judge.grading import Grader

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cards-cache-") as cache:
        course = dataclasses.replace(config.load(ROOT / "config.yaml"), cache_dir=Path(cache))
        grader = Grader(course, now=FIXED_NOW)
        n = 0
        try:
            for group, name, paths in collect(course):
                assignment = course.assignment(name)
                folder = out / group / name
                with batch.intake(paths, assignment) as found:
                    outcome = batch.grade_all(grader, assignment, found.submissions, jobs=jobs)
                    rows = []
                    for sub, card in zip(found.submissions, outcome.cards, strict=True):
                        card = neutral(card)
                        rows.append((sub.path, sub.name, card))
                        write_files(folder, render_card(sub.path, sub.name, card, course, assignment))
                        n += 1
                    write_files(folder / "(run)", render_run(rows, course, assignment))
                print(f"  {group}/{name}: {len(found.submissions)} rendered")
        finally:
            grader.executor.close()
    print(f"{n} scorecards rendered under {out}")
    if suite:
        records = out / "suite-records.jsonl"
        os.environ["CARDS_RENDER"] = str((out / "suite").resolve())
        try:
            run_suite(records, ["-n", "2", *RENDER_SUITE])
        finally:
            os.environ.pop("CARDS_RENDER", None)
        print(f"{len(units(out / 'suite', out))} suite notebooks rendered under {out / 'suite'}")
    return 0


def units(folder: Path, base: Path) -> dict[str, dict[str, str]]:
    """{unit: {file: text}} of a render folder: a submission's files (``<group>/<assignment>/<name>``),
    a group's per-run files, a suite notebook's renderings (every card it was graded to)."""
    found: dict[str, dict[str, str]] = {}
    if not folder.is_dir():
        return found
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".jsonl"):
        rel = f.relative_to(base)
        parts = rel.parts
        if parts[0] == "suite":
            unit, inside = "/".join(parts[:3]), "/".join(parts[3:])
        elif parts[-2] == "(run)":
            unit, inside = "/".join(parts[:-1]), parts[-1]
        else:
            stem = f.name.split(".", 1)[0]
            unit, inside = "/".join([*parts[:-1], stem]), f.name
        found.setdefault(unit, {})[inside] = f.read_text(encoding="utf-8")
    return found


def as_before(name: str, before: str | None, after: str) -> tuple[str, bool]:
    """``after`` as ``before`` was written: a ``<name>.json`` that is now the scorecard's document,
    where ``before`` is the YAML's content as JSON (the grader before ``grader.judge.document``),
    rendered that way again (``to_dict``, rounded as the course rounds), so the comparison says
    whether the document holds everything the old file said. (text, whether it was converted)"""
    if not (name.endswith(".json") and before is not None and '"format_version"' in after):
        return after, False
    if '"format_version"' in before:
        return after, False
    try:
        old = json.loads(before)
        data = json.loads(after)
    except ValueError:
        return after, False
    if not (isinstance(old, dict) and isinstance(data, dict) and "questions" in old):
        return after, False
    from grader.judge import document

    card = document.load(data)
    return json.dumps(card.to_dict(2), indent=2, ensure_ascii=False) + "\n", True


def canonical_unit(files: dict[str, str], before: dict[str, str] | None = None) -> tuple[list[Any], int]:
    """A unit's renderings as compared: a suite notebook's folders (one per distinct card, named by
    a hash of its files) as a sorted list of their files; ``<name>.json`` documents as ``before``
    wrote them (``as_before``). (canonical form, documents converted)"""
    converted = 0
    groups: dict[str, dict[str, str]] = {}
    for inside, text in files.items():
        folder, _, name = inside.rpartition("/")
        groups.setdefault(folder, {})[name] = text
    old_by_name: dict[str, str] = {}
    for inside, text in (before or {}).items():
        old_by_name.setdefault(inside.rpartition("/")[2], text)
    out = []
    for group in groups.values():
        items = []
        for name, text in sorted(group.items()):
            text, done = as_before(name, old_by_name.get(name), text)
            converted += done
            items.append((name, text))
        out.append(items)
    return sorted(out), converted


def compare_renders(before_dir: Path, after_dir: Path, *, show: int = 12) -> int:
    """Prints the units identical in both, those that differ (with their first changed lines) and
    those only one has; 1 when any differs or is missing."""
    before, after = units(before_dir, before_dir), units(after_dir, after_dir)
    keys = sorted(set(before) | set(after))
    same, differ, only_before, only_after = [], [], [], []
    converted = 0
    for k in keys:
        if k not in after:
            only_before.append(k)
            continue
        if k not in before:
            only_after.append(k)
            continue
        b, _ = canonical_unit(before[k])
        a, n = canonical_unit(after[k], before[k])
        converted += n
        if a == b:
            same.append(k)
            continue
        differ.append(k)
        print(f"\n=== {k}: differs")
        flat_b = {f"{i}/{name}": t for i, g in enumerate(b) for name, t in g}
        flat_a = {f"{i}/{name}": t for i, g in enumerate(a) for name, t in g}
        for name in sorted(set(flat_b) | set(flat_a)):
            if flat_b.get(name) == flat_a.get(name):
                continue
            diff = list(
                difflib.unified_diff(
                    (flat_b.get(name) or "").splitlines(),
                    (flat_a.get(name) or "").splitlines(),
                    f"before/{name}",
                    f"after/{name}",
                    lineterm="",
                    n=1,
                )
            )
            more = f"\n... ({len(diff) - show - 2} more lines)" if len(diff) > show + 2 else ""
            print("\n".join(diff[: show + 2]) + more)
    for label, which in (("only before", only_before), ("only after", only_after)):
        for k in which:
            print(f"{label}: {k}")
    files = sum(len(v) for v in after.values())
    print(
        f"\nrenderings of {after_dir} against {before_dir}: {len(keys)} units ({files} files after): "
        f"identical {len(same)}, differing {len(differ)}, only before {len(only_before)}, only after {len(only_after)}"
    )
    if converted:
        print(
            f"({converted} <name>.json files are now the scorecard's document: compared as rendered by to_dict, "
            "the YAML's content, as they were written before)"
        )
    if differ:
        print("differing: " + ", ".join(differ))
    return 1 if differ or only_before or only_after else 0


def record_rendering(folder: Path, root: Path, assignment: Any, grader: Any, path: Path, card: Any) -> None:
    """The suite's card rendered (``CARDS_RENDER``): under its notebook's folder, in a folder named
    by the hash of its renderings, so equal cards share one and differing cards each have theirs."""
    card = neutral(card, keep_sha=False)
    name = Path(card.submission).stem or "submission"
    files = {n: neutral_text(t, root) for n, t in render_card(path, name, card, grader.course, assignment).items()}
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:12]
    where = folder / assignment.name / f"{card.submission}#{notebook_hash(path, root)[:12]}" / digest
    if not where.exists():
        tmp = Path(tempfile.mkdtemp(prefix=".part-", dir=folder))
        for n, t in files.items():
            (tmp / n).write_text(t, encoding="utf-8")
        where.parent.mkdir(parents=True, exist_ok=True)
        try:
            tmp.rename(where)
        except OSError:  # another process wrote the same rendering first
            shutil.rmtree(tmp, ignore_errors=True)


# -- recording every Grader.grade call (benchmarks/cards_plugin.py, cards_site/sitecustomize.py) -----

current = {"test": ""}  # the test running, set by cards_plugin
_lock = threading.Lock()
_recording: dict[str, Any] = {}


def record_to(out: Path, root: Path, *, subprocess: bool = False) -> None:
    """Wrap ``Grader.grade`` (once) to record to ``out``; a later call changes where and how."""
    from grader.judge.grading import Grader

    _recording.update(out=out, root=root, subprocess=subprocess)
    original = Grader.grade
    if getattr(original, "_cards_recording", False):
        return

    @functools.wraps(original)
    def grade(self: Grader, assignment: Any, path: Any, *args: Any, **kwargs: Any) -> Any:
        card = original(self, assignment, path, *args, **kwargs)
        try:
            _record(self, assignment, Path(path), card, kwargs)
        except Exception as exc:  # noqa: BLE001 - recording must never change what a test sees
            _write(_recording["out"], {"test": _test(), "record_error": f"{type(exc).__name__}: {exc}"})
        return card

    grade._cards_recording = True  # type: ignore[attr-defined]
    Grader.grade = grade  # type: ignore[method-assign]


def _test() -> str:
    return current["test"] or os.environ.get("CARDS_TEST", "")


def _record(grader: Any, assignment: Any, path: Path, card: Any, kwargs: dict[str, Any]) -> None:
    root = _recording["root"]
    rendering = os.environ.get("CARDS_RENDER")
    if rendering and not isinstance(assignment, str):
        Path(rendering).mkdir(parents=True, exist_ok=True)
        record_rendering(Path(rendering), root, assignment, grader, path, card)
    name = assignment if isinstance(assignment, str) else assignment.name
    _write(
        _recording["out"],
        {
            "test": _test(),
            "subprocess": _recording["subprocess"],
            "assignment": name,
            "submission": plain_text(card.submission, root),
            "notebook": notebook_hash(path, root),
            "course_variants": bool(kwargs.get("course_variants", False)),
            "executor": getattr(grader.executor, "name", ""),
            "card": card_data(card, root),
        },
    )


def _write(out: Path, record: dict[str, Any]) -> None:
    line = (json.dumps(record, sort_keys=True) + "\n").encode()
    with _lock:
        fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, line)
        finally:
            os.close(fd)


def record_from_environment() -> None:
    """In a subprocess of a test (``cards_site/sitecustomize.py``): record to ``CARDS_OUT``."""
    record_to(Path(os.environ["CARDS_OUT"]), Path(os.environ["CARDS_ROOT"]), subprocess=True)


# -- the test suite's notebooks -------------------------------------------------------------------

# The test files that grade notebooks, in the pytest process or (``grader grade``, ``grader
# validate``, the packaged autograders) in subprocesses. Left out: the sandbox, setup, speed, leak
# and cluster tests (they grade little and take long) and the unit tests that grade nothing.
SUITE = [
    "tests/test_grading.py",
    "tests/test_carry_forward.py",
    "tests/test_variants.py",
    "tests/test_variant_inputs.py",
    "tests/test_testcheck.py",
    "tests/test_capture_points.py",
    "tests/test_assignments.py",
    "tests/test_batch.py",
    "tests/test_render.py",
    "tests/test_import.py",
    "tests/test_executors.py",
    "tests/test_solution_numbers.py",
    "tests/test_cell_names.py",
    "tests/test_rewrites.py",
    "tests/test_consumers.py",
    "tests/test_report.py",
    "tests/test_plugin.py",
    "tests/test_classroom50.py",
    "tests/test_lean_runner.py",
    "tests/test_cli.py",
]


def run_suite(out: Path, pytest_args: list[str]) -> int:
    """Runs pytest with the recording plugin; the records go to ``out`` (replaced)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    out.touch()
    here = str(Path(__file__).resolve().parent)
    env = {**os.environ, "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")}
    args = pytest_args or ["-n", "2", *SUITE]
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "cards_plugin",
        f"--cards-out={out.resolve()}",
        "--cards-subprocesses",
        "-q",
        *args,
    ]
    print("$ " + " ".join(cmd), flush=True)
    rc = subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode
    n = sum(1 for _ in out.open())
    print(f"pytest exited with {rc}; {n} grading records in {out}")
    return rc


def suite_cards(path: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """{key: {"card": ..., "notebook": ...}} of a records file, and the keys whose notebook got
    more than one distinct scorecard in that one run (a test that changes the grading around it
    grades the same notebook differently; otherwise a card that is not deterministic).

    A key is the test, the assignment, the submission's name and the notebook's hash; a key with
    several distinct cards is compared as the sorted list of them. ``notebook`` is the key without
    the test, to match a card that another test made in the other run (``compare_suite``)."""
    grouped: dict[str, dict[str, Any]] = {}
    notebook_of: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if "record_error" in r:
            print(f"warning: {path}: {r['test']}: the plugin could not record a card: {r['record_error']}")
            continue
        nb = f"{r['assignment']}/{r['submission']} #{r['notebook'][:12]}"
        key = f"{r['test']} :: {nb}"
        notebook_of[key] = nb
        grouped.setdefault(key, {}).setdefault(canonical(r["card"]), r["card"])
    out, several = {}, []
    for key, cards in grouped.items():
        if len(cards) == 1:
            out[key] = {"card": next(iter(cards.values())), "notebook": notebook_of[key]}
        else:
            several.append(key)
            out[key] = {"card": {"several cards": [cards[c] for c in sorted(cards)]}, "notebook": notebook_of[key]}
    return out, several


def _cards_of(entry: dict[str, Any]) -> list[dict[str, Any]]:
    card: dict[str, Any] = entry["card"]
    several: list[dict[str, Any]] = card.get("several cards", [card])
    return several


def compare_suite(saved: Path, records: Path | None, pytest_args: list[str], fixed: list[str]) -> int:
    """Compares by test; a notebook graded by one test in one run and by another in the other
    (a cache shared by the tests of one process, filled by whichever runs first) is matched by
    its content when the other run has an equal card for it."""
    if records is None:
        records = Path(tempfile.mkdtemp(prefix="cards-suite-")) / "suite-cards.jsonl"
        run_suite(records, pytest_args)
    before, several_before = suite_cards(saved)
    after, several_after = suite_cards(records)
    both = sorted(set(before) & set(after))
    by_notebook: dict[str, dict[str, set[str]]] = {"before": {}, "after": {}}
    for side, entries in (("before", before), ("after", after)):
        for entry in entries.values():
            by_notebook[side].setdefault(entry["notebook"], set()).update(canonical(c) for c in _cards_of(entry))
    moved, missing = 0, []
    changed: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = {}
    for side, other, entries, keys in (
        ("before", "after", before, set(before) - set(after)),
        ("after", "before", after, set(after) - set(before)),
    ):
        for k in sorted(keys):
            entry = entries[k]
            there = by_notebook[other].get(entry["notebook"])
            if there is None:
                missing.append(f"only {side}: {k}")
            elif all(canonical(c) in there for c in _cards_of(entry)):
                moved += 1
            else:  # the notebook was graded in both runs, but not to this card
                others = {"several cards": [json.loads(c) for c in sorted(there)]}
                changed[k] = (entry["card"], others) if side == "before" else (others, entry["card"])
    print(
        f"compared by test: {len(both)}; graded by another test in the other run, to an equal card: {moved}; "
        f"in one run only (tests not run, notebooks built anew each run, results taken from a cache): {len(missing)}"
    )
    for line in missing[:40]:
        print(f"  {line}")
    for which, several in (("before", several_before), ("after", several_after)):
        if several:
            print(f"{len(several)} notebooks had several distinct scorecards in one test ({which}), compared as sets")
    b = {k: before[k] for k in both} | {k: {"card": v[0]} for k, v in changed.items()}
    a = {k: after[k] for k in both} | {k: {"card": v[1]} for k, v in changed.items()}
    return report(b, a, f"the test suite's scorecards against {saved}", fixed)


FIXED_HELP = (
    "a file of messages listed as fixed, one a line (a part of the line is enough; list the old "
    "wording and the new): a card whose removed and added lines all contain one of them is shown but "
    "does not count as differing"
)


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("save", help="grade the examples, solutions and skeletons; write their scorecards")
    s.add_argument("out", type=Path)
    s.add_argument("--jobs", "-j", type=int, default=2)
    c = sub.add_parser("compare", help="grade them again and compare with a file `save` wrote")
    c.add_argument("saved", type=Path)
    c.add_argument("--jobs", "-j", type=int, default=2)
    c.add_argument("--against", type=Path, help="compare with this saved file instead of grading")
    c.add_argument("--fixed", type=Path, help=FIXED_HELP)
    ss = sub.add_parser(
        "save-suite",
        help="run the tests with the recording plugin; write every scorecard "
        "they produced (pytest arguments after --, default: -n 2 and the grading tests)",
    )
    ss.add_argument("out", type=Path)
    ss.add_argument("pytest_args", nargs="*")
    cs = sub.add_parser(
        "compare-suite", help="run the tests again (or read --records) and compare with a file save-suite wrote"
    )
    cs.add_argument("saved", type=Path)
    cs.add_argument("--records", type=Path, help="compare with this records file instead of running the tests")
    cs.add_argument("--fixed", type=Path, help=FIXED_HELP)
    cs.add_argument("pytest_args", nargs="*")
    r = sub.add_parser("render", help="grade them; write every format's rendering of each card under DIR")
    r.add_argument("out", type=Path)
    r.add_argument("--jobs", "-j", type=int, default=2)
    r.add_argument("--suite", action="store_true", help="also render the cards of the test files in RENDER_SUITE")
    r.add_argument("--compare", type=Path, help="then compare the renderings with those of this earlier DIR")
    r.add_argument("--only-compare", action="store_true", help="compare OUT with --compare DIR without grading")
    args = ap.parse_args(list(argv) if argv is not None else None)
    if args.command == "render":
        if not args.only_compare:
            render(args.out, args.jobs, args.suite)
        return compare_renders(args.compare, args.out) if args.compare is not None else 0
    if args.command == "save":
        return save(args.out, args.jobs)
    if args.command == "compare":
        return compare(args.saved, args.jobs, args.against, read_fixed(args.fixed))
    if args.command == "save-suite":
        return run_suite(args.out, args.pytest_args)
    return compare_suite(args.saved, args.records, args.pytest_args, read_fixed(args.fixed))


if __name__ == "__main__":
    sys.exit(main())
