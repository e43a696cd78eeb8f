"""The scorecard as one versioned document: ``dump`` and ``load``, the only pair that writes and reads it.

    dump(card) -> dict        JSON-ready: {"format_version": N, <the card's fields>}, every record kept
    load(data) -> Scorecard   the same card (``load(dump(card)) == card``), or a DocumentError

Every consumer that reads a scorecard back (the batch's results cache, a cluster worker's answer,
the review store, a shard's manifest, ``grader report`` over ``<name>.json`` files) goes through
this pair; YAML, Markdown, HTML and the LMS files are renderings of the card, never read back.

The codec is typed and closed. A card is a tree of frozen dataclasses (``RECORDS``, an explicit
registry), ``StrEnum`` members, tuples and plain values. Each dataclass is written as an object of
its fields, by name; where a field's declared type allows several records (a check's reasons, why a
value is missing, a test's findings), the object carries its record's name under ``"type"``.
Reading is directed by the declared field types alone: a value of another shape, a record name
that is not registered or not allowed there, a field the record does not have, a number where text
belongs all raise ``DocumentError`` with the path of the value in the document. Nothing is
unpickled, evaluated or imported by a name found in the file.

Versions (``FORMAT_VERSION``):

    1   the results cache before this module: no ``format_version``, a check's reasons left out
    2   every record kept; ``id``, the submission's identity
    3   ``origin``, what an LMS's download said of it, and ``late``, the late policy applied (a
        version 2 document is read as it is: it has neither)

A document of an older version cannot be upgraded (what version 1 left out is what grading found),
so ``load`` says which grader wrote it and how to grade again; a newer one asks for a newer grader.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any

from grader.course.late import Late
from grader.errors import BadValue, DocumentError
from grader.judge import verdicts as v
from grader.judge.scorecard import (
    CellError,
    CheckResult,
    Execution,
    Feedback,
    Origin,
    QuestionResult,
    Scorecard,
    StudentData,
)
from grader.notebook.answers import Answer
from grader.run.job import CellRun, RunError

FORMAT_VERSION = 3
READS = (2, 3)  # the versions load reads: 3 only adds records
TYPE = "type"  # the key naming a record where its field allows several
VERSION = "format_version"

# Every record a scorecard may hold; nothing else is read.
RECORDS: tuple[type, ...] = (
    Scorecard,
    QuestionResult,
    CheckResult,
    Feedback,
    Execution,
    CellError,
    StudentData,
    Answer,
    v.PersonGrade,
    v.RubricMark,
    RunError,
    CellRun,
    Origin,
    Late,
    # why a check did not simply pass
    v.NotProduced,
    v.Unanswered,
    v.Missing,
    v.Differs,
    v.CarriedForward,
    v.RightOnceFixed,
    v.UsesWrongCallable,
    v.VariantFails,
    v.VariantUpstream,
    v.VariantTypedIn,
    v.VariantUntestable,
    v.TestFailed,
    v.AuthorSaid,
    v.VariantCause,
    # why a value is missing
    v.CannotBeJudged,
    v.Raised,
    v.CellFailed,
    v.NeedsBlank,
    v.NeedsFailed,
    v.NotReached,
    v.NeverDefined,
    v.NotYetDefined,
    v.NotDefinedAtEnd,
    # a test's findings
    v.AssertionSaid,
    v.Compared,
    v.DoesNotHold,
    v.NotClose,
    v.SiteRaised,
    v.TestRaised,
    v.DidNotRaise,
    v.Said,
    v.SiteUnusable,
    v.SiteUnprepared,
    v.TestFailedItself,
    v.WroteToStderr,
)
BY_NAME: dict[str, type] = {cls.__name__: cls for cls in RECORDS}
assert len(BY_NAME) == len(RECORDS), "two records of one name"


def dump(card: Scorecard) -> dict[str, Any]:
    """The card as JSON-ready data: ``format_version``, then its fields, every record kept."""
    data = _dump(card, Scorecard)
    assert isinstance(data, dict)
    return {VERSION: FORMAT_VERSION, **data}


def load(data: object) -> Scorecard:
    """The card ``dump`` wrote; a DocumentError for anything else, an older or newer version included."""
    if not isinstance(data, dict):
        raise DocumentError(f"a scorecard document is a JSON object, not {_kind(data)}")
    version = data.get(VERSION)
    if version not in READS or isinstance(version, bool):
        raise DocumentError(_version_message(data, version))
    card = _load({k: val for k, val in data.items() if k != VERSION}, Scorecard)
    assert isinstance(card, Scorecard)
    return card


def _version_message(data: dict[str, Any], version: object) -> str:
    wrote = data.get("grader_version")
    by = f"grader {wrote}" if isinstance(wrote, str) and wrote else "an earlier grader"
    if version is None:
        return (
            f"this scorecard was written by {by}, before scorecards carried a format_version and kept their "
            f"records; this grader reads format {FORMAT_VERSION} only. Grade the submission again "
            "(`grader grade SUBMISSIONS -a ASSIGNMENT --out DIR`) to write it in the current format"
        )
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        return (
            f"this scorecard is in format {version}, written by {by}, newer than this grader's format "
            f"{FORMAT_VERSION}: read it with that grader, or grade the submission again with this one"
        )
    return (
        f"this scorecard is in format {version!r}, written by {by}; this grader reads format {FORMAT_VERSION} "
        "only. Grade the submission again (`grader grade SUBMISSIONS -a ASSIGNMENT --out DIR`) to write it "
        "in the current format"
    )


# --------------------------------------------------------------------------------------------
# The codec, directed by the declared types


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, Any, bool], ...]:
    """(name, declared type, has a default) of each field of a registered record."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (
            f.name,
            hints[f.name],
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
        if f.init
    )


def _members(hint: Any) -> tuple[Any, ...]:
    """The alternatives of a union (``X | Y``), or the type itself."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return (hint,)


@functools.cache
def _records_of(hint: Any) -> tuple[type, ...]:
    return tuple(m for m in _members(hint) if isinstance(m, type) and dataclasses.is_dataclass(m))


def _dump(value: Any, hint: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if BY_NAME.get(cls.__name__) is not cls:
            raise DocumentError(f"{cls.__name__} is not a record a scorecard may hold")
        out: dict[str, Any] = {}
        if len(_records_of(hint)) > 1:
            out[TYPE] = cls.__name__
        for name, field_hint, _ in _fields(cls):
            out[name] = _dump(getattr(value, name), field_hint)
        return out
    if isinstance(value, tuple | list):
        return [_dump(item, _item_hint(hint, i)) for i, item in enumerate(value)]
    if isinstance(value, str | int | float | bool):
        return value
    raise DocumentError(f"a value of type {type(value).__name__} cannot be written in a scorecard")


@functools.cache
def _item_hint(hint: Any, i: int) -> Any:
    for m in _members(hint):
        if typing.get_origin(m) is tuple:
            args = typing.get_args(m)
            if len(args) == 2 and args[1] is Ellipsis:
                return args[0]
            return args[i] if i < len(args) else Any
    return Any


Decoder = Callable[[Any], Any]


def _load(data: Any, hint: Any) -> Any:
    try:
        return _decoder(hint)(data)
    except BadValue as exc:
        path = "".join(reversed(exc.path)).lstrip(".")
        raise DocumentError(f"{_where(path)}: {exc.message}") from None


@functools.cache
def _decoder(hint: Any) -> Decoder:
    """The function that reads a value of this declared type, made once per type."""
    members = _members(hint)
    optional = type(None) in members
    records = _records_of(hint)
    if records:
        inner = _record_decoder(records)
    else:
        (kind,) = [m for m in members if m is not type(None)]
        inner = _scalar_decoder(kind, hint)

    def decode(data: Any) -> Any:
        if data is None:
            if optional:
                return None
            raise BadValue("a value is missing (null)")
        return inner(data)

    return decode


def _scalar_decoder(kind: Any, hint: Any) -> Decoder:
    expected = _hint_text(hint)
    if typing.get_origin(kind) is tuple:
        return _tuple_decoder(kind)
    if isinstance(kind, type) and issubclass(kind, Enum):
        enum: type[Enum] = kind
        allowed = ", ".join(str(e.value) for e in enum)

        def member(data: Any) -> Any:
            try:
                return enum(data)
            except ValueError:
                raise BadValue(f"{data!r} is not one of {allowed}") from None

        return member
    accepts: dict[Any, tuple[type, ...]] = {bool: (bool,), int: (int,), float: (int, float), str: (str,)}
    if kind not in accepts:
        raise DocumentError(f"a field of type {kind!r} cannot be read")  # a record the registry should not hold
    types_ok = accepts[kind]

    def plain(data: Any) -> Any:
        if isinstance(data, types_ok) and (kind is bool or not isinstance(data, bool)):
            return float(data) if kind is float and type(data) is int else data
        raise BadValue(f"expected {expected}, found {_kind(data)}")

    return plain


def _tuple_decoder(hint: Any) -> Decoder:
    args = typing.get_args(hint)
    if len(args) == 2 and args[1] is Ellipsis:
        item = _decoder(args[0])

        def items(data: Any) -> tuple[Any, ...]:
            if not isinstance(data, list):
                raise BadValue(f"expected a list, found {_kind(data)}")
            out = []
            for i, x in enumerate(data):
                try:
                    out.append(item(x))
                except BadValue as exc:
                    exc.path.append(f"[{i}]")
                    raise
            return tuple(out)

        return items
    each = [_decoder(a) for a in args]

    def fixed(data: Any) -> tuple[Any, ...]:
        if not isinstance(data, list):
            raise BadValue(f"expected a list, found {_kind(data)}")
        if len(data) != len(each):
            raise BadValue(f"expected a list of {len(each)}, found {len(data)} items")
        out = []
        for i, (d, x) in enumerate(zip(each, data, strict=True)):
            try:
                out.append(d(x))
            except BadValue as exc:
                exc.path.append(f"[{i}]")
                raise
        return tuple(out)

    return fixed


def _record_decoder(allowed: tuple[type, ...]) -> Decoder:
    by_tag = {cls.__name__: cls for cls in allowed}

    def record(data: Any) -> Any:
        if not isinstance(data, dict):
            raise BadValue(f"expected a record, found {_kind(data)}")
        tag = data.get(TYPE)
        if tag is None:
            if len(allowed) > 1:
                raise BadValue(f"a record without its {TYPE!r}")
            return _build(allowed[0], data)
        found = by_tag.get(tag) if isinstance(tag, str) else None
        if found is None:
            if isinstance(tag, str) and tag in BY_NAME:
                raise BadValue(f"a {tag} cannot be here")
            raise BadValue(f"{tag!r} is not a record a scorecard may hold")
        return _build(found, data)

    return record


@functools.cache
def _field_decoders(cls: type) -> tuple[tuple[str, Decoder, bool], ...]:
    return tuple((name, _decoder(hint), has_default) for name, hint, has_default in _fields(cls))


def _build(cls: type, data: dict[str, Any]) -> Any:
    fields = _field_decoders(cls)
    extra = len(data) - (TYPE in data)
    kwargs = {}
    for name, decode, has_default in fields:
        if name in data:
            extra -= 1
            try:
                kwargs[name] = decode(data[name])
            except BadValue as exc:
                exc.path.append(f".{name}")
                raise
        elif not has_default:
            raise BadValue(f"{cls.__name__} lacks its field {name!r}")
    if extra:
        names = {name for name, _, _ in fields}
        unknown = sorted(repr(k) for k in data if k != TYPE and k not in names)
        raise BadValue(f"{cls.__name__} has no field {', '.join(unknown)}")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise BadValue(f"{cls.__name__} cannot be built ({exc})") from None


def _where(path: str) -> str:
    return f"at {path}" if path else "at the top"


def _kind(data: object) -> str:
    if data is None:
        return "null"
    return {dict: "an object", list: "a list", str: "text", bool: "true or false"}.get(
        type(data), "a number" if isinstance(data, int | float) else type(data).__name__
    )


def _hint_text(hint: Any) -> str:
    names = []
    for m in _members(hint):
        if m is type(None):
            names.append("null")
        elif m is str:
            names.append("text")
        elif m in (int, float):
            names.append("a number")
        elif m is bool:
            names.append("true or false")
        else:
            names.append(getattr(m, "__name__", str(m)))
    return " or ".join(dict.fromkeys(names))
