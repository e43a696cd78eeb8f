"""The downloads of an LMS, read as they are: who handed in which file, by the LMS's own ids.

Canvas, "Download Submissions" (a flat zip, one file per uploaded file)::

    smithjohn_12345_6789012_rv.ipynb          <name>_<user id>_<submission/attachment id>_<file as uploaded>
    smithjohn_LATE_12345_6789013_rv-1.ipynb   _LATE_: handed in after the due date; -1, -2: the file
                                              uploaded again under the same name (a resubmission)

``<name>`` is the student's sortable name, lower case, without spaces or punctuation. The student
is the user id (Canvas's ``ID``, the ``lms_id`` of a roster); of several notebooks of one student
the latest counts (the highest id, then the highest resubmission number), the others are listed.

Moodle, "Download all submissions", flat or "Download submissions in folders"::

    John Smith_123456_assignsubmission_file_rv.ipynb        <full name>_<participant id>_<plugin>_<file>
    John Smith_123456_assignsubmission_file_/rv.ipynb       in folders (before Moodle 4.1)
    John Smith_123456_assignsubmission_file/rv.ipynb        in folders (4.1 and later)
    Participant_123456_assignsubmission_file_rv.ipynb       blind marking

The student is the participant id (the assignment's ``Participant 123456`` of the grading
worksheet). Moodle keeps one submission per student: of several notebooks, the newest in the zip
counts (the zip keeps each file's time of upload; at the same time, the one named after the
assignment); the others are listed.

Gradescope, "Export Submissions"::

    assignment_123_export/submission_metadata.yml
    assignment_123_export/submission_4567/rv.ipynb

``submission_metadata.yml`` maps each ``submission_<id>`` folder to its ``:submitters:`` (``:name:``,
``:sid:``, ``:email:``) and ``:created_at:``; the student is the first submitter's ``:sid:`` (or
e-mail), the time is ``:created_at:``.

A file in such a folder that does not follow its scheme (renamed, or from another LMS) is listed
with the reason and graded under its own name, never dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from grader.judge.scorecard import Origin

CANVAS = re.compile(
    r"^(?P<name>[^_]+?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<sub>\d+)_(?P<file>.+)$",
)
CANVAS_RESUBMITTED = re.compile(r"^(?P<stem>.+)-(?P<n>\d+)(?P<ext>\.[^.]+)?$")
MOODLE_FILE = re.compile(
    r"^(?P<name>[^_]+)_(?P<pid>\d+)_(?P<plugin>assign(?:submission|feedback)_[a-z0-9]+)_(?P<file>.+)$"
)
MOODLE_FOLDER = re.compile(r"^(?P<name>[^_]+)_(?P<pid>\d+)_(?P<plugin>assign(?:submission|feedback)_[a-z0-9]+)_?$")
GRADESCOPE_METADATA = "submission_metadata.yml"


@dataclass
class Found:
    """One student's submission found in a download: the file graded and what the LMS said of it."""

    path: Path
    origin: Origin
    where: str  # its path in the download, for messages


@dataclass
class Download:
    """What one LMS download holds: a submission per student, the files that follow no scheme, notes."""

    lms: str
    found: list[Found] = field(default_factory=list)
    strays: list[tuple[Path, str]] = field(default_factory=list)  # (file, why it was not placed)
    notes: list[str] = field(default_factory=list)


def detect(files: list[Path], folders: list[Path]) -> str:
    """Which LMS made this folder ("" when none): decided by its names, most of which must follow the scheme."""
    if any(f.name == GRADESCOPE_METADATA for f in files):
        return "gradescope"
    moodle = sum(1 for f in files if MOODLE_FILE.match(f.name)) + sum(1 for d in folders if MOODLE_FOLDER.match(d.name))
    canvas = sum(1 for f in files if CANVAS.match(f.name) and not MOODLE_FILE.match(f.name))
    total = len(files) + len(folders)
    if moodle and moodle * 2 >= total and moodle >= canvas:
        return "moodle"
    if canvas and canvas * 2 >= total and not folders:
        return "canvas"
    return ""


def read(lms: str, root: Path, files: list[Path], folders: list[Path], assignment: str, origin: str) -> Download:
    if lms == "canvas":
        return _canvas(files, origin)
    if lms == "moodle":
        return _moodle(root, files, folders, assignment, origin)
    return _gradescope(root, files, folders, assignment, origin)


def _canvas(files: list[Path], origin: str) -> Download:
    out = Download("canvas")
    per_user: dict[str, list[tuple[tuple[int, int], Path, re.Match[str]]]] = {}
    for f in files:
        m = CANVAS.match(f.name)
        if m is None:
            out.strays.append((f, "its name does not follow Canvas's <name>_<user id>_<id>_<file> (renamed?)"))
            continue
        again = CANVAS_RESUBMITTED.match(m.group("file"))
        order = (int(m.group("sub")), int(again.group("n")) if again else 0)
        per_user.setdefault(m.group("user"), []).append((order, f, m))
    for user, every in per_user.items():
        subs = [t for t in every if t[1].name.endswith(".ipynb")]
        if not subs:  # no notebook: its files are graded as they are, so the student is told why
            subs = every
            out.notes.append(f"{every[0][2].group('name')} ({user}): no .ipynb file in {origin}; graded as it is")
        subs.sort(key=lambda t: t[0])
        _, f, m = subs[-1]
        earlier = tuple(g.name for _, g, _ in subs[:-1])
        prefix = f.name[: m.start("file")]
        out.found.append(
            Found(
                f,
                Origin(
                    lms="canvas",
                    user_id=user,
                    name=m.group("name"),
                    file=f.name,
                    prefix=prefix,
                    marked_late=bool(m.group("late")),
                    earlier=earlier,
                ),
                f"{origin}/{f.name}",
            )
        )
        if earlier:
            out.notes.append(
                f"{m.group('name')} ({user}): {len(subs)} notebooks in {origin}; graded the latest, {f.name}; "
                f"earlier, not counted: {', '.join(earlier)}"
            )
    return out


def _moodle(root: Path, files: list[Path], folders: list[Path], assignment: str, origin: str) -> Download:
    out = Download("moodle")
    per: dict[str, list[tuple[Path, re.Match[str], str]]] = {}  # participant -> (file, match, prefix)
    for f in files:
        m = MOODLE_FILE.match(f.name)
        if m is None:
            out.strays.append((f, "its name does not follow Moodle's <full name>_<participant id>_<plugin>_<file>"))
            continue
        if f.name.endswith(".ipynb"):
            per.setdefault(m.group("pid"), []).append((f, m, f.name[: m.start("file")].rstrip("_")))
    for d in folders:
        m = MOODLE_FOLDER.match(d.name)
        if m is None:
            out.strays.append((d, "a folder whose name does not follow Moodle's <full name>_<participant id>_<plugin>"))
            continue
        for f in sorted(d.rglob("*.ipynb")):
            if ".ipynb_checkpoints" in f.parts or "__MACOSX" in f.parts:
                continue
            per.setdefault(m.group("pid"), []).append((f, m, d.name.rstrip("_")))
    for pid, subs in per.items():
        # The newest (the zip keeps each file's time of upload); at the same time, the one named after the assignment.
        pick = max(subs, key=lambda s: (s[0].stat().st_mtime, s[0].name.endswith(f"{assignment}.ipynb"), s[0].name))
        f, m, prefix = pick
        earlier = tuple(s[0].name for s in subs if s is not pick)
        out.found.append(
            Found(
                f,
                Origin(
                    lms="moodle",
                    user_id=pid,
                    name=m.group("name"),
                    file=f.relative_to(root).as_posix(),
                    prefix=prefix,
                    earlier=earlier,
                ),
                f"{origin}/{f.relative_to(root).as_posix()}",
            )
        )
        if earlier:
            out.notes.append(
                f"{m.group('name')} ({pid}): {len(subs)} notebooks in {origin}; graded the latest, {f.name}; "
                f"earlier, not counted: {', '.join(earlier)}"
            )
    return out


def _gradescope(root: Path, files: list[Path], folders: list[Path], assignment: str, origin: str) -> Download:
    out = Download("gradescope")
    meta_path = root / GRADESCOPE_METADATA
    try:
        meta = yaml.safe_load(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        out.notes.append(f"{origin}/{GRADESCOPE_METADATA} cannot be read ({exc}); its folders are graded by name")
        meta = None
    if not isinstance(meta, dict):
        meta = {}
    listed = set()
    for f in files:
        if f.name != GRADESCOPE_METADATA:
            out.strays.append((f, "a file outside the export's submission folders (not a Gradescope submission)"))
    for d in folders:
        entry = meta.get(d.name)
        if not isinstance(entry, dict):
            out.strays.append((d, f"a folder that {GRADESCOPE_METADATA} does not list"))
            continue
        listed.add(d.name)
        submitters = [s for s in _get(entry, "submitters") or [] if isinstance(s, dict)]
        if not submitters:
            out.strays.append((d, f"{GRADESCOPE_METADATA} names no submitter for it"))
            continue
        first = submitters[0]
        sid, email, name = (str(_get(first, k) or "").strip() for k in ("sid", "email", "name"))
        notebooks = sorted(f for f in d.rglob("*.ipynb") if ".ipynb_checkpoints" not in f.parts)
        if not notebooks:
            out.notes.append(f"{name or sid} ({d.name}): no .ipynb file in {origin}/{d.name}; nothing to grade")
            continue
        named = [f for f in notebooks if f.stem == assignment]
        f = named[0] if named else notebooks[0]
        earlier = tuple(g.name for g in notebooks if g != f)
        created = _get(entry, "created_at")
        at = created.isoformat() if isinstance(created, datetime) else str(created or "")
        history = _get(entry, "history")
        if isinstance(history, list) and history:
            earlier += tuple(f"an earlier submission ({_when(h)})" for h in history if isinstance(h, dict))
        out.found.append(
            Found(
                f,
                Origin(
                    lms="gradescope",
                    user_id=sid or email,
                    name=name,
                    file=f.relative_to(root).as_posix(),
                    prefix=d.name,
                    submitted_at=at,
                    email=email,
                    earlier=earlier,
                    others=tuple(str(_get(s, "sid") or _get(s, "email") or "") for s in submitters[1:]),
                ),
                f"{origin}/{f.relative_to(root).as_posix()}",
            )
        )
        if len(submitters) > 1:
            out.notes.append(
                f"{name or sid} ({d.name}): a group submission of {len(submitters)}; its grade goes to the first, "
                f"{sid or email}: the others ({', '.join(str(_get(s, 'name') or '') for s in submitters[1:])}) "
                "are listed, not graded"
            )
    return out


def _get(entry: dict[str, Any], key: str) -> Any:
    """A key of Gradescope's metadata, written ``:key:`` (Ruby symbols) or ``key:``."""
    return entry.get(f":{key}", entry.get(key))


def _when(entry: dict[str, Any]) -> str:
    v = _get(entry, "created_at")
    return v.isoformat() if isinstance(v, datetime) else str(v or "time unknown")
