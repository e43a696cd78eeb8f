"""``grader similarity``'s score: what a pair shares beyond chance, a one-expression helper counted
where it is called, and clusters only of notebooks that are each other's closest match."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from grader.course import config
from grader.similarity import find_similar
from grader.similarity.compare import FLOOR, Pair, clusters
from grader.similarity.documents import document, expected

sys.path.insert(0, str(Path(__file__).resolve().parent))
import similarity_class as sc  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def course() -> config.Course:
    return config.load(ROOT / "config.yaml")


def _write(folder: Path, notebooks: dict[str, dict[int, str]], assignment: str = "attention_numpy") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, fills in notebooks.items():
        (folder / f"{name}.ipynb").write_text(json.dumps(sc.notebook(assignment, fills)), encoding="utf-8")
    return folder


def _pair(a: str, b: str, score: float) -> Pair:
    return Pair(a, b, score, score, score, (), 0.0, ())


def test_copies_of_one_notebook_are_a_cluster_and_a_classmate_who_shares_with_many_is_not():
    copies = [_pair("x", "y", 1.0), _pair("x", "z", 1.0), _pair("y", "z", 1.0)]
    # A hub: h shares a usual form with two classmates who share little with each other.
    hub = [_pair("h", "p", 0.62), _pair("h", "q", 0.58), _pair("p", "q", 0.05)]
    # A chain of independent students, each pair above the threshold.
    chain = [_pair("a", "b", 0.7), _pair("b", "c", 0.8), _pair("c", "d", 0.75), _pair("d", "e", 0.6)]
    assert clusters(copies, 0.5) == [["x", "y", "z"]]
    assert clusters(hub, 0.5) == []
    assert clusters(chain, 0.5) == []
    assert clusters(copies + hub + chain, 0.5) == [["x", "y", "z"]]
    assert clusters([_pair(p.a, p.b, 0.4) for p in copies], 0.5) == []  # under the threshold


SCALE_HELPER = "def scale(s, d):\n    return s / np.sqrt(d)\n\nscaled = scale(scores, Q.shape[-1])\nprint(scaled.max())"
SCALE_INLINE = "scaled = scores / np.sqrt(Q.shape[-1])\nprint(scaled.max())"
SCALE_LAMBDA = "scale = lambda s, d: s / np.sqrt(d)\nscaled = scale(scores, Q.shape[-1])\nprint(scaled.max())"


def test_a_one_expression_helper_counts_where_it_is_called_as_if_written_there(course: config.Course, tmp_path: Path):
    assignment = course.assignment("attention_numpy")
    known = expected(assignment)
    rng = random.Random(4)
    base = sc.student(rng, "attention_numpy")
    keys = {}
    for name, extra in (("helper", SCALE_HELPER), ("inline", SCALE_INLINE), ("lambda", SCALE_LAMBDA)):
        fills = dict(base)
        fills[21] = fills[21] + "\n" + extra
        path = _write(tmp_path, {name: fills}) / f"{name}.ipynb"
        doc = document(path, key=name, student=name, origin=name, past=False, known=known)
        keys[name] = set(doc.keys.tolist())
    assert keys["helper"] == keys["inline"] == keys["lambda"]
    # A helper defined and never called is code of its own.
    fills = dict(base)
    fills[21] = fills[21] + "\ndef scale(s, d):\n    return s / np.sqrt(d)"
    path = _write(tmp_path, {"unused": fills}) / "unused.ipynb"
    unused = document(path, key="u", student="u", origin="u", past=False, known=known)
    assert set(unused.keys.tolist()) - keys["inline"]


def test_sharing_the_usual_checks_is_chance_and_a_copy_of_them_alone_cannot_reach_one(
    course: config.Course, tmp_path: Path
):
    """Two students who add the same usual checks and plots share what independent students share:
    their score is what the rest of their notebooks give, and a notebook of nothing else cannot
    score 1 against its copy (there is nothing in it to tell a copy from two students)."""
    rng = random.Random(9)
    section = {f"o{i}": sc.student(rng, "attention_numpy") for i in range(6)}
    checks = (
        "\nprint(attention_weights.shape)\nprint(np.allclose(attention_weights.sum(axis=-1), 1))"
        "\nplt.imshow(attention_weights, cmap='viridis')\nplt.colorbar()\nplt.show()"
    )
    plain = {k: sc.NUMPY_POOLS[k][0] for k in (8, 12, 15, 21)}
    plain[18] = sc.NUMPY_POOLS[18][0].format(body=sc.NUMPY_SOFTMAX[0], weights=sc.NUMPY_WEIGHTS[0])
    first, second = dict(plain), dict(plain)
    first[21] += checks
    second[21] += checks
    for fills in section.values():
        if rng.random() < 0.5:
            fills[21] += checks
    folder = _write(tmp_path / "class", {**section, "first": first, "second": second})
    result = find_similar([folder], course.assignment("attention_numpy"), progress=False)
    pair = next((p for p in result.pairs if {p.a, p.b} == {"first", "second"}), None)
    assert pair is None or pair.score < 0.5, pair
    assert result.clusters == []
    assert FLOOR > 0
