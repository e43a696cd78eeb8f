"""Intake: the submissions in the paths an instructor gives, with their ids, student ids and content hashes.

Layouts understood (each path given may be any of them, or a single file):

    class/alice.ipynb                          a folder of notebooks: the student is the file name
    class/alice/<anything>.ipynb               a folder per student: the student is the folder name
    course/submitted/alice/<assignment>/*.ipynb  an exchange layout (grader.authoring.layouts)
    class.zip                                  any of the above, inside a zip archive

A subfolder named after the assignment is a folder of notebooks, not a student. When a student's
folder holds several notebooks, the one named after the assignment is graded if there is one;
otherwise each is graded as its own row. A student folder with no notebook at all has its files
graded anyway, so the student gets a scorecard saying why nothing could be read.

A submission's id (``Submission.id``) is derived here, once, from where it came from, and every
later step keys by it (the scorecard, the grades database, the review page's URLs, shards, LMS
rows): never a position in the class, and never a name a student chose inside her own folder.

    class/alice.ipynb                    alice             its path under the folder given, without .ipynb
    class/rv/alice.ipynb                 rv/alice          (a subfolder named after the assignment too)
    class/alice/<anything>.ipynb         alice             the student's folder, whatever the notebook's name
    class/frank/a.ipynb, b.ipynb         frank/a, frank/b  several graded from one folder: folder/file
    course/submitted/alice/rv/*.ipynb    alice             an exchange layout's student folder
    class.zip holding class/alice.ipynb  alice             the same as the folder unpacked
    alice.ipynb (a file named)           alice             its file name, without .ipynb

Each part of the path is percent-encoded (RFC 3986: letters, digits and ``-._~`` stay as they
are), so an id is URL-safe and two names never share one; parts are joined by ``/``. An id depends
on its own submission's place alone: adding, removing or renaming another submission never changes
it. Two submissions of one run with the same id (``class/alice.ipynb`` beside ``class/alice/``, or
two paths given that both hold ``alice``) are a usage error naming both.

``collect`` and ``output_names`` are the plain form the pytest plugin uses: notebook files from
files and folders, and a distinct output stem for each.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.parse
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from grader.authoring import layouts
from grader.batch import lms
from grader.course.late import Late
from grader.course.model import Assignment
from grader.errors import UsageError
from grader.files import printable, safe_stem, sha256_file
from grader.judge.scorecard import Origin
from grader.notebook import MAX_NOTEBOOK_BYTES

ZIP_MAX_FILES = 100_000
ZIP_MAX_BYTES = 4 << 30  # uncompressed, in total
IGNORED = {"__MACOSX", ".ipynb_checkpoints", "__pycache__"}


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path  # the file graded (extracted from the archive for a zip)
    origin: str  # where it came from, as the person who handed it in would name it
    sha256: str
    name: str = ""  # a distinct stem for its output files, set by intake()
    id: str = ""  # where it came from, URL-safe and unique in the run (the module's docstring), set by intake()
    lms: Origin | None = None  # what an LMS's download said of it (``grader.batch.lms``)
    late: Late | None = None  # the assignment's late policy applied to its time (``grader.batch.lateness``)


@dataclass
class Intake:
    submissions: list[Submission]
    notes: list[str] = field(default_factory=list)  # what was skipped or chosen, for the person running it
    scratch: Path | None = None  # where archives were unpacked; removed by close()

    def identical(self) -> list[list[Submission]]:
        """Groups of two or more submissions with the same content, in intake order."""
        groups: dict[str, list[Submission]] = {}
        for s in self.submissions:
            groups.setdefault(s.sha256, []).append(s)
        return [g for g in groups.values() if len(g) > 1]

    def close(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def __enter__(self) -> Intake:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _visible(p: Path) -> bool:
    return not p.name.startswith(".") and p.name not in IGNORED


def _entries(folder: Path) -> tuple[list[Path], list[Path]]:
    """(files, folders) directly inside, visible ones only, sorted."""
    files, folders = [], []
    for p in sorted(folder.iterdir()):
        if not _visible(p):
            continue
        if p.is_dir():
            folders.append(p)
        elif p.is_file():
            files.append(p)
    return files, folders


def _walk(folder: Path) -> Iterator[Path]:
    """Every visible file under folder, skipping hidden and checkpoint folders, sorted."""
    files, folders = _entries(folder)
    yield from files
    for sub in folders:
        yield from _walk(sub)


class _Intake:
    def __init__(self, assignment: Assignment):
        self.assignment = assignment
        self.found: list[tuple[str, Path, str, str]] = []  # (student, path, origin, id)
        self.lms: dict[int, Origin] = {}  # index in found -> what an LMS's download said of it
        self.notes: list[str] = []
        self.scratch: Path | None = None

    def path(self, p: Path) -> None:
        if not p.exists():
            raise UsageError(f"{p} does not exist.")
        if p.is_dir():
            self.folder(p, origin=p, at=())
        elif zipfile.is_zipfile(p) and p.suffix.lower() == ".zip":
            self.archive(p)
        else:  # a file named explicitly is graded whatever it is, so a wrong upload still gets a scorecard
            self.found.append((p.stem, p, str(p), submission_id((_part(p),))))

    def folder(self, folder: Path, origin: Path | str, at: tuple[str, ...]) -> None:
        """A folder of notebooks or of students' folders; ``at``: its path under the batch root."""
        exchange = layouts.find(folder)
        if exchange is not None:
            return self.exchange(*exchange, origin if exchange[1] == folder else f"{origin}/{exchange[1].name}")
        files, folders = _entries(folder)
        made_by = lms.detect(files, folders)
        if made_by:
            return self.download(made_by, folder, files, folders, str(origin), at)
        for f in files:
            if f.suffix == ".ipynb":
                self.found.append((f.stem, f, f"{origin}/{f.name}", submission_id((*at, _part(f)))))
        for sub in folders:
            if sub.name == self.assignment.name:
                self.folder(sub, f"{origin}/{sub.name}", (*at, sub.name))
            else:
                self.student(sub.name, sub, f"{origin}/{sub.name}", (*at, sub.name))

    def student(self, student: str, folder: Path, origin: str, at: tuple[str, ...]) -> None:
        """One student's folder; ``at``: the student's id (its path under the batch root)."""
        files = list(_walk(folder))
        notebooks = [f for f in files if f.suffix == ".ipynb"]
        if not files:
            self.notes.append(f"{student}: {origin} is empty; nothing to grade")
            return
        if not notebooks:
            self.notes.append(f"{student}: no .ipynb file in {origin}; its files are graded as they are")
            notebooks = files
        elif len(notebooks) > 1:
            named = [f for f in notebooks if f.stem == self.assignment.name]
            if len(named) == 1:
                self.notes.append(f"{student}: {len(notebooks)} notebooks in {origin}; graded {named[0].name}")
                notebooks = named
            else:
                self.notes.append(f"{student}: {len(notebooks)} notebooks in {origin}; each is graded")
        for f in notebooks:
            inside = f.relative_to(folder)
            # One notebook graded from the folder is the student's; several are each a row of its own.
            key = at if len(notebooks) == 1 else (*at, *inside.parent.parts, _part(f))
            self.found.append((student, f, f"{origin}/{inside.as_posix()}", submission_id(key)))

    def download(
        self, made_by: str, folder: Path, files: list[Path], folders: list[Path], origin: str, at: tuple[str, ...]
    ) -> None:
        """An LMS's download: a submission per student, its id the LMS's id of the student."""
        got = lms.read(made_by, folder, files, folders, self.assignment.name, origin)
        self.notes.extend(got.notes)
        for f in got.found:
            self.lms[len(self.found)] = f.origin
            self.found.append((f.origin.user_id, f.path, f.where, submission_id((*at, f.origin.user_id))))
        for stray, why in got.strays:
            # Graded under its own name so it has a scorecard, but no student of the LMS is guessed
            # for it: its origin names the LMS and no user, so no roster row and no LMS file takes it.
            self.notes.append(
                f"{origin}/{stray.name}: {why}; not matched to a student (graded under its own name, in no LMS file)"
            )
            unknown = Origin(lms=made_by, user_id="", file=stray.name)
            if stray.is_dir():
                before = len(self.found)
                self.student(stray.name, stray, f"{origin}/{stray.name}", (*at, stray.name))
                for k in range(before, len(self.found)):
                    self.lms[k] = unknown
            else:
                self.lms[len(self.found)] = unknown
                self.found.append((_part(stray), stray, f"{origin}/{stray.name}", submission_id((*at, _part(stray)))))

    def exchange(self, layout: layouts.ExchangeLayout, root: Path, origin: Path | str) -> None:
        _, students = _entries(root)
        for sdir in students:
            adir = layout.assignment_folder(sdir, self.assignment.name)
            if adir.is_dir():
                self.student(sdir.name, adir, f"{origin}/{sdir.name}/{adir.relative_to(sdir).as_posix()}", (sdir.name,))
            else:
                self.notes.append(f"{sdir.name}: nothing submitted for {self.assignment.name} in {origin}/{sdir.name}")

    def archive(self, path: Path) -> None:
        if self.scratch is None:
            self.scratch = Path(tempfile.mkdtemp(prefix="grader-intake-"))
        dest = self.scratch / f"{len(list(self.scratch.iterdir()))}-{path.stem}"
        dest.mkdir()
        try:
            with zipfile.ZipFile(path) as zf:
                members = zf.infolist()
                if len(members) > ZIP_MAX_FILES or sum(m.file_size for m in members) > ZIP_MAX_BYTES:
                    raise UsageError(
                        f"{path} unpacks to more than {ZIP_MAX_FILES:,} files or "
                        f"{ZIP_MAX_BYTES >> 30} GB; unpack it yourself and grade the folder."
                    )
                for m in members:
                    name = PurePosixPath(m.filename.replace("\\", "/"))
                    if m.is_dir() or not name.parts:
                        continue
                    if name.is_absolute() or ".." in name.parts:
                        self.notes.append(f"{path.name}: skipped {m.filename!r}, a path outside the archive")
                        continue
                    target = dest.joinpath(*name.parts)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if m.file_size > MAX_NOTEBOOK_BYTES:
                        # Checked before anything is written: a member larger than any notebook the
                        # grader reads becomes a sparse file of its size (no disk used), which its
                        # student's scorecard then rejects with the reason.
                        with open(target, "wb") as out:
                            out.truncate(m.file_size)
                        continue
                    with zf.open(m) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
                    _keep_time(target, m)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, RuntimeError, ValueError) as exc:
            raise UsageError(f"{path} cannot be unpacked: {exc}.") from None
        root = dest
        files, folders = _entries(root)
        one = len(folders) == 1 and not files and not lms.detect([], folders)  # Moodle's folders: one per student
        if one and not layouts.starts_at(folders[0]):  # class.zip holding class/
            root = folders[0]
        self.folder(root, f"{path.name}:{root.relative_to(dest).as_posix()}".rstrip(":."), at=())


def _keep_time(path: Path, member: zipfile.ZipInfo) -> None:
    """The member's time in the archive as the file's: which of a student's files is newest (an LMS
    writes each file's time of upload)."""
    try:
        when = datetime(*member.date_time).timestamp()
        os.utime(path, (when, when))
    except (ValueError, OSError, OverflowError):
        pass  # a time the archive cannot give: the file keeps the time it was unpacked at


def intake(paths: list[Path], assignment: Assignment) -> Intake:
    """Every submission in these paths, with ids, student ids, content hashes and distinct output names."""
    found = _Intake(assignment)
    try:
        for p in paths:
            found.path(Path(p))
        _unique(found.found)
    except BaseException:
        if found.scratch is not None:
            shutil.rmtree(found.scratch, ignore_errors=True)
        raise
    per_student: dict[str, int] = {}
    for student, _, _, _ in found.found:
        per_student[student] = per_student.get(student, 0) + 1
    wanted = []
    for i, (student, path, _, _) in enumerate(found.found):
        one_each = per_student[student] == 1
        if i in found.lms and found.lms[i].user_id:  # the LMS's name of the student, with its id: smithjohn-12345
            o = found.lms[i]
            wanted.append(safe_stem(f"{o.name}-{o.user_id}" if o.name else o.user_id))
        else:
            wanted.append(safe_stem(student if one_each or path.stem == student else f"{student}-{path.stem}"))
    names = _distinct(wanted, [p for _, p, _, _ in found.found])
    # Students choose their file and folder names: what is printed and written of them is escaped
    # (``files.printable``), and output files get stems that fit any file system (``files.safe_stem``).
    subs = [
        Submission(
            student=printable(s),
            path=p,
            origin=printable(o),
            sha256=_sha_or_empty(p),
            name=n,
            id=i,
            lms=found.lms.get(k),
        )
        for k, ((s, p, o, i), n) in enumerate(zip(found.found, names, strict=True))
    ]
    return Intake(submissions=subs, notes=[printable(n) for n in found.notes], scratch=found.scratch)


def _part(path: Path) -> str:
    """A file's part of an id: its name, without ``.ipynb``."""
    return path.stem if path.suffix == ".ipynb" else path.name


def submission_id(parts: tuple[str, ...]) -> str:
    """The id of a submission from its path under the batch root: each part percent-encoded
    (letters, digits and ``-._~`` kept), joined by ``/``."""
    return "/".join(urllib.parse.quote_from_bytes(os.fsencode(p), safe="") for p in parts)


def _unique(found: list[tuple[str, Path, str, str]]) -> None:
    """Two submissions of one run never share an id: a UsageError naming both."""
    seen: dict[str, str] = {}
    clashes = []
    for _, _, origin, sid in found:
        if sid in seen:
            clashes.append(f"{printable(seen[sid])} and {printable(origin)} would both be {sid!r}")
        else:
            seen[sid] = origin
    if clashes:
        raise UsageError(
            "Two submissions of this run have the same id (where each came from names it): "
            + "; ".join(clashes)
            + ". Grade them in separate runs (each with its own --out), or rename one."
        )


def _sha_or_empty(path: Path) -> str:
    try:
        return sha256_file(path)
    except OSError:
        return ""  # Grader.grade reports why it cannot be opened


def _distinct(wanted: list[str], paths: list[Path]) -> list[str]:
    """Names as wanted; a clash becomes parent-name, then gets a number."""
    count: dict[str, int] = {}
    for w in wanted:
        count[w] = count.get(w, 0) + 1
    names, used = [], set()
    for w, p in zip(wanted, paths, strict=True):
        name = w if count[w] == 1 else safe_stem(f"{p.parent.name}-{w}")
        base, n = name, 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        names.append(name)
    return names


def collect(paths: list[Path]) -> list[Path]:
    """Notebook files from files and folders, in a stable order. A file named explicitly is
    graded whatever its name, so a wrong upload still gets a scorecard saying why."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(q for q in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in q.parts)
            out.extend(found)
        elif p.exists():
            out.append(p)
        else:
            raise UsageError(f"{p} does not exist.")
    return out


def output_names(paths: list[Path]) -> dict[Path, str]:
    """A distinct file stem per submission: its own stem, or parent-stem when stems collide."""
    stems: dict[str, int] = {}
    for p in paths:
        stems[p.stem] = stems.get(p.stem, 0) + 1
    names = {}
    for p in paths:
        names[p] = safe_stem(p.stem if stems[p.stem] == 1 else f"{p.parent.name}-{p.stem}")
    return names
