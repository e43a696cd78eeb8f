#!/usr/bin/env python3
"""Write the per-student corpus's fixed parts: roster.csv (30 students), per_student.yaml (the config
block), truth.csv. The submissions themselves can only be made from the notebooks the product writes
(`grader assign attention_numpy --per-student roster.csv --out DIR`); scenarios.py makes them from DIR.
"""

import csv
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIRST = [
    "Amara",
    "Bjorn",
    "Chiara",
    "Dmitri",
    "Elif",
    "Farid",
    "Gita",
    "Hugo",
    "Ines",
    "Jun",
    "Kofi",
    "Lena",
    "Mateo",
    "Nadia",
    "Oren",
    "Priya",
    "Quentin",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wanjiru",
    "Xavier",
    "Yuki",
    "Zara",
    "Anil",
    "Beatriz",
    "Cyrus",
    "Delphine",
]
LAST = [
    "Okafor",
    "Lindqvist",
    "Rossi",
    "Volkov",
    "Yilmaz",
    "Haddad",
    "Sharma",
    "Moreau",
    "Castillo",
    "Tanaka",
    "Mensah",
    "Becker",
    "Silva",
    "Rahman",
    "Levi",
    "Iyer",
    "Dubois",
    "Navarro",
    "Berg",
    "Aziz",
    "Patel",
    "Novak",
    "Kamau",
    "Ortega",
    "Sato",
    "Ahmed",
    "Gupta",
    "Costa",
    "Farahani",
    "Laurent",
]
IDS = [f"s{n:02d}" for n in range(1, 31)]

# scenario per student id; every other student hands in a correct notebook on their own data
SCEN = {
    "s21": ("one_mistake", 9, "", "scaled_scores without sqrt(d_k) (2 points) on own data"),
    "s22": (
        "classmate_notebook",
        0,
        "classmate_notebook:s01",
        "hands in s01's completed notebook (s01's signed id and data) from s22's folder: not paid for answers on s01's data",
    ),
    "s23": (
        "edited_id",
        11,
        "edited_id:s02",
        "own notebook and own data, the id in the metadata edited to s02 (signature left as it was): the edit is "
        "detected; identity from where it came (folder s23), so graded on s23's data, where its answers are right",
    ),
    "s24": (
        "generic_skeleton",
        0,
        "generic_skeleton",
        "the course's generic skeleton (grader assign without --per-student), completed correctly on its data: not s24's data, not paid",
    ),
    "s25": (
        "pasted_answer",
        9,
        "",
        "own notebook, but `output` typed in from s03's printed output (s03's data): wrong on s25's data, output's 2 points lost",
    ),
    "s26": (
        "another_assignment",
        0,
        "another_assignment",
        "the attention_french notebook in s26's folder: a clear error naming the other assignment, 0",
    ),
    "s30": ("no_submission", None, "", "nothing handed in: blank in the gradebook"),
}
NOT_ON_ROSTER = (
    "zz99",
    "not_on_roster",
    None,
    "not_on_roster",
    "folder zz99 (no such student) with s05's completed notebook: listed, no grade written anywhere",
)


def main():
    with open(HERE / "roster.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["submission", "name", "email", "lms_id", "sis_user_id"])
        for i, sid in enumerate(IDS):
            w.writerow(
                [
                    sid,
                    f"{FIRST[i]} {LAST[i]}",
                    f"{FIRST[i].lower()}.{LAST[i].lower()}@uni.edu",
                    3001 + i,
                    f"U{20260000 + i + 1}",
                ]
            )
    with open(HERE / "truth.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["folder", "on_roster", "scenario", "score", "flag", "why"])
        for sid in IDS:
            scen, score, flag, why = SCEN.get(sid, ("correct", 11, "", "correct on own data"))
            w.writerow([sid, "yes", scen, "" if score is None else score, flag, why])
        f, scen, score, flag, why = NOT_ON_ROSTER
        w.writerow([f, "no", scen, "", flag, why])
    (HERE / "per_student.yaml").write_text(
        "# The block measure.py adds to assignments.attention_numpy in a copy of config.yaml (issue 44:\n"
        "# 'which given inputs differ per student and how (the variant rules the course already writes)').\n"
        "# --config FILE gives the product's own spelling.\n"
        "per_student:\n"
        "  inputs:\n"
        '    X: "rng.uniform(-1, 1, size=(3, 2))"\n'
        '    W_q: "rng.uniform(-1, 1, size=(2, 2))"\n'
        '    W_k: "rng.uniform(-1, 1, size=(2, 2))"\n'
        "    W_v: keep\n"
    )
    print("roster.csv, truth.csv, per_student.yaml written")


if __name__ == "__main__":
    main()
