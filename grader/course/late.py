"""The late policy of an assignment (``late:`` in config.yaml), and what it makes of one submission's time.

    late:
      due: 2026-03-06T23:59            # with its zone (+01:00, Z) or in `timezone`
      timezone: Europe/Zurich          # the course's zone: the dates of this section written without one
      times_timezone: UTC              # the zone of submission times written without one (none: refused);
                                       # Moodle's worksheet dates are read in `timezone` unless this is set
      grace: 15 minutes                # late by at most this: on time
      penalty: 10%                     # per day or per hour (`per`), of the points possible (`of`)
      per: day                         # day | hour
      count: started                   # started: every started day counts; completed: whole days only
      cap: 30%                         # the penalty at most
      floor: 40%                       # the penalty never takes a grade below this share of the points
      not_accepted_after: 7 days       # a duration after the due date, or a date: 0 points after it
      of: points                       # points (of the points possible, as Canvas) | score (of the score earned)
      extensions:                      # per student (its submission id, LMS id or roster student): a new due
        "12345": 2 days                #   date or a duration added to the due date
      extensions_column: extension     # or a roster column holding the same
      extensions_unit: hours           # how a bare number of an extension is read (none: a unit is required)
      times: lms                       # lms (the download's late marker or timestamps) | timestamp.txt
                                       # (the file an exchange layout writes beside the notebook) | a CSV file
      marked_late_counts_as: 1 day     # an LMS that only marks a file late (Canvas): how late it counts

What a submission's time makes is a ``Late`` record, kept in its scorecard
(``grader.judge.document``): when, how late, the policy's terms, the percent taken off and a
person's waiver. ``score_after`` is the one rule from points earned to points kept, so a card made
again (a person's grade) keeps its penalty. Every sentence about it is ``Late.line``.

Why one module: the policy, the record it makes, the sentence that record becomes and the reading
of the times it is applied to are one rule, changed together (a new term of the policy is a field
of both, a clause of the sentence and a key of the section); split, each part would import the
others' internals.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from grader.course.reader import Reader, describe
from grader.errors import UsageError

PERIODS = {"day": 86400.0, "hour": 3600.0}
_UNITS = {
    "w": 604800.0,
    "week": 604800.0,
    "weeks": 604800.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
    "h": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "m": 60.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
    "seconds": 1.0,
}
_DURATION_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*,?", re.IGNORECASE)
TIMES_LMS, TIMES_BESIDE = (
    "lms",
    "timestamp.txt",
)  # timestamp.txt: the file an exchange layout writes beside each submission


def parse_duration(text: object) -> float:
    """Seconds in ``2 days``, ``1 day 3 h``, ``15m``, ``36 hours``; a ValueError otherwise."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise ValueError(f"a duration such as '2 days' or '15 minutes', got {describe(text)}")
    if isinstance(text, int | float):
        raise ValueError(f"a duration with its unit ('{text} days', '{text} hours'), got {text}")
    s, pos, total = text.strip(), 0, 0.0
    if not s:
        raise ValueError("a duration such as '2 days', got nothing")
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError(f"a duration such as '2 days', '1 day 3 h' or '15 minutes', got {text!r}")
        total += float(m.group(1)) * _UNITS[m.group(2).lower()]
        pos = m.end()
    return total


def parse_percent(value: object) -> float:
    """``10%``, ``10 %`` or ``10`` as 10.0, from 0 to 100."""
    if isinstance(value, bool):
        raise ValueError(f"a percentage such as 10%, got {describe(value)}")
    if isinstance(value, int | float):
        pct = float(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*\d+(\.\d+)?\s*%?\s*", value):
        pct = float(value.strip().rstrip("%"))
    else:
        raise ValueError(f"a percentage such as 10%, got {describe(value)}")
    if not 0 <= pct <= 100:
        raise ValueError(f"a percentage from 0 to 100, got {value}")
    return pct


def parse_time(value: object, zone: tzinfo | None) -> datetime:
    """An ISO 8601 date and time (``2026-03-06T23:59:00+01:00``, ``...Z``; a date alone is its end,
    23:59:59), in ``zone`` when written without one; a ValueError when it has none and no zone is given."""
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, date):
        when = datetime(value.year, value.month, value.day, 23, 59, 59)
    elif isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            d = date.fromisoformat(text)
            when = datetime(d.year, d.month, d.day, 23, 59, 59)
        else:
            when = _clock(text)
    else:
        raise ValueError(f"a date and time such as 2026-03-06T23:59+01:00, got {describe(value)}")
    if when.tzinfo is None:
        if zone is None:
            raise ValueError(f"{value} has no time zone (write it as {when.isoformat()}+01:00, or set late.timezone)")
        when = when.replace(tzinfo=zone)
    return when


_ZONE_NAMES = {"UTC": UTC, "GMT": UTC, "Z": UTC}
_MOODLE = ("%A, %d %B %Y, %I:%M %p", "%A, %d %B %Y, %H:%M", "%d %B %Y, %I:%M %p", "%d %B %Y, %H:%M")


def submission_time(text: str, zone: tzinfo | None, worksheet_zone: tzinfo | None) -> datetime:
    """A submission's time as a times file, an exchange layout or an LMS writes it: with its zone, or
    in ``zone`` (``times_timezone``) when one is set; Moodle's worksheet dates, which Moodle writes in
    the site's zone and never with it, in ``worksheet_zone`` (the course's). A ValueError otherwise."""
    when = _clock(text.strip())
    if when.tzinfo is not None:
        return when
    if zone is not None:
        return when.replace(tzinfo=zone)
    if _moodle_format(text.strip()) and worksheet_zone is not None:
        return when.replace(tzinfo=worksheet_zone)
    raise ValueError(
        f"{text.strip()} has no time zone (write it as {when.isoformat()}+01:00 or ...Z, or set late.times_timezone "
        "to the zone these times are in)"
    )


def _moodle_format(text: str) -> bool:
    for fmt in _MOODLE:
        try:
            datetime.strptime(text, fmt)
            return True
        except ValueError:
            continue
    return False


def _clock(text: str) -> datetime:
    """A clock time as the LMSs and exchange layouts write them: ISO 8601 (``T`` or a space), with or without
    an offset or a trailing ``UTC``; Moodle's ``Tuesday, 7 March 2023, 11:15 AM`` (no zone)."""
    m = re.fullmatch(r"(.*\d)\s+([A-Za-z]{1,5})", text)
    if m is not None and m.group(2).upper() in _ZONE_NAMES:
        return datetime.fromisoformat(m.group(1)).replace(tzinfo=_ZONE_NAMES[m.group(2).upper()])
    try:
        return datetime.fromisoformat(text.replace(" -", "-").replace(" +", "+"))
    except ValueError:
        pass
    for fmt in _MOODLE:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    raise ValueError(f"{text!r} is not a date and time this grader reads (ISO 8601: 2026-03-06T23:59:00+01:00)")


def duration_text(seconds: float) -> str:
    """``1 day 3 h``, ``2 h 5 min``, ``40 s``: the two largest units that are not zero."""
    s = int(round(seconds))
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [
        f"{days} day{'s' if days != 1 else ''}" if days else "",
        f"{hours} h" if hours else "",
        f"{minutes} min" if minutes else "",
        f"{secs} s" if secs else "",
    ]
    kept = [p for p in parts if p][:2]
    return " ".join(kept) if kept else "0 s"


def _pct(x: float) -> str:
    return f"{x:g} %"


@dataclass(frozen=True)
class Late:
    """A late policy applied to one submission, as its scorecard keeps it.

    ``late_by`` is in seconds after the due date that applied (the student's extension included);
    ``percent`` is what the policy takes off (of the points possible, or of the score when
    ``of_score``), never taking the grade below ``floor`` percent of the points possible;
    ``not_accepted``: submitted after ``not_accepted_after``, 0 points. A person's waiver
    (``waived_by``, ``waived_at``, ``waiver``) keeps the record and takes nothing off."""

    submitted_at: str  # ISO 8601 with its zone; "" when only a marker says it is late
    due: str  # the due date that applied, ISO 8601 with its zone
    late_by: float  # seconds; 0 on time
    percent: float
    rate: float  # the policy: percent a period
    per: str  # "day" | "hour"
    cap: float = 100.0
    floor: float = 0.0
    of_score: bool = False
    grace: float = 0.0
    not_accepted: bool = False
    extended: bool = False  # ``due`` is the student's extension
    marked_by: str = ""  # the LMS that marked it late, when how late is counted (``marked_late_counts_as``)
    waived_by: str = ""
    waived_at: str = ""
    waiver: str = ""

    @property
    def waived(self) -> bool:
        return bool(self.waived_by)

    @property
    def applies(self) -> bool:
        return (self.percent > 0 or self.not_accepted) and not self.waived

    def deduction(self, score: float, max_score: float) -> float:
        """Points taken off ``score``."""
        return score - self.score_after(score, max_score)

    def score_after(self, score: float, max_score: float) -> float:
        """The score kept: the penalty taken off, never below the floor (nor raised up to it)."""
        if not self.applies:
            return score
        if self.not_accepted:
            return 0.0
        base = score if self.of_score else max_score
        kept = score - base * self.percent / 100.0
        return max(kept, min(score, max_score * self.floor / 100.0), 0.0)

    def policy_text(self) -> str:
        terms = [f"{_pct(self.rate)} a {self.per}" + (" of the score" if self.of_score else "")]
        if self.cap < 100:
            terms.append(f"at most {_pct(self.cap)}")
        if self.floor > 0:
            terms.append(f"never below {_pct(self.floor)} of the points")
        if self.grace:
            terms.append(f"{duration_text(self.grace)} of grace")
        return ", ".join(terms)

    def line(self, score: float, max_score: float, rounding: int = 2) -> str:
        """The sentence a student and the LMS read."""
        if self.late_by <= 0:
            return f"submitted on time ({'extended ' if self.extended else ''}due {self.due})"
        when = (
            f"marked late by {self.marked_by} (counted as {duration_text(self.late_by)} late)"
            if self.marked_by
            else f"submitted {duration_text(self.late_by)} late"
        )
        if self.extended:
            when += f" (extension to {self.due})"
        if self.late_by <= self.grace and not self.not_accepted:
            return f"{when}: within the grace period, no penalty (policy: {self.policy_text()})"
        if self.not_accepted:
            text = f"{when}: not accepted after the last date the policy accepts, 0 points"
        else:
            taken = self.deduction(score, max_score)
            points = f"{round(taken, rounding):g}"
            text = f"{when}: −{_pct(self.percent)} (−{points} points; policy: {self.policy_text()})"
        if self.waived:
            text += f"; waived by {self.waived_by}" + (f": {self.waiver}" if self.waiver else "")
        return text


@dataclass(frozen=True)
class LatePolicy:
    due: datetime
    zone: tzinfo | None = None
    times_zone: tzinfo | None = None  # ``times_timezone``: the zone of submission times written without one
    grace: float = 0.0
    rate: float = 0.0
    per: str = "day"
    started: bool = True
    cap: float = 100.0
    floor: float = 0.0
    of_score: bool = False
    not_accepted_after: datetime | None = None
    extensions: tuple[tuple[str, str], ...] = ()  # (who, a duration or a date), as written
    extensions_column: str = ""
    extensions_unit: str = ""  # "hours" | "days": how a bare number is read
    times: str = TIMES_LMS  # lms | timestamp.txt | a CSV file's path
    marked_late_counts_as: float = 0.0  # 0: one period

    def extension_for(self, who: tuple[str, ...], roster_value: str = "") -> datetime | None:
        """The due date extended for one of these names of a student, or None."""
        keys = {w.strip().lower() for w in who if w}
        written = roster_value.strip()
        for name, value in self.extensions:
            if name.strip().lower() in keys:
                written = str(value)
        if not written:
            return None
        if self.extensions_unit and re.fullmatch(r"\d+(\.\d+)?", written):
            written = f"{written} {self.extensions_unit}"
            if float(written.split()[0]) == 0:
                return None
        try:
            return self.due + timedelta(seconds=parse_duration(written))
        except ValueError:
            return parse_time(written, self.zone)

    def judge(self, submitted: datetime | None, *, marked_by: str = "", extension: datetime | None = None) -> Late:
        """The record for a submission handed in at ``submitted`` (or only marked late by an LMS)."""
        due = extension or self.due
        if submitted is None:  # an LMS's marker is against the course's due date: an extension takes its part off
            counted = (self.marked_late_counts_as or PERIODS[self.per]) if marked_by else 0.0
            late_by = max(0.0, counted - (due - self.due).total_seconds())
            after = False
            at = ""
        else:
            late_by = max(0.0, (submitted - due).total_seconds())
            # An extension moves the last date accepted as far as it moves the due date.
            last = self.not_accepted_after + (due - self.due) if self.not_accepted_after is not None else None
            after = last is not None and submitted > last
            at = submitted.isoformat()
        percent = 0.0
        if late_by > self.grace:
            periods = late_by / PERIODS[self.per]
            count = math.ceil(periods - 1e-9) if self.started else math.floor(periods + 1e-9)
            percent = min(self.cap, self.rate * count)
        return Late(
            submitted_at=at,
            due=due.isoformat(),
            late_by=late_by,
            percent=percent,
            rate=self.rate,
            per=self.per,
            cap=self.cap,
            floor=self.floor,
            of_score=self.of_score,
            grace=self.grace,
            not_accepted=after,
            extended=extension is not None,
            marked_by=marked_by if submitted is None else "",
        )


def waive(late: Late, by: str, at: str, reason: str = "") -> Late:
    return replace(late, waived_by=by, waived_at=at, waiver=reason)


def policy(r: Reader, root: Path) -> LatePolicy:
    """``late:`` of an assignment, validated (a ConfigError naming the key and line otherwise)."""
    r.only(
        "due",
        "timezone",
        "times_timezone",
        "grace",
        "penalty",
        "per",
        "count",
        "cap",
        "floor",
        "not_accepted_after",
        "of",
        "extensions",
        "extensions_column",
        "extensions_unit",
        "times",
        "marked_late_counts_as",
    )
    zone: tzinfo | None = None
    if r.has("timezone"):
        name = r.string("timezone")
        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise r.error(r.sub("timezone"), f"is not a time zone name such as Europe/Zurich, got {name!r}") from None
    times_zone: tzinfo | None = None
    if r.has("times_timezone"):
        name = r.string("times_timezone")
        try:
            times_zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise r.error(r.sub("times_timezone"), f"is not a time zone name such as UTC, got {name!r}") from None
    if not r.has("due"):
        raise r.error(r.sub("due"), "is required: the due date with its time zone")

    def when(key: str) -> datetime:
        try:
            return parse_time(r.get(key), zone)
        except ValueError as exc:
            raise r.error(r.sub(key), f"must be a date and time with its zone: {exc}") from None

    def dur(key: str) -> float:
        try:
            return parse_duration(r.get(key))
        except ValueError as exc:
            raise r.error(r.sub(key), f"must be {exc}") from None

    def pct(key: str, default: float) -> float:
        if not r.has(key):
            return default
        try:
            return parse_percent(r.get(key))
        except ValueError as exc:
            raise r.error(r.sub(key), f"must be {exc}") from None

    due = when("due")
    after: datetime | None = None
    if r.has("not_accepted_after"):
        raw = r.get("not_accepted_after")
        try:
            after = due + timedelta(seconds=parse_duration(raw))
        except ValueError:
            after = when("not_accepted_after")
        if after < due:
            raise r.error(r.sub("not_accepted_after"), "is before the due date")
    extensions: list[tuple[str, str]] = []
    if r.has("extensions"):
        ext = r.get("extensions")
        if not isinstance(ext, dict):
            raise r.error(r.sub("extensions"), f"must map a student to a date or a duration, got {describe(ext)}")
        for who, value in ext.items():
            written = value.isoformat() if isinstance(value, date) else str(value)
            try:
                parse_duration(written)
            except ValueError:
                try:
                    parse_time(value, zone)
                except ValueError as exc:
                    raise r.error(f"{r.sub('extensions')}.{who}", f"must be a duration or a date: {exc}") from None
            extensions.append((str(who), written))
    times = str(r.get("times", TIMES_LMS))
    if times not in (TIMES_LMS, TIMES_BESIDE):
        if not (root / times).is_file():
            raise r.error(r.sub("times"), f"must be lms, timestamp.txt or a CSV file of times; {times} is not a file")
        times = str(root / times)
    return LatePolicy(
        due=due,
        zone=zone,
        times_zone=times_zone,
        grace=dur("grace") if r.has("grace") else 0.0,
        rate=pct("penalty", 0.0),
        per=r.choice("per", ("day", "hour"), "day"),
        started=r.choice("count", ("started", "completed"), "started") == "started",
        cap=pct("cap", 100.0),
        floor=pct("floor", 0.0),
        of_score=r.choice("of", ("points", "score"), "points") == "score",
        not_accepted_after=after,
        extensions=tuple(extensions),
        extensions_column=r.string("extensions_column", ""),
        extensions_unit=r.choice("extensions_unit", ("", "hours", "days"), ""),
        times=times,
        marked_late_counts_as=dur("marked_late_counts_as") if r.has("marked_late_counts_as") else 0.0,
    )


# --------------------------------------------------------------------------------------------
# Where times come from besides the LMS's own layout

ID_COLUMNS = (
    "submission",
    "id",
    "user_id",
    "user id",
    "lms_id",
    "identifier",
    "participant",
    "sid",
    "student",
    "email",
    "email address",
    "sis_user_id",
)
TIME_COLUMNS = ("submitted_at", "submitted", "time", "timestamp", "last modified (submission)", "submission time")


def times_csv(
    path: Path, zone: tzinfo | None, worksheet_zone: tzinfo | None = None
) -> tuple[dict[str, datetime], list[str]]:
    """Submission times from a CSV file (an id column and a time column; Moodle's grading worksheet
    is one): {id lower-cased: time}, and the problems, one a row, each with its reason. A time
    without a zone is a problem (``submission_time``); a row without a time (Moodle's ``-``) is skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"The times file {path} cannot be read: {exc}.") from None
    reader = csv.DictReader(io.StringIO(text))
    fields = {(f or "").strip().lower(): f for f in reader.fieldnames or []}
    id_col = next((fields[c] for c in ID_COLUMNS if c in fields), None)
    time_col = next((fields[c] for c in TIME_COLUMNS if c in fields), None)
    if id_col is None or time_col is None:
        raise UsageError(
            f"The times file {path} needs a column naming the submission ({', '.join(ID_COLUMNS)}) and one "
            f"with its time ({', '.join(TIME_COLUMNS)}); its columns: {', '.join(fields) or 'none'}."
        )
    out: dict[str, datetime] = {}
    problems: list[str] = []
    for row in reader:
        who = (row.get(id_col) or "").strip()
        raw = (row.get(time_col) or "").strip()
        if not who or raw in ("", "-"):
            continue
        try:
            out[lms_key(who)] = submission_time(raw, zone, worksheet_zone)
        except ValueError as exc:
            problems.append(f"{path.name} line {reader.line_num} ({who}): {exc}")
    return out, problems


def lms_key(text: str) -> str:
    """An id as the LMSs write it, compared: Moodle's ``Participant 123456`` is ``123456``."""
    t = text.strip().lower()
    return t[len("participant") :].strip() if re.fullmatch(r"participant\s*\d+", t) else t


def timestamp_beside(folder: Path, zone: tzinfo | None) -> datetime | None:
    """The ``timestamp.txt`` an exchange layout writes in a submission folder (``2026-03-06 23:59:00.123456 UTC``), or None."""
    path = folder / "timestamp.txt"
    if not path.is_file():
        return None
    return submission_time(path.read_text(encoding="utf-8", errors="replace"), zone, None)
