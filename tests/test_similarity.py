"""``grader similarity``: planted copies rank above independent work, only the student's own code
counts, broken notebooks are skipped with their reason, and the outputs are what they say."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from grader.cli import main
from grader.course import config
from grader.similarity import NOTICE, Region, Similarity, find_similar
from grader.similarity.compare import Index
from grader.similarity.documents import expected
from grader.similarity.tokens import cell_tokens, winnow

sys.path.insert(0, str(Path(__file__).resolve().parent))
import similarity_class  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def course() -> config.Course:
    return config.load(ROOT / "config.yaml")


@pytest.fixture(scope="module")
def klass(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, set[str]]]]:
    folder = tmp_path_factory.mktemp("class")
    return folder, similarity_class.write_class(folder)


@pytest.fixture(scope="module")
def results(klass: tuple[Path, dict[str, dict[str, set[str]]]], course: config.Course) -> dict[str, Similarity]:
    folder, _ = klass
    return {a: find_similar([folder / a], course.assignment(a), progress=False) for a in similarity_class.STYLES}


def _split(result: Similarity, holds: dict[str, set[str]]) -> tuple[list[float], list[float]]:
    scores = {frozenset((p.a, p.b)): p.score for p in result.pairs}
    planted, independent = [], []
    names = sorted(holds)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            score = scores.get(frozenset((a, b)), 0.0)
            (planted if holds[a] & holds[b] else independent).append(score)
    return planted, independent


@pytest.mark.parametrize("assignment", list(similarity_class.STYLES))
def test_every_planted_pair_ranks_above_every_independent_pair(
    assignment: str, results: dict[str, Similarity], klass: tuple[Path, dict[str, dict[str, set[str]]]]
):
    _, holds = klass
    result = results[assignment]
    assert not result.skipped
    assert len(result.documents) == len(holds[assignment])
    planted, independent = _split(result, holds[assignment])
    assert len(planted) >= 5 and len(independent) >= 10
    assert min(planted) > max(independent), (sorted(planted), sorted(independent))
    assert min(planted) >= 0.5
    # The index leaves out pairs that share little; compared in full, every pair of independent
    # correct solutions still scores well below the page's mark: not copies for being correct.
    docs = result.documents
    index = Index(docs, expected(result.assignment))
    full = {
        frozenset((docs[i].key, docs[j].key)): index.compare(i, j).score
        for i in range(len(docs))
        for j in range(i + 1, len(docs))
    }
    alike = [score for pair, score in full.items() if set.intersection(*(holds[assignment][k] for k in pair))]
    apart = [score for pair, score in full.items() if not set.intersection(*(holds[assignment][k] for k in pair))]
    assert max(apart) < 0.25 < 0.5 <= min(alike), (sorted(apart), sorted(alike))


def test_a_splice_scores_against_both_classmates_and_names_the_questions(results: dict[str, Similarity]):
    result = results["attention_numpy"]
    pairs = {frozenset((p.a, p.b)): p for p in result.pairs}
    first, second = pairs[frozenset(("bo", "copy-spliced"))], pairs[frozenset(("copy-spliced", "dara"))]

    # Cells 8 and 12 (Q, K, V and the scores) came from bo; cells 15, 18 and 21 from dara. Shared runs
    # reach a few tokens past where they start and end, so the questions are weighed by shared tokens.
    def tokens(pair, questions):  # noqa: ANN001, ANN202
        return sum(m.tokens for m in pair.matches if m.question in questions)

    early, late = {"qkv", "scores"}, {"scaled", "softmax", "weights", "output"}
    assert tokens(first, early) > tokens(first, late)
    assert tokens(second, late) > 5 * tokens(second, early)
    weights = next(m for m in second.matches if m.question == "weights")
    assert weights.title == "Attention weights"


def test_code_belongs_to_the_question_whose_value_it_computes(results: dict[str, Similarity]):
    pairs = {frozenset((p.a, p.b)): p for p in results["attention_numpy"].pairs}
    # chen fills `scores` in place in a double loop (cell 12, lines 1-5); bo appends softmax rows to
    # a list and stacks them into the weights (cell 18, lines 7-10), after defining softmax (1-5).
    chen = {
        m.question: m.a if pairs[frozenset(("chen", "copy-reordered"))].a == "chen" else m.b
        for m in pairs[frozenset(("chen", "copy-reordered"))].matches
    }
    assert chen["scores"] == (Region(cell=12, first_line=1, last_line=5),)
    bo_pair = pairs[frozenset(("bo", "copy-recommented"))]
    bo = {m.question: m.a if bo_pair.a == "bo" else m.b for m in bo_pair.matches}
    assert bo["softmax"] == (Region(cell=18, first_line=1, last_line=5),)
    assert bo["weights"] == (Region(cell=18, first_line=7, last_line=10),)
    assert None not in bo and {m.title for m in bo_pair.matches} >= {"Attention weights", "Softmax of a vector"}


def test_only_the_students_own_code_counts(results: dict[str, Similarity], course: config.Course, tmp_path: Path):
    # The skeleton itself, handed in twice unchanged, shares nothing: its code is all given.
    skeleton = ROOT / "assignments" / "attention_numpy" / "attention_numpy.ipynb"
    shutil.copy(skeleton, tmp_path / "a.ipynb")
    shutil.copy(skeleton, tmp_path / "b.ipynb")
    solution = ROOT / "solutions" / "attention_numpy" / "attention_numpy.ipynb"
    shutil.copy(solution, tmp_path / "c.ipynb")
    shutil.copy(solution, tmp_path / "d.ipynb")
    result = find_similar([tmp_path], course.assignment("attention_numpy"), progress=False)
    # Two copies of the solution's code are not evidence either: it is what a correct answer looks like.
    assert [p for p in result.pairs if p.score > 0] == []
    doc = result.document("a")
    assert not doc.own.any()
    # Outputs are never read: every notebook of the class carries the same printed output.
    ana = results["attention_numpy"].document("ana")
    assert set(ana.own_lines) == {8, 12, 15, 18, 21}  # the given line of cell 15 is not the student's
    assert 1 not in ana.own_lines[15]


def test_magics_comments_and_names_do_not_matter():
    plain = cell_tokens("scores = Q @ K.T\nw = np.exp(scores).sum(axis=1)\n")
    disguised = cell_tokens(
        "# the scores\nmy_scores   =  q_mat@k_mat.T   # done\n\nweights = np.exp(my_scores).sum(axis=1)\n"
    )
    assert [t.norm for t in plain] == [t.norm for t in disguised]
    assert [t.norm for t in plain][:3] == ["V", "=", "V"]
    assert "axis" in [t.norm for t in plain] and "exp" in [t.norm for t in plain]  # the library's names stay


def _load(path: Path):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("copydetect_pywinnow", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_winnowing_selects_what_copydetect_selects():
    # copydetect's own pure-Python winnowing, loaded alone: its package imports matplotlib.pyplot.
    spec = importlib.util.find_spec("copydetect")
    if spec is None or spec.origin is None:
        pytest.skip("copydetect is not installed")
    pywinnow = _load(Path(spec.origin).parent / "pywinnow.py")
    rng = np.random.default_rng(7)
    for n in [1, 3, 4, 5, 17, 300]:
        hashes = rng.integers(0, 2**52, n).astype(np.uint64)
        theirs = sorted(set(pywinnow._winnow(hashes.astype(np.float64), 4).tolist()))
        assert winnow(hashes, 4).tolist() == theirs


def test_markdown_answers_are_compared_as_text(course: config.Course, tmp_path: Path):
    answer = (
        "The softmax is taken along each row because every query distributes one unit of attention over "
        "all the keys, so the weights of a row must sum to one."
    )
    other = (
        "Scaling by the square root of the key dimension keeps the dot products from growing with the "
        "dimension, which would push the softmax into saturation."
    )
    for name, text in (("p", answer), ("q", answer.replace("because", "since")), ("r", other)):
        nb = similarity_class.notebook(
            "attention_numpy", similarity_class.NUMPY[{"p": "bo", "q": "chen", "r": "dara"}[name]]
        )
        nb["cells"].append({"cell_type": "markdown", "metadata": {}, "source": text})  # type: ignore[union-attr]
        (tmp_path / f"{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    result = find_similar([tmp_path], course.assignment("attention_numpy"), progress=False)
    pairs = {frozenset((p.a, p.b)): p for p in result.pairs}
    same = pairs[frozenset(("p", "q"))]
    assert same.markdown > 0.5 and same.markdown_cells == ((25, 25),)
    assert frozenset(("p", "r")) not in pairs or pairs[frozenset(("p", "r"))].markdown == 0


def test_command_writes_json_and_a_strict_page_and_skips_broken_notebooks(
    klass: tuple[Path, dict[str, dict[str, set[str]]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    folder, _ = klass
    past = tmp_path / "past"
    past.mkdir()
    shutil.copy(folder / "attention_numpy" / "dara.ipynb", past / "old-dara.ipynb")
    (past / "old-empty.ipynb").write_text("", encoding="utf-8")
    now = tmp_path / "now.zip"
    with zipfile.ZipFile(now, "w") as zf:
        for nb in sorted((folder / "attention_numpy").glob("*.ipynb")):
            zf.write(nb, f"class/{nb.name}")
        zf.writestr("class/broken.ipynb", "{not json")
        zf.writestr(
            "class/evil.ipynb",
            json.dumps(
                similarity_class.notebook(
                    "attention_numpy",
                    {
                        **similarity_class.NUMPY["bo"],
                        21: "output = np.dot(attention_weights, V)  # </pre><script>alert(1)</script>",
                    },
                )
            ),
        )
    out = tmp_path / "out"
    code = main(
        [
            "similarity",
            str(now),
            "--past",
            str(past),
            "--assignment",
            "attention_numpy",
            "--out",
            str(out),
            "--config",
            str(ROOT / "config.yaml"),
        ]
    )
    printed = capsys.readouterr()
    assert code == 0
    assert "skipped class/broken.ipynb" in printed.out.replace(f"{now.name}:", "")
    data = json.loads((out / "similarity.json").read_text(encoding="utf-8"))
    assert data["notice"] == NOTICE
    skipped = {s["key"]: s["reason"] for s in data["skipped"]}
    assert skipped == {
        "broken": "The file is not JSON, so not a notebook (line 1: Expecting property name enclosed "
        "in double quotes).",
        "past:past/old-empty": "The file is empty.",
    }
    pairs = {frozenset((p["a"], p["b"])): p for p in data["pairs"]}
    old = pairs[frozenset(("dara", "past:past/old-dara"))]
    assert old["score"] == 1.0 and "weights" in old["questions"]
    region = next(m for m in old["matches"] if m["question"] == "weights")["a"][0]
    assert set(region) == {"cell", "first_line", "last_line"} and region["cell"] == 18
    assert all(0 <= p["score"] <= 1 for p in data["pairs"])
    assert not any(p["a"].startswith("past:") and p["b"].startswith("past:") for p in data["pairs"])
    page = (out / "similarity.html").read_text(encoding="utf-8")
    csp = re.search(r'Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None and "default-src 'none'" in csp.group(1) and "script-src" not in csp.group(1)
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "never proof" in page and "Nothing here changes a grade" in page
    assert "http://" not in page and "https://" not in page  # self-contained


@pytest.mark.parametrize(
    "argv, message",
    [
        (["similarity", "nowhere", "-a", "attention_numpy"], "nowhere does not exist."),
        (["similarity", "{here}", "-a", "attention_numpy", "--threshold", "2"], "--threshold must be a score above 0"),
        (
            ["similarity", "{here}", "-a", "attention_numpy", "--min-score", "-1"],
            "--min-score must be a score from 0 to 1",
        ),
        (["similarity", "{here}", "-a", "nope"], "nope"),
    ],
)
def test_bad_arguments_get_a_message_and_status_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    argv = [a.replace("{here}", str(tmp_path)) for a in argv]
    code = main([*argv, "--out", str(tmp_path / "o"), "--config", str(ROOT / "config.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_reading_in_several_processes_finds_what_one_finds(
    klass: tuple[Path, dict[str, dict[str, set[str]]]], course: config.Course, tmp_path: Path
):
    folder, _ = klass
    for n, nb in enumerate(sorted((folder / "attention_numpy").glob("*.ipynb")) * 7):  # 56: enough for the pool
        shutil.copy(nb, tmp_path / f"{n:02d}-{nb.name}")
    (tmp_path / "zz-broken.ipynb").write_text("{", encoding="utf-8")
    assignment = course.assignment("attention_numpy")
    one = find_similar([tmp_path], assignment, progress=False, jobs=1)
    two = find_similar([tmp_path], assignment, progress=False, jobs=2)
    assert [d.key for d in two.documents] == [d.key for d in one.documents] and len(one.documents) == 56
    assert all(
        (a.tokens == b.tokens).all() and (a.questions == b.questions).all()
        for a, b in zip(one.documents, two.documents, strict=True)
    )
    assert two.skipped == one.skipped and [s.key for s in one.skipped] == ["zz-broken"]
    assert [(p.a, p.b, p.score) for p in two.pairs] == [(p.a, p.b, p.score) for p in one.pairs]
