"""JUnit XML for a run, written from the scorecards with ElementTree.

The file has the shape ``pytest --submission ... --junitxml`` writes (pytest's default xunit2
family), so CI dashboards keep their history whichever of the two wrote it: one ``<testsuites>``
holding one ``<testsuite>`` named after the assignment, and a ``<testcase>`` per (submission,
question) whose ``classname`` is the notebook's path under the submissions' common folder with
dots for slashes and whose ``name`` is the question id. A question without full marks has a
``<failure>`` whose text is the student's feedback (grader.outputs.feedback, the same text the
plugin reports) and whose ``message`` is that text shortened as pytest (9.2 and later) shortens it.

The points are the suite's properties, two per test case, ``score:<classname>::<name>`` and
``max_score:<classname>::<name>``, in the order of the cases (the plugin records the same with
pytest's suite properties). Not per case: a ``<properties>`` inside ``<testcase>`` is not in the
JUnit schema that Jenkins' xUnit plugin validates against (``junit-10.xsd``), while suite
properties are, and junitparser, GitLab and Jenkins' JUnit plugin all read the file the same way.

Nothing is run: the notebooks were graded already. The time of a submission's grading is given to
its first test case, as in a pytest run, where the first item of a submission grades it.
"""

from __future__ import annotations

import os
import platform
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from grader.course.model import Assignment, Course
from grader.files import write_atomic
from grader.judge.scorecard import Scorecard
from grader.outputs.feedback import failure_text, question_passed, waiting_for_person

# pytest keeps at most this many characters of a report in a failure's ``message`` attribute.
MESSAGE_BUDGET = 500

# Characters XML 1.0 cannot hold (pytest also leaves out DEL); shown as #xNN like pytest does.
_ILLEGAL = re.compile("[^\u0009\u000a\u000d\u0020-\u007e\u0080-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def write_junit(
    cards: Iterable[tuple[Path, Scorecard]],
    course: Course,
    assignment: Assignment,
    path: Path,
    *,
    executor_name: str = "subprocess",
) -> Path:
    """Write the JUnit XML for these (submission path, scorecard) pairs to ``path``.

    ``course`` and ``executor_name`` are not needed for the file; they are kept so every per-run
    writer is called the same way.
    """
    path = Path(path).resolve()
    text = '<?xml version="1.0" encoding="utf-8"?>' + ET.tostring(to_xml(cards, assignment), encoding="unicode")
    return write_atomic(path, text)


def to_xml(
    cards: Iterable[tuple[Path, Scorecard]], assignment: Assignment, *, now: datetime | None = None
) -> ET.Element:
    """The ``<testsuites>`` element for these (submission path, scorecard) pairs."""
    started = now or datetime.now(UTC)
    seen: dict[Path, Scorecard] = {}
    for p, card in cards:  # pytest collects a path given twice once
        seen.setdefault(Path(p).resolve(), card)
    root = Path(os.path.commonpath([str(p.parent) for p in seen])) if seen else Path.cwd()
    cases: list[ET.Element] = []
    points: list[tuple[str, object]] = []
    total = 0.0
    for p, card in seen.items():
        classname = re.sub(r"\.py$", "", p.relative_to(root).as_posix().replace("/", "."))
        elapsed = float(card.execution.time or 0.0)
        total += elapsed
        for i, q in enumerate(card.questions):
            case = ET.Element(
                "testcase", classname=classname, name=_escape(q.id), time=f"{elapsed if i == 0 else 0.0:.3f}"
            )
            points += [(f"score:{classname}::{q.id}", q.score), (f"max_score:{classname}::{q.id}", q.max_score)]
            if waiting_for_person(q):
                ET.SubElement(case, "skipped", message=_escape(f"{q.title}: graded by a person, waiting for one"))
            elif not question_passed(q):
                text = failure_text(q, card)
                failure = ET.SubElement(case, "failure", message=_escape(shorten(text)))
                failure.text = _escape(text)
            cases.append(case)
    failures = sum(1 for c in cases if c.find("failure") is not None)
    skipped = sum(1 for c in cases if c.find("skipped") is not None)
    suite = ET.Element(
        "testsuite",
        name=assignment.name,
        errors="0",
        failures=str(failures),
        skipped=str(skipped),
        tests=str(len(cases)),
        time=f"{total:.3f}",
        timestamp=started.astimezone().isoformat(),
        hostname=platform.node(),
    )
    if points:
        properties = ET.SubElement(suite, "properties")
        for name, value in points:
            ET.SubElement(properties, "property", name=_escape(name), value=_escape(value))
    suite.extend(cases)
    suites = ET.Element("testsuites")
    suites.set("name", "pytest tests")
    suites.append(suite)
    return suites


def shorten(text: str, budget: int = MESSAGE_BUDGET) -> str:
    """A failure's ``message`` as pytest writes it: whole lines while they fit in ``budget``
    characters (a first line longer than that is cut), then a note saying what was left out."""
    lines = text.splitlines() or [""]
    kept: list[str] = []
    size = 0
    for line in lines:
        if kept and size + len(line) + 1 > budget:
            break
        kept.append(line)
        size += len(line) + 1
    short = "\n".join(kept)
    cut = len(short) > budget
    if cut:
        short = short[:budget] + "..."
    left = len(lines) - len(kept)
    if left:
        note = f"+{left} more line{'s' if left > 1 else ''}"
    elif cut:
        note = "truncated"
    else:
        return text
    return f"{short}\n[{note}; full report in element text]"


def _escape(value: object) -> str:
    def visible(m: re.Match[str]) -> str:
        i = ord(m.group())
        return f"#x{i:02X}" if i <= 0xFF else f"#x{i:04X}"

    return _ILLEGAL.sub(visible, str(value))
