"""``grader similarity``: shared code counts by how rare it is, the usual disguises change nothing,
planted copies rank above independent work in classes of 8 and 48, only the student's own code
counts, broken notebooks are skipped with their reason, and the outputs are what they say."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from grader.cli import main
from grader.course import config
from grader.similarity import NOTICE, Similarity, find_similar
from grader.similarity.canon import cell_names, context, parse_chunks, statements
from grader.similarity.compare import CANDIDATE, Index
from grader.similarity.documents import expected
from grader.similarity.page import render

sys.path.insert(0, str(Path(__file__).resolve().parent))
import similarity_class as sc  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def course() -> config.Course:
    return config.load(ROOT / "config.yaml")


def _forms(code: str) -> list[tuple[str, ...]]:
    body = parse_chunks(code)
    return [s.tokens for s in statements(body, context([cell_names(body)]))]


# ---- the usual disguises are one canonical form ---------------------------------------------------


@pytest.mark.parametrize(
    "one, other",
    [
        ("scores = Q @ K.T", "scores = np.dot(Q, K.transpose())"),
        ("scores = Q @ K.T", "scores = torch.matmul(Q, torch.transpose(K, 0, 1))"),
        ("scores = Q @ K.T", "scores = Q.mm(K.t())"),
        ("scores = Q @ K.T", "scores = np.einsum('ij,kj->ik', Q, K)"),
        ("s = x.sum(axis=1, keepdims=True)", "s = np.sum(x, 1, keepdims=True)"),
        ("w = torch.softmax(s, dim=-1)", "w = F.softmax(s, -1)"),
        ("w = torch.softmax(s, dim=-1)", "w = nn.Softmax(dim=-1)(s)"),
        ("w = torch.softmax(s, dim=-1)", "w = s.softmax(-1)"),
        ("y = s / np.sqrt(d)", "y = s / d ** 0.5"),
        ("y = s / np.sqrt(d)", "y = s * d ** -0.5"),
        ("y = s / np.sqrt(d)", "y = np.divide(s, math.sqrt(float(d)))"),
        ("y = s / np.sqrt(d)", "y = s / torch.tensor(d).sqrt()"),
        ("x += y", "x = x + y"),
        ("q, k = a @ b, c.T", "q = a @ b\nk = c.T"),
        ("out = w @ v", "# the output\nresult   =  weights@values   # done\n\n"),
        (
            "def softmax(x):\n    return np.exp(x) / np.exp(x).sum(-1, keepdims=True)\nw = softmax(s)",
            "def softmax(x):\n    return np.exp(x) / np.exp(x).sum(-1, keepdims=True)\n"
            "w = np.exp(s) / np.sum(np.exp(s), axis=-1, keepdims=True)",
        ),
    ],
)
def test_the_usual_disguises_are_one_form(one: str, other: str):
    assert _forms(one) == _forms(other)


@pytest.mark.parametrize(
    "one, other",
    [
        ("w = np.exp(s)", "w = np.sum(s)"),  # the library's names stay
        ("out = w @ v", "out = np.array([sum(a * b for a, b in zip(r, v)) for r in w])"),  # another algorithm
        ("y = s / np.sqrt(d)", "y = s / d"),
    ],
)
def test_what_differs_stays_different(one: str, other: str):
    assert _forms(one) != _forms(other)


def test_comments_magics_and_names_leave_nothing():
    plain = _forms("scores = Q @ K.T\nw = np.exp(scores).sum(axis=1)\n")
    disguised = _forms(
        "%timeit 1\n# the scores\nmy_scores   =  q_mat@k_mat.T   # done\n\n!ls\nweights = np.exp(my_scores).sum(1)\n"
    )
    assert plain == disguised
    assert plain[0][:2] == ("V", "=") and "exp" in plain[1] and "sum" in plain[1]


# ---- disguised copies, planted copies, independent students -----------------------------------------


def _class(folder: Path, assignment: str, notebooks: dict[str, dict[int, str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, fills in notebooks.items():
        (folder / f"{name}.ipynb").write_text(json.dumps(sc.notebook(assignment, fills)), encoding="utf-8")
    return folder


def _score(result: Similarity, a: str, b: str) -> float:
    return next((p.score for p in result.pairs if {p.a, p.b} == {a, b}), 0.0)


@pytest.mark.parametrize("assignment", ["attention_numpy", "attention_french"])
def test_a_disguised_copy_scores_at_least_nine_tenths_of_the_exact_copy(
    assignment: str, course: config.Course, tmp_path: Path
):
    rng = random.Random(11)
    classmates = {f"o{i}": sc.student(rng, assignment) for i in range(10)}
    original = sc.student(rng, assignment)
    scores = {}
    for kind in ["exact", *sc.DISGUISES]:
        copy = sc.disguise(kind, original, assignment)
        assert kind == "exact" or copy != original, kind
        folder = _class(tmp_path / kind, assignment, {**classmates, "original": original, "copy": copy})
        scores[kind] = _score(find_similar([folder], course.assignment(assignment), progress=False), "original", "copy")
    assert scores["exact"] >= 0.9
    assert {k: s for k, s in scores.items() if s < 0.9 * scores["exact"]} == {}, scores


def _split(result: Similarity, author: dict[str, str]) -> tuple[list[float], list[float]]:
    scores = {frozenset((p.a, p.b)): p.score for p in result.pairs}
    planted: list[float] = []
    independent: list[float] = []
    names = sorted(author)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            (planted if author[a] == author[b] else independent).append(scores.get(frozenset((a, b)), 0.0))
    return planted, independent


@pytest.mark.parametrize("assignment", ["attention_numpy", "attention_french"])
def test_in_a_class_of_48_every_planted_copy_ranks_above_every_independent_pair(
    assignment: str, course: config.Course, tmp_path: Path
):
    author = sc.generated_class(tmp_path / "class", assignment, 48, 8, seed=1)
    result = find_similar([tmp_path / "class"], course.assignment(assignment), progress=False)
    planted, independent = _split(result, author)
    assert len(planted) == 8 and len(independent) == 48 * 47 // 2 - 8
    assert min(planted) > max(independent), (sorted(planted), sorted(independent)[-5:])
    assert min(planted) >= 0.5
    # Most independent students share nothing that is not common.
    assert sorted(independent)[len(independent) // 2] < 0.1


@pytest.mark.parametrize("assignment", ["attention_numpy", "attention_french"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_section_of_eight_without_copies_shows_no_cluster(
    assignment: str, seed: int, course: config.Course, tmp_path: Path
):
    author = sc.generated_class(tmp_path / "class", assignment, 8, 0, seed=seed)
    result = find_similar([tmp_path / "class"], course.assignment(assignment), progress=False)
    assert len(result.documents) == 8 and result.clusters == []
    _, independent = _split(result, author)
    assert sorted(independent)[len(independent) // 2] < 0.2  # the typical pair shares little that counts


def test_a_copy_scores_the_same_in_a_section_of_8_and_a_class_of_48(course: config.Course, tmp_path: Path):
    rng = random.Random(5)
    original = sc.student(rng, "attention_numpy")
    copy = sc.disguise("all", original, "attention_numpy")
    scores = []
    for size in (8, 48):
        classmates = {f"o{i}": sc.student(rng, "attention_numpy") for i in range(size - 2)}
        folder = _class(tmp_path / str(size), "attention_numpy", {**classmates, "original": original, "copy": copy})
        scores.append(
            _score(find_similar([folder], course.assignment("attention_numpy"), progress=False), "original", "copy")
        )
    assert min(scores) >= 0.9 and abs(scores[0] - scores[1]) < 0.1, scores


def test_two_different_algorithms_score_low(course: config.Course, tmp_path: Path):
    pools = sc.NUMPY_POOLS
    vectorised = {8: pools[8][0], 12: pools[12][0], 15: pools[15][0], 21: pools[21][0]}
    vectorised[18] = pools[18][0].format(body=sc.NUMPY_SOFTMAX[2], weights="attention_weights = softmax(scaled_scores)")
    loops = {8: pools[8][6], 12: pools[12][2], 15: pools[15][3], 21: pools[21][4]}
    loops[18] = pools[18][0].format(body=sc.NUMPY_SOFTMAX[3], weights=sc.NUMPY_WEIGHTS[2])
    rng = random.Random(3)
    section = {f"o{i}": sc.student(rng, "attention_numpy") for i in range(6)}
    folder = _class(tmp_path / "class", "attention_numpy", {**section, "vectorised": vectorised, "loops": loops})
    result = find_similar([folder], course.assignment("attention_numpy"), progress=False)
    assert _score(result, "vectorised", "loops") < 0.15


def test_shared_code_weighs_less_the_more_notebooks_hold_it(course: config.Course, tmp_path: Path):
    rng = random.Random(8)
    classmates = {f"o{i}": sc.student(rng, "attention_numpy", own_lines=(1, 1)) for i in range(12)}
    pair = {n: sc.student(rng, "attention_numpy", own_lines=(1, 1)) for n in ("a", "b")}
    line = "\nprint(np.round(np.tanh(scores - scores.mean(axis=0)), 2), np.linalg.norm(output, axis=1))"
    for fills in pair.values():
        fills[21] += line
    scores = []
    for holders in (0, 3, 6):
        everyone = {k: dict(v) for k, v in classmates.items()}
        for name in list(everyone)[:holders]:
            everyone[name][21] += line
        folder = _class(tmp_path / str(holders), "attention_numpy", {**everyone, **pair})
        result = find_similar([folder], course.assignment("attention_numpy"), progress=False)
        docs = [d.key for d in result.documents]
        pair_ = Index(result.documents, expected(result.assignment)).compare(
            docs.index("a"), docs.index("b"), details=True
        )
        scores.append(pair_.score)
        assert any(s.held_by == holders + 2 for s in pair_.shared), pair_  # the page says how many hold it
    assert scores[0] > scores[1] > scores[2], scores


def test_a_splice_scores_about_half_against_each_classmate_and_names_the_questions(
    course: config.Course, tmp_path: Path
):
    rng = random.Random(21)
    classmates = {f"o{i}": sc.student(rng, "attention_numpy") for i in range(10)}
    first, second = sc.student(rng, "attention_numpy", (3, 3)), sc.student(rng, "attention_numpy", (3, 3))
    spliced = sc.splice(first, second)
    folder = _class(
        tmp_path / "c", "attention_numpy", {**classmates, "first": first, "second": second, "spliced": spliced}
    )
    result = find_similar([folder], course.assignment("attention_numpy"), progress=False)
    pairs = {frozenset((p.a, p.b)): p for p in result.pairs}
    with_first, with_second = pairs[frozenset(("first", "spliced"))], pairs[frozenset(("second", "spliced"))]
    assert 0.2 <= with_first.score and 0.2 <= with_second.score
    assert _score(result, "first", "second") < min(with_first.score, with_second.score)
    # Cells 8 and 12 came from the first, 15, 18 and 21 from the second.
    early = {m.question for m in with_first.matches if m.weight > 0.05}
    late = {m.question for m in with_second.matches if m.weight > 0.05}
    assert not early & {"scaled", "weights", "output"} and early
    assert not late & {"qkv"} and late


def test_code_belongs_to_the_question_whose_value_it_computes(course: config.Course, tmp_path: Path):
    # Scores filled in place in a double loop; rows of softmax appended to a list and stacked.
    fills = {
        8: sc.NUMPY_POOLS[8][6],
        12: sc.NUMPY_POOLS[12][2],
        15: sc.NUMPY_POOLS[15][3],
        18: sc.NUMPY_POOLS[18][0].format(body=sc.NUMPY_SOFTMAX[3], weights=sc.NUMPY_WEIGHTS[2]),
        21: sc.NUMPY_POOLS[21][4],
    }
    rng = random.Random(4)
    classmates = {f"o{i}": sc.student(rng, "attention_numpy") for i in range(8)}
    folder = _class(tmp_path / "c", "attention_numpy", {**classmates, "a": fills, "b": dict(fills)})
    result = find_similar([folder], course.assignment("attention_numpy"), progress=False)
    doc = result.document("a")
    ids = [q.id for q in result.assignment.questions]
    lines: dict[str, set[tuple[int, int]]] = {}
    for cell, line, q in zip(doc.cells.tolist(), doc.lines.tolist(), doc.questions.tolist(), strict=True):
        lines.setdefault(ids[q] if q >= 0 else "none", set()).add((cell, line))
    assert (12, 5) in lines["scores"]  # scores[i, j] = ... inside the loops
    assert {(18, 7), (18, 9), (18, 10)} <= lines["weights"]  # rows = [], rows.append(softmax(row)), np.array(rows)
    assert {(18, 2), (18, 5)} <= lines["softmax"]
    pair = next(p for p in result.pairs if {p.a, p.b} == {"a", "b"})
    assert {m.title for m in pair.matches} >= {"Attention scores", "Attention weights"}


# ---- what counts ----------------------------------------------------------------------------------


def test_only_the_students_own_code_counts(course: config.Course, tmp_path: Path):
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
    assert result.document("a").tokens == 0 and len(result.document("c").keys) == 0
    # Outputs are never read; the given line of cell 15 is not the student's.
    sc.generated_class(tmp_path / "class", "attention_numpy", 3, 0, seed=1)
    doc = find_similar([tmp_path / "class"], course.assignment("attention_numpy"), progress=False).document("s000")
    assert set(doc.own_lines) == {8, 12, 15, 18, 21}
    assert 1 not in doc.own_lines[15]


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
        nb = sc.notebook("attention_numpy", sc.NUMPY[{"p": "bo", "q": "chen", "r": "dara"}[name]])
        cells = nb["cells"]
        assert isinstance(cells, list)
        cells.append({"cell_type": "markdown", "metadata": {}, "source": text})
        (tmp_path / f"{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    result = find_similar([tmp_path], course.assignment("attention_numpy"), progress=False)
    pairs = {frozenset((p.a, p.b)): p for p in result.pairs}
    same = pairs[frozenset(("p", "q"))]
    assert same.markdown > 0.5 and same.markdown_cells == ((25, 25),)
    assert frozenset(("p", "r")) not in pairs or pairs[frozenset(("p", "r"))].markdown == 0


# ---- the command and its outputs ------------------------------------------------------------------


def test_command_writes_json_and_a_strict_page_and_skips_broken_notebooks(
    course: config.Course, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    author = sc.generated_class(tmp_path / "class", "attention_numpy", 10, 1, seed=2)
    copy = next(k for k, v in author.items() if k != v)
    past = tmp_path / "past"
    past.mkdir()
    shutil.copy(tmp_path / "class" / f"{author[copy]}.ipynb", past / "old.ipynb")
    (past / "old-empty.ipynb").write_text("", encoding="utf-8")
    now = tmp_path / "now.zip"
    with zipfile.ZipFile(now, "w") as zf:
        for nb in sorted((tmp_path / "class").glob("*.ipynb")):
            zf.write(nb, f"class/{nb.name}")
        zf.writestr("class/broken.ipynb", "{not json")
        evil = sc.student(random.Random(1), "attention_numpy")
        evil[21] += "\nprint('</pre><script>alert(1)</script>')"
        zf.writestr("class/evil.ipynb", json.dumps(sc.notebook("attention_numpy", evil)))
    out = tmp_path / "out"
    argv = ["similarity", str(now), "--past", str(past), "--assignment", "attention_numpy", "--out", str(out)]
    code = main([*argv, "--config", str(ROOT / "config.yaml")])
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
    best = data["pairs"][0]
    assert {best["a"], best["b"]} in ({copy, author[copy]}, {author[copy], "past:past/old"}, {copy, "past:past/old"})
    old = pairs[frozenset((author[copy], "past:past/old"))]
    assert old["score"] >= 0.9 and old["questions"]
    shared = old["shared"][0]
    assert set(shared) == {"question", "a", "b", "held_by", "notebooks", "common", "rarity", "flow"}
    assert (
        shared["notebooks"] == 12 and shared["held_by"] >= 2 and set(shared["a"]) == {"cell", "first_line", "last_line"}
    )
    assert all(0 <= p["score"] <= 1 for p in data["pairs"])
    assert not any(p["a"].startswith("past:") and p["b"].startswith("past:") for p in data["pairs"])
    page = (out / "similarity.html").read_text(encoding="utf-8")
    csp = re.search(r'Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None and "default-src 'none'" in csp.group(1) and "script-src" not in csp.group(1)
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "never proof" in page and "Nothing here changes a grade" in page
    assert "http://" not in page and "https://" not in page  # self-contained
    assert "only these two of the 12 notebooks" in page or "of the 12 notebooks" in page


def test_titles_with_math_are_typeset_by_the_bundled_katex_and_nothing_else_runs(course: config.Course, tmp_path: Path):
    sc.generated_class(tmp_path / "class", "attention_numpy", 6, 2, seed=3)
    assignment = course.assignment("attention_numpy")
    result = find_similar([tmp_path / "class"], assignment, progress=False)
    plain = render(result)
    assert "<script" not in plain
    questions = tuple(
        dataclasses.replace(q, title="Scores $Q K^T / \\sqrt{d_k}$") if q.id == "scaled" else q
        for q in assignment.questions
    )
    result.assignment = dataclasses.replace(assignment, questions=questions)
    page = render(result)
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    csp = re.search(r'Content-Security-Policy" content="([^"]+)"', page)
    assert len(scripts) == 1 and "renderMathInElement" in scripts[0] and ".qt" in scripts[0]
    assert csp is not None and "script-src 'sha256-" in csp.group(1) and "'unsafe-eval'" not in csp.group(1)
    result.assignment = dataclasses.replace(
        assignment, questions=tuple(dataclasses.replace(q, title="Similarity S = X X^T") for q in assignment.questions)
    )
    assert "X X<sup>T</sup>" in render(result)


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


def test_reading_in_several_processes_finds_what_one_finds(course: config.Course, tmp_path: Path):
    sc.generated_class(tmp_path / "class", "attention_numpy", 56, 4, seed=9)
    (tmp_path / "class" / "zz-broken.ipynb").write_text("{", encoding="utf-8")
    assignment = course.assignment("attention_numpy")
    one = find_similar([tmp_path / "class"], assignment, progress=False, jobs=1)
    two = find_similar([tmp_path / "class"], assignment, progress=False, jobs=2)
    assert [d.key for d in two.documents] == [d.key for d in one.documents] and len(one.documents) == 56
    assert all(
        (a.keys == b.keys).all() and (a.questions == b.questions).all()
        for a, b in zip(one.documents, two.documents, strict=True)
    )
    assert two.skipped == one.skipped and [s.key for s in one.skipped] == ["zz-broken"]
    assert [(p.a, p.b, p.score) for p in two.pairs] == [(p.a, p.b, p.score) for p in one.pairs]


def test_the_index_finds_every_pair_a_full_comparison_scores_above_its_bound(course: config.Course, tmp_path: Path):
    sc.generated_class(tmp_path / "class", "attention_french", 24, 4, seed=6)
    assignment = course.assignment("attention_french")
    result = find_similar([tmp_path / "class"], assignment, progress=False)
    index = Index(result.documents, expected(assignment))
    found = set(index.candidates())
    n = len(result.documents)
    # A pair is compared in full when the fragments rarer than one in four it shares could make a
    # score of CANDIDATE on their own (what common ones add is about what chance gives, and the
    # score takes that off): every such pair is found, whatever it scores.
    compared = 0
    for i in range(n):
        for j in range(i + 1, n):
            if max(_rare_bound(index, i, j), _rare_bound(index, j, i)) >= CANDIDATE:
                assert (i, j) in found
                compared += 1
            elif (i, j) not in found:
                assert index.compare(i, j).score < 0.5  # nothing left out looks like a copy
    assert compared > 0


def _rare_bound(index: Index, i: int, j: int) -> float:
    """The most the rare fragments notebook ``i`` shares with ``j`` can add to ``i``'s share."""
    d, o = index.docs[i], index.own[i]
    shared = set(o.keys[o.rare].tolist()) & set(index.own[j].keys[index.own[j].rare].tolist())
    rows = [k in shared for k in d.keys.tolist()]
    mass = float((o.weights * (d.ends - d.starts))[rows].sum())
    return mass / max(o.total - o.chance, index.floor)
