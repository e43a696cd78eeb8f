"""Grading a class at once: intake, parallel workers, resumable cached results.

    intake(paths, assignment)     -> Intake: one Submission per notebook, the student id taken from
                                     the layout, identical files found by content
    ResultStore(course, key)      -> one JSON file per submission content, written as soon as it is
                                     graded: an interrupted batch resumes, an unchanged one is not re-run
    grade_all(grader, ...)        -> a Scorecard per submission, --jobs N at a time, in intake order

Layouts understood (each path given may be any of them, or a single file):

    class/alice.ipynb                          a folder of notebooks: the student is the file name
    class/alice/<anything>.ipynb               a folder per student: the student is the folder name
    course/submitted/alice/<assignment>/*.ipynb  nbgrader's exchange layout
    class.zip                                  any of the above, inside a zip archive

A subfolder named after the assignment is a folder of notebooks, not a student. When a student's
folder holds several notebooks, the one named after the assignment is graded if there is one;
otherwise each is graded as its own row. A student folder with no notebook at all has its files
graded anyway, so the student gets a scorecard saying why nothing could be read.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator

from grader import PACKAGE_DIR
from grader.course.config import Assignment, Course
from grader.errors import GraderError, SolutionError, UsageError
from grader.judge.grading import sha256_file as sha256_of
from grader.judge.scorecard import CheckResult, QuestionResult, Scorecard

EXECUTORS = ("forking", "subprocess", "jupyter")
ZIP_MAX_FILES = 100_000
ZIP_MAX_BYTES = 4 << 30  # uncompressed, in total
IGNORED = {"__MACOSX", ".ipynb_checkpoints", "__pycache__"}
PLAIN_EVERY = 10.0  # seconds between progress lines when there is no terminal


def make_executor(name: str) -> Any:
    """The executor called ``name`` on the command line."""
    if name == "forking":
        from grader.run.forkserver import default_executor

        return default_executor()
    if name == "subprocess":
        from grader.run.execute import SubprocessExecutor

        return SubprocessExecutor()
    if name == "jupyter":
        from grader.run.jupyter_executor import JupyterExecutor

        return JupyterExecutor()
    raise UsageError(f"Unknown executor {name!r}; use one of: {', '.join(EXECUTORS)}.")


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------------------------
# Intake


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path  # the file graded (extracted from the archive for a zip)
    origin: str  # where it came from, as the person who handed it in would name it
    sha256: str
    name: str = ""  # a distinct stem for its output files, set by intake()


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
        self.found: list[tuple[str, Path, str]] = []  # (student, path, origin)
        self.notes: list[str] = []
        self.scratch: Path | None = None

    def path(self, p: Path) -> None:
        if not p.exists():
            raise UsageError(f"{p} does not exist.")
        if p.is_dir():
            self.folder(p, origin=p)
        elif zipfile.is_zipfile(p) and p.suffix.lower() == ".zip":
            self.archive(p)
        else:  # a file named explicitly is graded whatever it is, so a wrong upload still gets a scorecard
            self.found.append((p.stem, p, str(p)))

    def folder(self, folder: Path, origin: Path | str) -> None:
        if folder.name == "submitted":
            return self.nbgrader(folder, origin)
        if (folder / "submitted").is_dir():
            return self.nbgrader(folder / "submitted", f"{origin}/submitted")
        files, folders = _entries(folder)
        for f in files:
            if f.suffix == ".ipynb":
                self.found.append((f.stem, f, f"{origin}/{f.name}"))
        for sub in folders:
            if sub.name == self.assignment.name:
                self.folder(sub, f"{origin}/{sub.name}")
            else:
                self.student(sub.name, sub, f"{origin}/{sub.name}")

    def student(self, student: str, folder: Path, origin: str) -> None:
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
            self.found.append((student, f, f"{origin}/{f.relative_to(folder).as_posix()}"))

    def nbgrader(self, submitted: Path, origin: Path | str) -> None:
        _, students = _entries(submitted)
        for sdir in students:
            adir = sdir / self.assignment.name
            if adir.is_dir():
                self.student(sdir.name, adir, f"{origin}/{sdir.name}/{self.assignment.name}")
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
                    raise UsageError(f"{path} unpacks to more than {ZIP_MAX_FILES:,} files or "
                                     f"{ZIP_MAX_BYTES >> 30} GB; unpack it yourself and grade the folder.")
                for m in members:
                    name = PurePosixPath(m.filename.replace("\\", "/"))
                    if m.is_dir() or not name.parts:
                        continue
                    if name.is_absolute() or ".." in name.parts:
                        self.notes.append(f"{path.name}: skipped {m.filename!r}, a path outside the archive")
                        continue
                    target = dest.joinpath(*name.parts)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(m) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, RuntimeError, ValueError) as exc:
            raise UsageError(f"{path} cannot be unpacked: {exc}.") from None
        root = dest
        files, folders = _entries(root)
        if not files and len(folders) == 1 and folders[0].name != "submitted":  # class.zip holding class/
            root = folders[0]
        self.folder(root, f"{path.name}:{root.relative_to(dest).as_posix()}".rstrip(":."))


def intake(paths: list[Path], assignment: Assignment) -> Intake:
    """Every submission in these paths, with student ids, content hashes and distinct output names."""
    found = _Intake(assignment)
    try:
        for p in paths:
            found.path(Path(p))
    except BaseException:
        if found.scratch is not None:
            shutil.rmtree(found.scratch, ignore_errors=True)
        raise
    per_student: dict[str, int] = {}
    for student, _, _ in found.found:
        per_student[student] = per_student.get(student, 0) + 1
    wanted = []
    for student, path, _ in found.found:
        one_each = per_student[student] == 1
        wanted.append(student if one_each or path.stem == student else f"{student}-{path.stem}")
    names = _distinct(wanted, [p for _, p, _ in found.found])
    subs = [Submission(student=s, path=p, origin=o, sha256=_sha_or_empty(p), name=n)
            for (s, p, o), n in zip(found.found, names)]
    return Intake(submissions=subs, notes=found.notes, scratch=found.scratch)


def _sha_or_empty(path: Path) -> str:
    try:
        return sha256_of(path)
    except OSError:
        return ""  # Grader.grade reports why it cannot be opened


def _distinct(wanted: list[str], paths: list[Path]) -> list[str]:
    """Names as wanted; a clash becomes parent-name, then gets a number."""
    count: dict[str, int] = {}
    for w in wanted:
        count[w] = count.get(w, 0) + 1
    names, used = [], set()
    for w, p in zip(wanted, paths):
        name = w if count[w] == 1 else f"{p.parent.name}-{w}"
        base, n = name, 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        names.append(name)
    return names


# --------------------------------------------------------------------------------------------
# Results, keyed by submission content and assignment fingerprint


def fingerprint(grader: Any, assignment: Assignment) -> str:
    """Everything a scorecard depends on besides the submission itself."""
    from grader import __version__

    h = hashlib.sha256()
    h.update(__version__.encode())
    h.update(_code_digest().encode())  # a changed grader (a fixed message, a new check) grades again
    h.update(grader.references.key(assignment).encode())  # config digest, limits, solution and data bytes
    for path in (assignment.skeleton,):
        try:
            h.update(path.read_bytes())  # its skip-grading cells are recognised in submissions
        except OSError:
            pass
    h.update(repr(grader.course.scorecard).encode())
    h.update(repr(grader.reveal()).encode())
    h.update(grader.executor.name.encode())
    return h.hexdigest()


def _code_digest() -> str:
    h = hashlib.sha256()
    package = Path(PACKAGE_DIR)
    for path in sorted(package.rglob("*.py")):
        h.update(path.relative_to(package).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def card_to_data(card: Scorecard) -> dict:
    return dataclasses.asdict(card)


def card_from_data(data: dict) -> Scorecard:
    """The inverse of card_to_data; raises (KeyError, TypeError) on anything else."""
    questions = []
    for q in data["questions"]:
        checks = [CheckResult(**c) for c in q.get("checks", [])]
        questions.append(QuestionResult(**{**q, "checks": checks}))
    return Scorecard(**{**data, "questions": questions})


class ResultStore:
    """Finished scorecards on disk, one file per submission content, written atomically."""

    def __init__(self, root: Path, assignment: Assignment, key: str):
        self.dir = Path(root) / "results" / f"{assignment.name}-{key[:16]}"

    def _file(self, sha: str) -> Path:
        return self.dir / f"{sha}.json"

    def get(self, sha: str) -> Scorecard | None:
        if not sha:
            return None
        try:
            return card_from_data(json.loads(self._file(sha).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, sha: str, card: Scorecard) -> None:
        if not sha:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        path = self._file(sha)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(card_to_data(card)), encoding="utf-8")
        tmp.replace(path)


# --------------------------------------------------------------------------------------------
# Progress


class Progress:
    """A bar with an ETA on a terminal (tqdm); plain lines every few seconds otherwise (CI logs)."""

    def __init__(self, total: int, label: str, *, stream: Any = None, bar: bool | None = None):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream if stream is not None else sys.stderr
        if bar is None:
            bar = self.stream.isatty() and not os.environ.get("CI")
        self.started = self.last = time.monotonic()
        self.bar = None
        if bar:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=label, unit="nb", file=self.stream, dynamic_ncols=True,
                            smoothing=0.1)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.monotonic()
        if self.done >= self.total or now - self.last >= PLAIN_EVERY:
            self.last = now
            print(self.line(now), file=self.stream, flush=True)

    def line(self, now: float) -> str:
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        text = f"{self.label}: {self.done}/{self.total} graded ({100 * self.done / max(self.total, 1):.0f}%)"
        if self.done < self.total and rate > 0:
            text += f", {rate:.1f}/s, about {_duration((self.total - self.done) / rate)} left"
        else:
            text += f" in {_duration(elapsed)}"
        return text

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes} min {secs:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


# --------------------------------------------------------------------------------------------
# Grading many


@dataclass
class Outcome:
    cards: list[Scorecard]  # one per submission, in intake order
    ran: int  # distinct contents graded in this run
    cached: int  # distinct contents whose result came from the store
    elapsed: float


def grade_all(grader: Any, assignment: Assignment, submissions: list[Submission], *, jobs: int = 1,
              store: ResultStore | None = None, force: bool = False,
              on_card: Callable[[Submission, Scorecard], None] | None = None,
              progress: Progress | None = None) -> Outcome:
    """Grade every submission, ``jobs`` at a time; identical contents are graded once.

    Each result is stored the moment it is ready, so after an interruption (Ctrl-C, a kill) the
    same call picks up where it stopped. ``on_card`` runs in the calling thread for each submission
    as soon as its scorecard exists (cached ones first). A slow notebook holds one worker only.
    """
    started = time.monotonic()
    grader.references.get(assignment)  # a broken solution stops the batch before anything runs
    groups: dict[str, list[int]] = {}
    order: list[str] = []
    for i, s in enumerate(submissions):
        key = s.sha256 or f"unreadable:{i}"
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(i)
    cards: list[Scorecard | None] = [None] * len(submissions)

    def deliver(key: str, card: Scorecard) -> None:
        for i in groups[key]:
            s = submissions[i]
            own = dataclasses.replace(card, student=s.student, submission=s.path.name)
            cards[i] = own
            if on_card is not None:
                on_card(s, own)
        if progress is not None:
            progress.advance(len(groups[key]))

    todo: list[str] = []
    cached = 0
    for key in order:
        hit = None if force or store is None else store.get(key)
        if hit is not None:
            cached += 1
            deliver(key, hit)
        else:
            todo.append(key)

    def work(key: str) -> Scorecard:
        s = submissions[groups[key][0]]
        return grader.grade(assignment, s.path, student=s.student)

    jobs = max(1, int(jobs))
    pending = iter(todo)
    running: dict[cf.Future, str] = {}
    pool = cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="grader")
    try:
        with _interrupt_on_sigterm():
            for key in _take(pending, 2 * jobs):
                running[pool.submit(work, key)] = key
            while running:
                finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    key = running.pop(fut)
                    card = _result(fut, submissions[groups[key][0]], assignment, grader)
                    if store is not None and not card.execution.get("internal_error"):
                        store.put(key, card)
                    deliver(key, card)
                    for nxt in _take(pending, 1):
                        running[pool.submit(work, nxt)] = nxt
    except BaseException as exc:
        for fut in running:
            fut.cancel()
        close = getattr(grader.executor, "close", None)
        if isinstance(exc, (KeyboardInterrupt, SystemExit)) and close is not None:
            close()  # ends the notebooks still running, so the workers return at once
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return Outcome(cards=[c for c in cards if c is not None], ran=len(todo), cached=cached,
                   elapsed=time.monotonic() - started)


def _take(it: Iterator[str], n: int) -> list[str]:
    out = []
    for _ in range(n):
        try:
            out.append(next(it))
        except StopIteration:
            break
    return out


def _result(fut: cf.Future, sub: Submission, assignment: Assignment, grader: Any) -> Scorecard:
    """The future's scorecard; a fault of the grader itself stops the batch or becomes a crashed card."""
    try:
        return fut.result()
    except (SolutionError, UsageError):
        raise
    except GraderError:
        raise  # the executor cannot run notebooks at all: nothing else would be graded either
    except Exception as exc:  # a bug in the grader: this submission says so, the rest goes on
        card = Scorecard(assignment=assignment.name, submission=sub.path.name, sha256=sub.sha256,
                         status="crashed", score=0.0, max_score=assignment.max_score, student=sub.student,
                         reason=f"the grader itself failed on this submission ({type(exc).__name__}: {exc}); "
                                "please report it")
        card.questions = [QuestionResult(id=q.id, title=q.title, score=0.0, max_score=q.points, status="error",
                                         feedback=["Not graded: the grader failed on this submission."])
                          for q in assignment.questions]
        card.execution = {"executor": grader.executor.name, "internal_error": True}
        return card


class _interrupt_on_sigterm:
    """SIGTERM (a CI cancel, ``kill``) ends the batch like Ctrl-C: stored results stay, children end."""

    def __enter__(self) -> None:
        self.saved = None
        if threading.current_thread() is threading.main_thread():
            self.saved = signal.signal(signal.SIGTERM, _raise_interrupt)

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            signal.signal(signal.SIGTERM, self.saved)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def summary_lines(intake_: Intake, outcome: Outcome | None = None) -> list[str]:
    """What the person running the batch should know besides the scores."""
    lines = [f"note: {n}" for n in intake_.notes]
    for group in intake_.identical():
        who = ", ".join(f"{s.student} ({s.origin})" if s.student != s.path.stem else s.origin for s in group)
        lines.append(f"identical files: {who}")
    if outcome is not None and outcome.cached:
        lines.append(f"{outcome.cached} unchanged submission(s) taken from the results cache "
                     "(--force grades them again)")
    return lines
