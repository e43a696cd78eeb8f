"""A class graded in shards (a CI matrix, no cluster), and the shards merged into one run's outputs.

    grader grade PATH... --shard K/N --out shard-K     grades the submissions whose content hash
                                                       falls in share K of N, writes their outputs
                                                       and OUT/shard-K-of-N.json
    grader merge shard-1 ... shard-N --out DIR         the gradebook, scorecards and report one
                                                       run over the whole class writes

A submission's shard depends on its content alone (its sha256 modulo N), so every shard can read
the whole class and take its share without talking to the others; an unchanged notebook stays
in its shard, identical files land in the same one (and are graded once), and shares are even
up to chance (a few percent for a class of a thousand). The manifest holds each scorecard with
its place in the whole class's order, so the merge writes rows in the order one run would.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.batch.intake import Submission
from grader.errors import DocumentError, UsageError
from grader.files import write_atomic
from grader.judge import document
from grader.judge.scorecard import Scorecard
from grader.outputs.formats import FORMATS, PerSubmission
from grader.vocab import Format

MANIFEST_VERSION = 2  # 2: each card is the scorecard's document (``grader.judge.document``)


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> (2, 4); a UsageError for anything else."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise UsageError(f"--shard must be K/N with 1 <= K <= N (for example 1/4), got {text!r}.")
    return int(m.group(1)), int(m.group(2))


def shard_of(sub: Submission, count: int) -> int:
    """The shard (1..count) a submission belongs to, from its content hash alone."""
    digest = sub.sha256 or hashlib.sha256(sub.origin.encode()).hexdigest()  # an unreadable file: its origin
    return int(digest[:16], 16) % count + 1


def select(submissions: list[Submission], shard: int, count: int) -> list[tuple[int, Submission]]:
    """(place in the whole class, submission) for the submissions of one shard."""
    return [(i, s) for i, s in enumerate(submissions) if shard_of(s, count) == shard]


def manifest_name(shard: int, count: int) -> str:
    return f"shard-{shard}-of-{count}.json"


def write_manifest(
    out: Path,
    *,
    shard: int,
    count: int,
    assignment: str,
    fingerprint: str,
    total: int,
    formats: tuple[str, ...],
    graded: list[tuple[int, Submission, Scorecard]],
    notes: list[str],
) -> Path:
    data = {
        "version": MANIFEST_VERSION,
        "assignment": assignment,
        "shard": shard,
        "count": count,
        "total": total,
        "fingerprint": fingerprint,
        "formats": list(formats),
        "notes": notes,
        "submissions": [
            {
                "index": i,
                "id": s.id,
                "name": s.name,
                "path": str(s.path),
                "origin": s.origin,
                "card": document.dump(card),
            }
            for i, s, card in graded
        ],
    }
    return write_atomic(Path(out) / manifest_name(shard, count), json.dumps(data))


@dataclass
class Merged:
    assignment: str
    formats: tuple[Format, ...]
    notes: list[str]
    rows: list[tuple[Path, str, Scorecard, Path]]  # (notebook path, output name, card, shard folder), class order


def _manifests(dirs: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for d in dirs:
        if not d.is_dir():
            raise UsageError(f"{d} is not a folder of a shard's outputs.")
        files = sorted(d.rglob("shard-*-of-*.json"))
        if not files:
            raise UsageError(f"{d} holds no shard-K-of-N.json: is it the --out folder of `grader grade --shard`?")
        for f in files:
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise UsageError(f"{f} cannot be read: {exc}.") from None
            if not isinstance(data, dict):
                raise UsageError(f"{f} is not a shard's manifest.")
            if data.get("version") != MANIFEST_VERSION:
                raise UsageError(
                    f"{f} is a manifest of version {data.get('version')!r}, written by another grader than this "
                    f"one (version {MANIFEST_VERSION}); grade every shard again with this grader "
                    "(`grader grade ... --shard K/N --out DIR`), then merge."
                )
            found.append((f.parent, data))
    return found


def merge(dirs: list[Path]) -> Merged:
    """The shards in these folders as one run, or a UsageError saying which shard is missing or at odds."""
    found = _manifests(dirs)
    first = found[0][1]
    same = ("assignment", "count", "total", "fingerprint", "formats")
    for _, data in found[1:]:
        for field in same:
            if data.get(field) != first.get(field):
                what = "grader code or course settings" if field == "fingerprint" else field
                raise UsageError(
                    f"The shards differ in their {what} ({data.get(field)!r} against "
                    f"{first.get(field)!r}); grade every shard of one class with the same command."
                )
    count = int(first["count"])
    shards: dict[int, Path] = {}
    for folder, data in found:
        k = int(data["shard"])
        if k in shards:
            raise UsageError(f"Shard {k}/{count} is given twice: {shards[k]} and {folder}.")
        shards[k] = folder
    missing = [k for k in range(1, count + 1) if k not in shards]
    if missing:
        raise UsageError(
            f"Shard(s) {', '.join(f'{k}/{count}' for k in missing)} missing: every shard's "
            "--out folder is needed to merge."
        )
    rows: dict[int, tuple[Path, str, Scorecard, Path]] = {}
    where: dict[str, Path] = {}  # each submission's id: in one shard only
    for folder, data in found:
        try:
            for item in data["submissions"]:
                sid = str(item.get("id") or item["name"])
                if sid in where:
                    raise UsageError(
                        f"The submission {sid!r} is in two shards, {where[sid]} and {folder}: the shards were "
                        "graded from different classes; grade every shard of one class with the same command."
                    )
                where[sid] = folder
                rows[int(item["index"])] = (Path(item["path"]), str(item["name"]), document.load(item["card"]), folder)
        except DocumentError as exc:
            raise UsageError(
                f"A scorecard in {folder / manifest_name(int(data['shard']), count)} cannot be read ({exc}); "
                "grade that shard again."
            ) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(
                f"A shard's manifest is damaged ({type(exc).__name__}: {exc}); grade that shard again."
            ) from None
    if sorted(rows) != list(range(int(first["total"]))):
        raise UsageError(
            f"The shards hold {len(rows)} of the class's {first['total']} submissions; grade the missing shard again."
        )
    return Merged(
        assignment=first["assignment"],
        formats=tuple(Format(f) for f in first["formats"]),
        notes=list(first.get("notes", [])),
        rows=[rows[i] for i in sorted(rows)],
    )


def copy_outputs(merged: Merged, out: Path) -> None:
    """Each submission's own files (``<name><suffix>``), as its shard wrote them."""
    out.mkdir(parents=True, exist_ok=True)
    for _, name, _, folder in merged.rows:
        for fmt in merged.formats:
            spec = FORMATS[fmt]
            if isinstance(spec, PerSubmission):
                src = folder / f"{name}{spec.suffix}"
                if not src.is_file():
                    raise UsageError(f"{src} is missing from its shard's folder; grade that shard again.")
                if src.resolve() != (out / src.name).resolve():
                    shutil.copyfile(src, out / src.name)
