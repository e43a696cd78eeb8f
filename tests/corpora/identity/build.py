#!/usr/bin/env python3
"""Build the identity corpus: classes of attention_numpy submissions, rosters and truth.json.

Every notebook starts from the solution with a chosen set of answers broken (tools/make_nb.py),
so that its score identifies it within its class. Each notebook is then graded on its own
(`grader grade one.ipynb --assignment attention_numpy --out tmp`) and the score it got is
recorded in truth.json; a roster row's expected LMS grade is the recorded score of the notebook
that row's student handed in (or "blank").

usage: build.py [--grader PATH] [--course DIR]
"""

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "tools"))
from make_nb import build as build_nb  # noqa: E402

ASSIGNMENT = "attention_numpy"
BREAKS = {  # designed score -> answers broken
    11: "",
    10: "Q",
    9: "scaled",
    8: "Q,scaled",
    7: "Q,K,scaled",
    6: "Q,weights,output",
    5: "scaled,weights,output",
    4: "Q,scaled,weights,output",
    3: "Q,K,scaled,weights,output",
    2: "Q,K,V,scaled,weights,output",
    1: "Q,K,V,scores,scaled,weights,output",
}
COLS = ["submission", "name", "email", "github", "lms_id", "sis_user_id", "sis_login_id", "section"]


def row(sub, name, lms, github="", email=None, login=None, section="Tue"):
    first = name.split()[0].lower()
    return {
        "submission": sub,
        "name": name,
        "email": email or f"{first}.{lms.lower()}@uni.edu",
        "github": github,
        "lms_id": lms,
        "sis_user_id": "S-" + lms,
        "sis_login_id": login or f"{first}{lms[-2:]}",
        "section": section,
    }


# Each class: layout, the grader's input (relative to the class folder), notebooks (path under
# the batch root -> designed score, and the owner: whose roster row that notebook is), the roster,
# and the runs (the second run of a "late" class adds the late notebooks first).
CLASSES = [
    dict(
        name="c01_named_after_classmate",
        layout="folder per student",
        description="bob names his notebook alice.ipynb and carol hers bob.ipynb while alice/attention_numpy.ipynb exists; "
        "dave also keeps a scratch notebook alice.ipynb beside his attention_numpy.ipynb (the assignment one is graded)",
        input="batch",
        notebooks={
            "alice/attention_numpy.ipynb": (11, "A101"),
            "bob/alice.ipynb": (10, "A102"),
            "carol/bob.ipynb": (9, "A103"),
            "dave/attention_numpy.ipynb": (8, "A104"),
            "dave/alice.ipynb": (3, None),
        },
        roster=[
            row("alice", "Alice Arden", "A101"),
            row("bob", "Bob Barnes", "A102"),
            row("carol", "Carol Chen", "A103"),
            row("dave", "Dave Dunn", "A104"),
            row("erin", "Erin Eady", "A105"),
        ],
        cases={
            "A101": "folder alice",
            "A102": "bob/alice.ipynb (named after classmate)",
            "A103": "carol/bob.ipynb (named after classmate)",
            "A104": "dave: assignment nb + scratch alice.ipynb",
            "A105": "no submission",
        },
    ),
    dict(
        name="c02_flat_named_by_student",
        layout="flat folder",
        description="class/alice.ipynb etc.: the file name under the batch root is the identity; erin has no notebook",
        input="batch",
        notebooks={
            "alice.ipynb": (11, "B201"),
            "bob.ipynb": (9, "B202"),
            "carol.ipynb": (7, "B203"),
            "dave.ipynb": (5, "B204"),
        },
        roster=[
            row("alice", "Alice Ames", "B201"),
            row("bob", "Bob Boyd", "B202"),
            row("carol", "Carol Cole", "B203"),
            row("dave", "Dave Doyle", "B204"),
            row("erin", "Erin Ellis", "B205"),
        ],
        cases={
            "B201": "flat alice.ipynb",
            "B202": "flat bob.ipynb",
            "B203": "flat carol.ipynb",
            "B204": "flat dave.ipynb",
            "B205": "no submission",
        },
    ),
    dict(
        name="c03_case_and_ids",
        layout="folder per student",
        description="folders named Alice (roster: alice), by github (bob-gh), by email, by sis_login_id, by github in upper case",
        input="batch",
        notebooks={
            "Alice/attention_numpy.ipynb": (11, "C301"),
            "bob-gh/attention_numpy.ipynb": (10, "C302"),
            "carol.c@uni.edu/attention_numpy.ipynb": (9, "C303"),
            "dlogin/my_notebook.ipynb": (8, "C304"),
            "ERIN-GH/attention_numpy.ipynb": (7, "C305"),
        },
        roster=[
            row("alice", "Alice Ayers", "C301"),
            row("bob", "Bob Bloom", "C302", github="bob-gh"),
            row("carol", "Carol Cruz", "C303", email="carol.c@uni.edu"),
            row("dave", "Dave Drake", "C304", login="dlogin"),
            row("erin", "Erin Elm", "C305", github="erin-gh"),
            row("frank", "Frank Foy", "C306"),
        ],
        cases={
            "C301": "folder Alice vs roster alice (case)",
            "C302": "folder = github",
            "C303": "folder = email",
            "C304": "folder = sis_login_id",
            "C305": "folder ERIN-GH vs github erin-gh (case)",
            "C306": "no submission",
        },
        assumptions={"C301": "case-insensitive match", "C305": "case-insensitive match"},
    ),
    dict(
        name="c04_duplicate_github",
        layout="folder per student",
        description="folder coder/ matches two roster rows (carl and cora both have github 'coder'): error naming both, "
        "nothing written for them, alice and bob written",
        input="batch",
        notebooks={
            "alice/attention_numpy.ipynb": (11, "D401"),
            "bob/attention_numpy.ipynb": (10, "D402"),
            "coder/attention_numpy.ipynb": (9, None),
        },
        roster=[
            row("alice", "Alice Abbot", "D401"),
            row("bob", "Bob Baker", "D402"),
            row("carl", "Carl Cobb", "D403", github="coder"),
            row("cora", "Cora Crane", "D404", github="coder"),
            row("dave", "Dave Dorn", "D405"),
        ],
        cases={
            "D401": "folder alice",
            "D402": "folder bob",
            "D403": "ambiguous: github coder (carl)",
            "D404": "ambiguous: github coder (cora)",
            "D405": "no submission",
        },
        blank_by_error=["D403", "D404"],
        error_rows=["D403", "D404"],
    ),
    dict(
        name="c05_two_submissions_one_row",
        layout="folder per student",
        description="folders ebird/ (Erin Stone's github) and es99/ (her sis_login_id) both claim her row: error naming "
        "both, nothing written for her, others written",
        input="batch",
        notebooks={
            "alice/attention_numpy.ipynb": (11, "E501"),
            "bob/bob.ipynb": (10, "E502"),
            "ebird/attention_numpy.ipynb": (9, None),
            "es99/attention_numpy.ipynb": (8, None),
        },
        roster=[
            row("alice", "Alice Alder", "E501"),
            row("bob", "Bob Birch", "E502"),
            row("estone", "Erin Stone", "E503", github="ebird", login="es99", email="erin.stone@uni.edu"),
            row("gina", "Gina Gray", "E504"),
        ],
        cases={
            "E501": "folder alice",
            "E502": "folder bob (bob/bob.ipynb)",
            "E503": "claimed by ebird/ and es99/",
            "E504": "no submission",
        },
        blank_by_error=["E503"],
        error_subs=["ebird", "es99"],
    ),
    dict(
        name="c06_zip_folder_per_student",
        layout="zip of folder per student",
        description="class.zip: alice/, bob/alice.ipynb, Carol/ (case), dave/ with a scratch bob.ipynb, erin-gh/submission.ipynb",
        input="class.zip",
        zip_root="",
        notebooks={
            "alice/attention_numpy.ipynb": (11, "F601"),
            "bob/alice.ipynb": (10, "F602"),
            "Carol/attention_numpy.ipynb": (9, "F603"),
            "dave/attention_numpy.ipynb": (8, "F604"),
            "dave/bob.ipynb": (2, None),
            "erin-gh/submission.ipynb": (7, "F605"),
        },
        roster=[
            row("alice", "Alice Ash", "F601"),
            row("bob", "Bob Bell", "F602"),
            row("carol", "Carol Cane", "F603"),
            row("dave", "Dave Dale", "F604"),
            row("erin", "Erin Eve", "F605", github="erin-gh"),
            row("frank", "Frank Fern", "F606"),
        ],
        cases={
            "F601": "zip: folder alice",
            "F602": "zip: bob/alice.ipynb (named after classmate)",
            "F603": "zip: folder Carol vs roster carol (case)",
            "F604": "zip: dave + scratch bob.ipynb",
            "F605": "zip: folder = github",
            "F606": "no submission",
        },
        assumptions={"F603": "case-insensitive match"},
    ),
    dict(
        name="c07_nbgrader_exchange",
        layout="nbgrader exchange (course/submitted/<student>/<assignment>/)",
        description="course/submitted/...: bob hands in alice.ipynb, carol carol_final.ipynb, dave-gh by github; "
        "folder twin matches tia and tom (same sis_login_id): error naming both, others written",
        input="batch/course",
        notebooks={
            "course/submitted/alice/attention_numpy/attention_numpy.ipynb": (11, "G701"),
            "course/submitted/bob/attention_numpy/alice.ipynb": (10, "G702"),
            "course/submitted/carol/attention_numpy/carol_final.ipynb": (9, "G703"),
            "course/submitted/dave-gh/attention_numpy/attention_numpy.ipynb": (8, "G704"),
            "course/submitted/twin/attention_numpy/attention_numpy.ipynb": (7, None),
        },
        roster=[
            row("alice", "Alice Astor", "G701"),
            row("bob", "Bob Brand", "G702"),
            row("carol", "Carol Crow", "G703"),
            row("dave", "Dave Dent", "G704", github="dave-gh"),
            row("tia", "Tia Tran", "G705", login="twin"),
            row("tom", "Tom Tully", "G706", login="twin"),
            row("uma", "Uma Upton", "G707"),
        ],
        cases={
            "G701": "nbgrader alice",
            "G702": "nbgrader bob/alice.ipynb (named after classmate)",
            "G703": "nbgrader carol/carol_final.ipynb",
            "G704": "nbgrader folder = github",
            "G705": "ambiguous: sis_login_id twin (tia)",
            "G706": "ambiguous: sis_login_id twin (tom)",
            "G707": "no submission",
        },
        blank_by_error=["G705", "G706"],
        error_rows=["G705", "G706"],
    ),
    dict(
        name="c08_nbgrader_zip",
        layout="zip of nbgrader exchange (submitted/ at the root)",
        description="submitted.zip: bob hands in carol.ipynb, Dave in upper case; erin has nothing",
        input="submitted.zip",
        zip_root="",
        notebooks={
            "submitted/alice/attention_numpy/attention_numpy.ipynb": (11, "H801"),
            "submitted/bob/attention_numpy/carol.ipynb": (10, "H802"),
            "submitted/carol/attention_numpy/attention_numpy.ipynb": (9, "H803"),
            "submitted/Dave/attention_numpy/attention_numpy.ipynb": (8, "H804"),
        },
        roster=[
            row("alice", "Alice Aube", "H801"),
            row("bob", "Bob Burke", "H802"),
            row("carol", "Carol Cray", "H803"),
            row("dave", "Dave Dray", "H804"),
            row("erin", "Erin Enns", "H805"),
        ],
        cases={
            "H801": "nbgrader zip alice",
            "H802": "nbgrader zip bob/carol.ipynb (named after classmate)",
            "H803": "nbgrader zip carol",
            "H804": "nbgrader zip Dave vs dave (case)",
            "H805": "no submission",
        },
        assumptions={"H804": "case-insensitive match"},
    ),
    dict(
        name="c09_new_student_folder",
        layout="folder per student, then one more",
        description="run 1: bob, carol, dave; run 2 (same --out): aaron/ added, sorting first",
        input="batch",
        notebooks={
            "bob/attention_numpy.ipynb": (10, "I902"),
            "carol/attention_numpy.ipynb": (9, "I903"),
            "dave/attention_numpy.ipynb": (8, "I904"),
        },
        late={"aaron/attention_numpy.ipynb": (11, "I901")},
        roster=[
            row("aaron", "Aaron Ames", "I901"),
            row("bob", "Bob Bond", "I902"),
            row("carol", "Carol Case", "I903"),
            row("dave", "Dave Dean", "I904"),
        ],
        cases={"I901": "aaron (added in run 2)", "I902": "bob", "I903": "carol", "I904": "dave"},
    ),
    dict(
        name="c10_new_student_flat",
        layout="flat folder, then one more",
        description="run 1: bob.ipynb, carol.ipynb, dave.ipynb; run 2: aaron.ipynb added",
        input="batch",
        notebooks={"bob.ipynb": (10, "J002"), "carol.ipynb": (9, "J003"), "dave.ipynb": (8, "J004")},
        late={"aaron.ipynb": (7, "J001")},
        roster=[
            row("aaron", "Aaron Acre", "J001"),
            row("bob", "Bob Bart", "J002"),
            row("carol", "Carol Coe", "J003"),
            row("dave", "Dave Dix", "J004"),
        ],
        cases={"J001": "aaron (added in run 2)", "J002": "bob", "J003": "carol", "J004": "dave"},
    ),
    dict(
        name="c11_new_student_same_filenames",
        layout="folder per student, every notebook submission.ipynb, then one more",
        description="every student's notebook is submission.ipynb; run 2 adds aaron/submission.ipynb",
        input="batch",
        notebooks={
            "bob/submission.ipynb": (10, "K102"),
            "carol/submission.ipynb": (9, "K103"),
            "dave/submission.ipynb": (8, "K104"),
        },
        late={"aaron/submission.ipynb": (6, "K101")},
        roster=[
            row("aaron", "Aaron Ayre", "K101"),
            row("bob", "Bob Beck", "K102", github="bobbeck"),
            row("carol", "Carol Cobb", "K103"),
            row("dave", "Dave Doe", "K104"),
        ],
        cases={"K101": "aaron (added in run 2)", "K102": "bob", "K103": "carol", "K104": "dave"},
    ),
    dict(
        name="c12_duplicate_submission_rows",
        layout="flat folder",
        description="two roster rows with submission 'sam' (Sam Avery, Sam Brook): error naming both, others written",
        input="batch",
        notebooks={"alice.ipynb": (11, "L201"), "bob.ipynb": (10, "L202"), "sam.ipynb": (9, None)},
        roster=[
            row("alice", "Alice Amos", "L201"),
            row("bob", "Bob Beal", "L202"),
            row("sam", "Sam Avery", "L203"),
            row("sam", "Sam Brook", "L204"),
            row("carol", "Carol Cain", "L205"),
        ],
        cases={
            "L201": "flat alice",
            "L202": "flat bob",
            "L203": "ambiguous: submission sam (Avery)",
            "L204": "ambiguous: submission sam (Brook)",
            "L205": "no submission",
        },
        blank_by_error=["L203", "L204"],
        error_rows=["L203", "L204"],
    ),
    dict(
        name="c13_new_student_classmate_named",
        layout="folder per student, then one more",
        description="bob's notebook is bob/aaron.ipynb; run 1 has no aaron (his row must stay blank, not get bob's grade); "
        "run 2 adds aaron/attention_numpy.ipynb",
        input="batch",
        notebooks={"bob/aaron.ipynb": (10, "M302"), "carol/attention_numpy.ipynb": (9, "M303")},
        late={"aaron/attention_numpy.ipynb": (11, "M301")},
        roster=[row("aaron", "Aaron Abel", "M301"), row("bob", "Bob Blum", "M302"), row("carol", "Carol Cope", "M303")],
        cases={
            "M301": "aaron (bob/aaron.ipynb exists; aaron added in run 2)",
            "M302": "bob/aaron.ipynb",
            "M303": "carol",
        },
    ),
]


def score_alone(grader, course, nb_path):
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / nb_path.name
        shutil.copy(nb_path, one)
        out = Path(tmp) / "out"
        p = subprocess.run(
            [
                grader,
                "grade",
                str(one),
                "--assignment",
                ASSIGNMENT,
                "--out",
                str(out),
                "--config",
                str(course / "config.yaml"),
            ],
            cwd=course,
            capture_output=True,
            text=True,
        )
        card = out / (one.stem + ".yaml")
        if p.returncode != 0 or not card.exists():
            sys.exit(f"grading {nb_path} alone failed: rc={p.returncode}\n{p.stdout}\n{p.stderr}")
        score = None
        for line in card.read_text().splitlines():
            if line.startswith("score:"):
                score = float(line.split(":", 1)[1])
                break
        return int(score) if score == int(score) else score


def name_aliases(r, roster):
    """Strings that name roster row r unambiguously (used to check an error message)."""
    out = []
    for key in ("name", "email", "lms_id", "sis_user_id", "sis_login_id", "github", "submission"):
        v = r[key]
        if v and sum(1 for o in roster if o[key] == v) == 1:
            out.append(v)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grader", default=str(Path(__file__).resolve().parents[3] / ".venv/bin/grader"))
    ap.add_argument("--course", default=str(HERE / "_course"))
    args = ap.parse_args()
    course = Path(args.course)
    if not (course / "config.yaml").exists():
        course.mkdir(parents=True)
        for part in ("config.yaml", "solutions", "assignments"):
            src = Path(__file__).resolve().parents[3] / part
            (shutil.copytree if src.is_dir() else shutil.copy)(src, course / part)

    for spec in CLASSES:
        cdir = HERE / "classes" / spec["name"]
        if cdir.exists():
            shutil.rmtree(cdir)
        cdir.mkdir(parents=True)
        zipped = spec["input"].endswith(".zip")
        src_root = cdir / ("src" if zipped else "batch")
        late_root = cdir / "late"
        scores = {}
        for group, root in (("notebooks", src_root), ("late", late_root)):
            for rel, (want, owner) in spec.get(group, {}).items():
                tag = owner or rel
                path = root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(build_nb([b for b in BREAKS[want].split(",") if b], tag), indent=1))
                got = score_alone(args.grader, course, path)
                scores[f"{'late/' if group == 'late' else ''}{rel}"] = got
                if got != want:
                    print(f"note: {spec['name']} {rel}: designed {want}, graded alone {got}")
        if zipped:
            with zipfile.ZipFile(cdir / spec["input"], "w", zipfile.ZIP_DEFLATED) as z:
                for f in sorted(src_root.rglob("*.ipynb")):
                    z.write(f, f.relative_to(src_root).as_posix())
        vals = list(scores.values())
        assert len(vals) == len(set(vals)), f"{spec['name']}: scores not distinct {scores}"

        with open(cdir / "roster.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=COLS)
            w.writeheader()
            w.writerows(spec["roster"])

        owner_of = {}
        for group, prefix in (("notebooks", ""), ("late", "late/")):
            for rel, (_, owner) in spec.get(group, {}).items():
                if owner:
                    owner_of[owner] = (prefix + rel, group == "late")
        blank_err = set(spec.get("blank_by_error", []))
        nruns = 2 if spec.get("late") else 1
        runs = []
        for i in range(nruns):
            rows = []
            for r in spec["roster"]:
                lms = r["lms_id"]
                grade = "blank"
                src = None
                if lms in owner_of and lms not in blank_err:
                    rel, is_late = owner_of[lms]
                    if not is_late or i == 1:
                        grade, src = scores[rel], rel
                rows.append(
                    {
                        "lms_id": lms,
                        "email": r["email"],
                        "student": r["name"],
                        "case": spec["cases"][lms],
                        "expected": grade,
                        "notebook": src,
                        **({"assumption": spec["assumptions"][lms]} if lms in spec.get("assumptions", {}) else {}),
                    }
                )
            run = {"add_late": i == 1, "rows": rows}
            if spec.get("error_rows") or spec.get("error_subs"):
                must = [
                    name_aliases(r, spec["roster"]) for r in spec["roster"] if r["lms_id"] in spec.get("error_rows", [])
                ]
                must += [[s] for s in spec.get("error_subs", [])]
                run["status"] = {"exit": "nonzero", "must_name_any_of_each": must, "traceback": False}
            else:
                run["status"] = {"exit": 0, "traceback": False}
            runs.append(run)
        truth = {
            "class": spec["name"],
            "layout": spec["layout"],
            "description": spec["description"],
            "assignment": ASSIGNMENT,
            "input": spec["input"],
            "roster": "roster.csv",
            "notebook_scores_graded_alone": scores,
            "runs": runs,
        }
        (cdir / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(f"{spec['name']}: {scores}")


if __name__ == "__main__":
    main()
