"""The scorecard's document (``grader.judge.document``): a card written and read back is the card,
every record included; anything else is refused with one specific error, and every consumer that
reads cards back (results cache, review store, shards, ``grader report``) reads this document."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from conftest import NUMPY_CORRECT, ROOT, notebook_with, question
from test_testcheck import CONFIG as TEST_CONFIG
from test_testcheck import SOLUTION as TEST_SOLUTION
from test_variants import typed_answers

from grader.batch import ResultStore, shards
from grader.batch.intake import Submission
from grader.course import config
from grader.errors import DocumentError
from grader.judge import document
from grader.judge import verdicts as v
from grader.judge.grading import Grader
from grader.judge.scorecard import Scorecard
from grader.review import merge
from grader.review.store import GradeStore
from grader.testing import fill, write

EXAMPLES = ROOT / "examples/attention_numpy"


def records_in(value: Any) -> set[str]:
    """The names of the records a card holds, at any depth."""
    found: set[str] = set()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found.add(type(value).__name__)
        for f in dataclasses.fields(value):
            found |= records_in(getattr(value, f.name))
    elif isinstance(value, tuple | list):
        for item in value:
            found |= records_in(item)
    return found


def through_text(card: Scorecard) -> Scorecard:
    """Written as the files are (JSON text), then read back."""
    return document.load(json.loads(json.dumps(document.dump(card))))


@pytest.fixture(scope="module")
def manual_cards(tmp_path_factory):
    """A course with questions graded by a person: (its grade store, the autograder's cards, the
    cards with a person's grades: one graded with rubric items, free points and a comment, one
    waiting, one whose answers are untouched)."""
    import nbformat
    import review_course

    from grader.authoring.assign import skeleton

    root = review_course.build(tmp_path_factory.mktemp("manual"))
    course = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    a = course.assignment("rv")
    a.skeleton.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(skeleton(a.solution), str(a.skeleton))
    grader = Grader(course)
    subs = root / "subs"
    subs.mkdir()
    paths = {
        "ann": review_course.student(a.skeleton, subs / "ann.ipynb", explain="Symmetric around 2.", weights="More."),
        "bo": review_course.student(a.skeleton, subs / "bo.ipynb", mean="x.sum()", explain="No idea."),
        "cy": review_course.student(a.skeleton, subs / "cy.ipynb"),
    }
    raw = {name: grader.grade(a, path, student=name, id=f"rv-{name}") for name, path in paths.items()}
    store = GradeStore(root / "out" / "grades.sqlite")
    for name, card in raw.items():
        store.put_card(card.id, name, paths[name], card)
    good = store.add_item("explain", "Names the symmetry", 2.0)
    vague = store.add_item("explain", "Vague", -1.0)
    answer = question(raw["ann"], "explain").answer
    assert answer is not None
    who = {"grader": "ta@example.org", "digest": answer.digest}
    store.mark("rv-ann", "explain", good.id, True, **who)
    store.mark("rv-ann", "explain", vague.id, True, **who)
    store.set_adjustment("rv-ann", "explain", 0.5, **who)
    store.set_comment("rv-ann", "explain", "Well put.", **who)
    return store, raw, {name: merge.apply(store, card.id, card) for name, card in raw.items()}


@pytest.fixture(scope="module")
def cards(grader, numpy_assignment, tmp_path_factory, manual_cards):
    """Cards of real grading, of many kinds of verdicts: the examples (a hint, carried-forward
    errors, a raising cell, blanks, a file that is not a notebook), typed-in answers (variants),
    code that fails on a variant only, a run that crashes, an instructor's tests, questions graded
    by a person."""
    folder = tmp_path_factory.mktemp("cards")
    out = {
        p.stem: grader.grade(numpy_assignment, p, student=p.stem, id=f"id-{p.stem}")
        for p in sorted(EXAMPLES.glob("*.ipynb"))
    }

    def submit(name: str, answers: dict[str, str], append: list[str] | None = None) -> Scorecard:
        nb = fill(numpy_assignment.skeleton, answers, append=append)
        return grader.grade(numpy_assignment, write(nb, folder / f"{name}.ipynb"))

    typed = typed_answers(grader, numpy_assignment)
    out["typed_in"] = submit("typed_in", typed)
    out["typed_in_crashed"] = submit("typed_in_crashed", typed, append=["import os\nos._exit(0)"])
    out["fails_on_a_variant"] = submit(
        "fails_on_a_variant", {**NUMPY_CORRECT, "output": "attention_weights @ V.reshape(3, 2)"}
    )
    out["fixed_size"] = submit("fixed_size", {**NUMPY_CORRECT, "scaled_scores": "scores / np.sqrt(2)"})

    root = tmp_path_factory.mktemp("tests")
    (root / "solutions/hw").mkdir(parents=True)
    notebook_with(TEST_SOLUTION, root / "solutions/hw/hw.ipynb")
    (root / "config.yaml").write_text(TEST_CONFIG)
    tcourse = dataclasses.replace(config.load(root / "config.yaml"), cache_dir=root / "cache")
    hw = tcourse.assignment("hw")
    wrong = [
        TEST_SOLUTION[0],
        "def relu(x):\n    return x",
        "W = np.ones((4, 4))",
        "class Counter:\n    def __init__(self):\n        self.n = 0\n    def step(self):\n        return 1",
        "g = 1/0",
    ]
    out["tests_fail"] = Grader(tcourse).grade(hw, notebook_with(wrong, root / "wrong.ipynb"))
    out.update({f"manual_{name}": card for name, card in manual_cards[2].items()})
    return out


def test_a_card_written_and_read_back_is_the_card(cards):
    for name, card in cards.items():
        back = through_text(card)
        assert back == card, name
        assert document.dump(back) == document.dump(card), name


def test_the_cards_read_back_hold_every_kind_of_record(cards):
    # The round trip above is only as good as the records it carried: the cards hold these.
    held = set().union(*(records_in(through_text(c)) for c in cards.values()))
    expected = {
        "Differs",
        "CarriedForward",
        "Missing",
        "NeedsFailed",
        "CellFailed",
        "CellRun",
        "Unanswered",
        "VariantTypedIn",
        "VariantFails",
        "VariantCause",
        "TestFailed",
        "Answer",
        "PersonGrade",
        "RubricMark",
        "CellError",
    }
    assert expected <= held, sorted(expected - held)
    hints = {c.hint for card in cards.values() for q in card.questions for c in q.checks if c.hint}
    assert "The scores are not divided by sqrt(d_k)." in hints
    assert through_text(cards["typed_in_crashed"]).status == "crashed"
    assert through_text(cards["henry_not_a_notebook"]).status == "invalid_notebook"
    graded = question(through_text(cards["manual_ann"]), "explain")
    assert graded.person is not None and [m.text for m in graded.person.marks] == ["Names the symmetry", "Vague"]
    assert (graded.score, graded.person.adjustment, graded.person.comment) == (1.5, 0.5, "Well put.")
    assert through_text(cards["manual_ann"]).id == "rv-ann"


# -- every registered record, and only those ---------------------------------------------------


def sample(hint: Any, depth: int = 0) -> Any:
    """A value of a declared type: each record with every field set, not left at its default."""
    members = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    hint = next(m for m in members if m is not type(None))
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        return (sample(args[0], depth),) if args[-1] is Ellipsis else tuple(sample(a, depth) for a in args)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return list(hint)[-1]
    if hint is bool:
        return True
    if hint is int:
        return 7
    if hint is float:
        return 0.1 + 0.2  # a float JSON must keep to the last bit
    if hint is str:
        return 'text with `marks`, é, "quotes" and a\nnew line'
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return hint(**{f.name: sample(hints[f.name], depth + 1) for f in dataclasses.fields(hint) if f.init})
    raise AssertionError(f"no sample for {hint!r}")


def union(hint: Any) -> tuple[type, ...]:
    return typing.get_args(hint)


def card_of_every_record() -> Scorecard:
    """A card whose checks hold every reason, every reason a value can be missing for and every
    finding of a test, each with every field set."""
    reasons = [sample(cls) for cls in union(v.CheckReason)]
    reasons += [v.Missing("`x`", sample(cls)) for cls in union(v.Absence)]
    reasons += [v.TestFailed("the test", tuple(sample(cls) for cls in union(v.TestFinding)), line=3)]
    base = sample(Scorecard)
    q = base.questions[0]
    check = dataclasses.replace(q.checks[0], reasons=tuple(reasons))
    return dataclasses.replace(base, questions=(dataclasses.replace(q, checks=(check,)),))


def test_every_registered_record_round_trips_with_every_field_set():
    card = card_of_every_record()
    assert set(document.BY_NAME) <= records_in(card)
    assert through_text(card) == card


def test_every_verdict_record_is_registered():
    # A new reason added to judge.verdicts without a place in the registry would be refused on
    # writing (and so never reach a file it cannot be read back from): this test names it first.
    for group in (v.CheckReason, v.Absence, v.TestFinding):
        for cls in union(group):
            assert document.BY_NAME.get(cls.__name__) is cls


# -- refusals ------------------------------------------------------------------------------------


def bad(card: Scorecard, change) -> dict[str, Any]:
    data = json.loads(json.dumps(document.dump(card)))
    change(data)
    return data


def first_reason(data: dict[str, Any]) -> dict[str, Any]:
    reason: dict[str, Any] = data["questions"][0]["checks"][0]["reasons"][0]
    return reason


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: first_reason(d).update(type="os.system"), "'os.system' is not a record a scorecard may hold"),
        (lambda d: first_reason(d).update(type="Scorecard"), "a Scorecard cannot be here"),
        (lambda d: first_reason(d).pop("type"), "a record without its 'type'"),
        (lambda d: first_reason(d).update(__reduce__="x"), "has no field '__reduce__'"),
        (lambda d: d["questions"][0].pop("title"), "QuestionResult lacks its field 'title'"),
        (lambda d: d.update(score="11"), "at score: expected a number, found text"),
        (lambda d: d.update(status="perfect"), "at status: 'perfect' is not one of graded, invalid_notebook"),
        (lambda d: d["questions"][0].update(checks={}), "at questions[0].checks: expected a list, found an object"),
        (lambda d: d["execution"].update(internal_error=1), "expected true or false, found a number"),
        (lambda d: d.update(questions=None), "at questions: a value is missing (null)"),
    ],
    ids=[
        "unknown-record",
        "record-out-of-place",
        "untagged-reason",
        "unknown-field",
        "missing-field",
        "text-for-a-number",
        "unknown-status",
        "object-for-a-list",
        "number-for-a-flag",
        "null",
    ],
)
def test_a_malformed_document_is_refused_with_where_and_why(change, message):
    with pytest.raises(DocumentError, match=None) as exc:
        document.load(bad(card_of_every_record(), change))
    assert message in str(exc.value)


@pytest.mark.parametrize("data", [[], "card", None, 3])
def test_what_is_not_an_object_is_not_a_document(data):
    with pytest.raises(DocumentError, match="a scorecard document is a JSON object"):
        document.load(data)


def cache_format_of_before(card: Scorecard) -> dict[str, Any]:
    """A card as the results cache kept it before the document: no format_version, no reasons."""
    data = document.dump(card)
    del data[document.VERSION]
    del data["id"]
    for q in data["questions"]:
        for c in q["checks"]:
            del c["reasons"]
    return data


def test_an_older_card_says_which_grader_wrote_it_and_how_to_grade_again(cards):
    with pytest.raises(DocumentError) as exc:
        document.load(cache_format_of_before(cards["carol_no_sqrt"]))
    text = str(exc.value)
    assert "written by grader 0.1.0, before scorecards carried a format_version" in text
    assert "Grade the submission again (`grader grade SUBMISSIONS -a ASSIGNMENT --out DIR`)" in text


def test_a_newer_card_asks_for_the_newer_grader(cards):
    data = {**document.dump(cards["bob_correct"]), document.VERSION: document.FORMAT_VERSION + 1}
    with pytest.raises(DocumentError, match=f"format {document.FORMAT_VERSION + 1}, .* newer than this grader"):
        document.load(data)


def test_writing_a_value_that_is_not_a_record_is_refused():
    card = dataclasses.replace(Scorecard("a", "s.ipynb", "", "graded", 0, 1), reason=Path("/x"))  # type: ignore[arg-type]
    with pytest.raises(DocumentError, match="a value of type PosixPath cannot be written"):
        document.dump(card)


# -- the consumers read the document -----------------------------------------------------------


def test_the_results_cache_keeps_every_record(cards, numpy_assignment, tmp_path):
    store = ResultStore(tmp_path, numpy_assignment, "k" * 64)
    for name, card in cards.items():
        assert store.put(f"{name}-sha", card)
        assert store.get(f"{name}-sha") == card
    (store.dir / "old-sha.json").write_text(json.dumps(cache_format_of_before(cards["carol_no_sqrt"])))
    assert store.get("old-sha") is None  # another format: a miss, graded again


def test_the_review_store_keeps_the_card_as_graded(manual_cards):
    store, raw, applied = manual_cards
    for name in raw:
        sid = raw[name].id
        assert store.card(sid) == raw[name]
        assert merge.apply(store, sid, store.card(sid)) == applied[name]


def test_shards_merge_to_the_cards_they_graded(cards, tmp_path):
    names = sorted(cards)
    subs = [
        Submission(path=tmp_path / f"{n}.ipynb", student=n, sha256=f"{i:064x}", origin=n, name=n, id=n)
        for i, n in enumerate(names)
    ]
    for k in (1, 2):
        mine = [(i, s) for i, s in shards.select(subs, k, 2)]
        shards.write_manifest(
            tmp_path / f"shard-{k}",
            shard=k,
            count=2,
            assignment="attention_numpy",
            fingerprint="f",
            total=len(subs),
            formats=("yaml",),
            graded=[(i, s, cards[s.student]) for i, s in mine],
            notes=[],
        )
    merged = shards.merge([tmp_path / "shard-1", tmp_path / "shard-2"])
    assert [card for _, _, card, _ in merged.rows] == [cards[n] for n in names]


def report(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", "report", str(folder), "--out", str(folder / "out")],
        capture_output=True,
        text=True,
        cwd=folder,
    )


def test_report_on_an_older_json_scorecard_says_how_to_grade_again(cards, tmp_path):
    (tmp_path / "carol.json").write_text(json.dumps(cache_format_of_before(cards["carol_no_sqrt"])))
    proc = report(tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"grader: {tmp_path / 'carol.json'}: this scorecard was written by grader 0.1.0")
    assert "grader grade SUBMISSIONS -a ASSIGNMENT --out DIR" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_on_yaml_scorecards_alone_asks_for_their_documents(cards, tmp_path):
    from grader.outputs.yaml import write_yaml

    write_yaml(cards["carol_no_sqrt"], tmp_path / "carol.yaml")
    proc = report(tmp_path)
    assert proc.returncode == 2
    assert "holds YAML scorecards but not their JSON documents" in proc.stderr
    assert "--formats yaml,json" in proc.stderr
