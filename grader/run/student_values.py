"""The student side of a check: evaluating its expression in the student's namespace, and an
exception described as data (``ErrorWire``).

Runs in the sandboxed student process, beside ``grader.run.worker``; like it, it imports nothing of
the grader's side.
"""

from __future__ import annotations

import ast
import re
import sys
import traceback
from typing import TYPE_CHECKING, Any

from grader.errors import CheckFailed
from grader.names import CHECK_FILE, INJECT
from grader.seeding import seed_everything

if TYPE_CHECKING:  # the message shapes, for the type checker only
    from grader.run.job import CaptureMessage, CellEndMessage, ErrorWire

# The injection call a rewritten cell carries, left out of the lines of a traceback the student reads:
# appended to a statement (``X = f(); inject('X')``) or, after a block, before the next (``inject('X'); y = 2``).
INJECT_RE = re.compile(r";\s*" + INJECT + r"\([^)]*\)|^\s*" + INJECT + r"\([^)]*\)(?:;\s*)?")


def evaluate_check(code: Any, target: str, ns: dict[str, Any], seed: Any) -> Any:
    """The value of a check's expression in the student's namespace. When the expression itself
    fails (``torch.stack(heads)`` on a list of NumPy arrays, an equivalent value of another library),
    it is tried again with the values it reads converted between NumPy and torch; an exception
    raised inside the student's own code is the student's, and is raised as it is."""
    try:
        return eval(code, ns)  # noqa: S307 - student process, student namespace
    except BaseException as exc:  # noqa: BLE001 - decided below: the student's error, or the check's
        if isinstance(exc, (KeyboardInterrupt, SystemExit)) or raised_in_student_code(exc):
            raise
        if isinstance(exc, NameError) and exc.name is not None and exc.name not in ns:
            raise  # a name the expression reads that the notebook never defined: no other form has it
        first = exc
    names = {n.id for n in ast.walk(ast.parse(target, mode="eval")) if isinstance(n, ast.Name)}
    for form in ("torch", "float32", "numpy"):
        changed = {n: _converted(ns[n], form) for n in names if n in ns}
        changed = {n: v for n, v in changed.items() if v is not ns[n]}
        if not changed:
            continue
        if seed is not None:
            seed_everything(int(seed))
        try:
            return eval(code, {**ns, **changed})  # noqa: S307 - student process, student namespace
        except Exception:  # noqa: BLE001 - another form to try, else the first failure is reported
            continue
    raise CheckFailed(first) from None


def raised_in_student_code(exc: BaseException) -> bool:
    """Whether the traceback goes through a student's cell after the check's expression."""
    try:
        files = [fr.filename for fr in traceback.extract_tb(exc.__traceback__)]
    except BaseException:  # noqa: BLE001 - unreadable frames: treat it as the student's, as before
        return True
    after = files[files.index(CHECK_FILE) + 1 :] if CHECK_FILE in files else files
    return any(f.startswith("<cell ") for f in after)


def _converted(value: Any, form: str) -> Any:
    """``value`` as NumPy arrays (form ``numpy``) or torch tensors (``torch``; ``float32`` also
    makes floating arrays single precision), inside lists and tuples too; ``value`` itself
    (the same object) when there is nothing to convert."""
    np, torch = sys.modules.get("numpy"), sys.modules.get("torch")
    if isinstance(value, (list, tuple)):
        items = [_converted(v, form) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    if (
        form in ("torch", "float32")
        and torch is not None
        and np is not None
        and isinstance(value, np.ndarray)
        and value.dtype.kind in "biufc"
    ):
        t = torch.as_tensor(value)
        return t.float() if form == "float32" and t.is_floating_point() else t
    if form == "float32" and torch is not None and isinstance(value, torch.Tensor) and value.dtype == torch.float64:
        return value.float()
    if form == "numpy" and torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value


def _safe_str(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - the student's exception class decides what str() does
        text = "<unprintable message>"
    return text[:500]


def describe_error(exc: BaseException, max_lines: int) -> ErrorWire:
    """The exception as data, its traceback trimmed to frames in the student's cells."""
    frames: list[str] = []
    source = ""  # the innermost student line, as code
    try:
        for fr in traceback.extract_tb(exc.__traceback__):
            if fr.filename.startswith("<cell ") or fr.filename == CHECK_FILE:
                where = fr.filename.strip("<>")
                source = INJECT_RE.sub("", fr.line or "").strip()
                frames.append(f"{where}, line {fr.lineno}" + (f": {source}" if source else ""))
    except BaseException:  # noqa: BLE001 - reading the frames and their source can raise anything: report none
        frames, source = [], ""
    if isinstance(exc, SyntaxError) and exc.lineno:
        text = exc.text
        if text is None and str(exc.filename).startswith("<cell "):  # compiled from the parsed cell:
            import linecache  # the line is in the text IPython's compiler cached for the cell

            text = linecache.getline(str(exc.filename), exc.lineno)
        source = (text or "").strip()
        frames.append(f"line {exc.lineno}: {source}")
    name = getattr(exc, "name", None) if isinstance(exc, NameError) else None
    errno = exc.errno if isinstance(exc, OSError) else None
    filename = exc.filename if isinstance(exc, OSError) else None
    return {
        "ename": type(exc).__name__[:100],
        "evalue": _safe_str(exc),
        "traceback": frames[-max_lines:],
        "name": name[:100] if isinstance(name, str) else "",
        "source": source[:300] if frames else "",
        "errno": errno if type(errno) is int else 0,
        "filename": filename[:300] if isinstance(filename, str) else "",
    }


def add_error(message: CellEndMessage | CaptureMessage, exc: BaseException, max_lines: int) -> None:
    """Put the exception (``describe_error``) into a cell's or a capture's message."""
    error = describe_error(exc, max_lines)
    message["ename"], message["evalue"], message["traceback"] = error["ename"], error["evalue"], error["traceback"]
    if error["name"]:
        message["name"] = error["name"]
    if error["source"]:
        message["source"] = error["source"]
    if error["errno"]:
        message["errno"], message["filename"] = error["errno"], error["filename"]
