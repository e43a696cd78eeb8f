"""Where a call that puts a value in (``__grader_inject__(key)``) goes in a cell: right after a
statement, whatever the statement's shape.

After a simple statement the call is appended to its last line (``X = f(); __grader_inject__('X')``).
A block (a loop, an ``if``, ``with`` or ``try``, a ``def``) has no line of its own to append to:
its last line is inside its body, where the call would run on every pass of a loop or in one
branch only. The call then takes a line of its own after the block: a blank or comment line
before the next statement, else the start of the next statement's line (a simple one), else a
new line. Only the last of these shifts the cell's later lines, which a student's traceback reads.
"""

from __future__ import annotations

from grader.names import INJECT
from grader.notebook.flow import parse_cell


def _call(keys: list[str]) -> str:
    return "; ".join(f"{INJECT}({k!r})" for k in keys)


def inject_after(source: str, calls: dict[int, list[str]]) -> str:
    """The cell with ``__grader_inject__(key)`` for each key run right after its statement (by
    index among the cell's top-level statements). A cell that is not valid Python is left as it is."""
    parsed = parse_cell(source)
    if parsed.syntax_error is not None or not calls:
        return source
    statements = parsed.statements
    lines = source.splitlines(keepends=True)
    appended: dict[tuple[int, int], list[str]] = {}  # (line, byte column) -> keys, after a simple statement
    own_line: dict[int, list[str]] = {}  # a blank or comment line -> keys put there
    prefixed: dict[int, list[str]] = {}  # a line whose statement the keys go before
    inserted: dict[int, list[str]] = {}  # a line after which a new line holds the keys
    for i in sorted(calls):
        stmt, keys = statements[i], calls[i]
        if stmt.end_lineno is None or stmt.end_col_offset is None:
            continue
        if not stmt.compound:
            appended.setdefault((stmt.end_lineno, stmt.end_col_offset), []).extend(keys)
            continue
        following = statements[i + 1] if i + 1 < len(statements) else None
        limit = following.lineno if following is not None else len(lines) + 1
        spare = next(
            (
                n
                for n in range(stmt.end_lineno + 1, limit)
                if not lines[n - 1].strip() or lines[n - 1].lstrip().startswith("#")
            ),
            None,
        )
        if spare is not None:
            own_line.setdefault(spare, []).extend(keys)
        elif following is not None and not following.compound and following.lineno > stmt.end_lineno:
            prefixed.setdefault(following.lineno, []).extend(keys)
        else:
            inserted.setdefault(stmt.end_lineno, []).extend(keys)
    out = []
    for n, line in enumerate(lines, start=1):
        for (lineno, col), keys in sorted(appended.items(), reverse=True):  # right to left keeps columns valid
            if lineno == n:
                at = len(line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))  # ast columns count bytes
                line = line[:at] + "".join(f"; {INJECT}({k!r})" for k in keys) + line[at:]
        if n in own_line:
            text = line.strip()
            line = _call(own_line[n]) + (f"  {text}" if text else "") + ("\n" if line.endswith("\n") else "")
        if n in prefixed:
            line = _call(prefixed[n]) + "; " + line
        out.append(line)
        if n in inserted:
            out.append(("" if line.endswith("\n") else "\n") + _call(inserted[n]) + "\n")
    return "".join(out)
