#!/usr/bin/env python3
"""Build the LMS corpus (issue 45): downloads as instructors get them, a roster, a late policy, the truth.

Writes, beside this file:
  roster.csv                       10 students with their Canvas user id (lms_id), Moodle participant id,
                                   Gradescope sid (= sis_user_id), and extension_hours (the extension column)
  policy.yaml                      the late policy, in the words of issue 45 (see README)
  classes/canvas/submissions.zip   Canvas "Download Submissions"
  classes/canvas/times.csv         submission times (Canvas's zip carries only the LATE marker)
  classes/canvas_naive/...         the same zip with a times file whose times have no zone (bad input)
  classes/moodle_flat/...zip       Moodle "Download all submissions", flat
  classes/moodle_folders/...zip    Moodle "Download all submissions" with "Download submissions in folders"
  classes/moodle_*/grading_worksheet.csv   Moodle's grading worksheet (Identifier, ..., Last modified (submission))
  classes/gradescope/...zip        Gradescope "Export Submissions": assignment_<id>_export/, submission_metadata.yml
  truth.json                       per class and student: the file that counts, how late, the penalty, the arithmetic

Each notebook is an example submission whose score identifies it: bob_correct 11/11, carol_no_sqrt 9/11,
grace_half_done 4/11 (scores of the product's own examples, README.md), so the grade in a row tells
which file was graded.
"""

import csv
import json
import math
import shutil
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

HERE = Path(__file__).resolve().parent
TZ = ZoneInfo("America/New_York")
NB = {k: (HERE / "base" / f"{k}.ipynb").read_bytes() for k in ("bob_correct", "carol_no_sqrt", "grace_half_done")}
RAW = {"bob_correct": 11, "carol_no_sqrt": 9, "grace_half_done": 4}
MAX = 11

POLICY = {
    "due": "2026-11-20 23:59",
    "timezone": "America/New_York",
    "grace_minutes": 15,
    "penalty_percent_per_day": 10,
    "max_penalty_percent": 30,
    "floor": 0,
    "not_accepted_after": "2026-11-27 23:59",
    "extensions": "roster column extension_hours",
    "times_from": "canvas: times.csv; moodle: grading worksheet 'Last modified (submission)'; gradescope: :created_at:",
}
DUE = datetime(2026, 11, 20, 23, 59, tzinfo=TZ)
CUTOFF = datetime(2026, 11, 27, 23, 59, tzinfo=TZ)

# name (first, last), email, canvas user id, moodle participant id, sid, extension hours
ROSTER = [
    ("Ada", "Lovelace", "ada@uni.edu", 1001, 5550101, "2026001", 0),
    ("Alan", "Turing", "alan@uni.edu", 1002, 5550102, "2026002", 0),
    ("Grace", "Hopper", "grace@uni.edu", 1003, 5550103, "2026003", 0),
    ("Edsger", "Dijkstra", "edsger@uni.edu", 1004, 5550104, "2026004", 0),
    ("Barbara", "Liskov", "barbara@uni.edu", 1005, 5550105, "2026005", 0),
    ("Wei", "Chen", "wei@uni.edu", 1006, 5550106, "2026006", 48),
    ("Katherine", "Johnson", "katherine@uni.edu", 1007, 5550107, "2026007", 0),
    ("Donald", "Knuth", "donald@uni.edu", 1008, 5550108, "2026008", 0),
    ("Frances", "Allen", "frances@uni.edu", 1009, 5550109, "2026009", 0),
    ("Radia", "Perlman", "radia@uni.edu", 1010, 5550110, "2026010", 0),
]
OFF_ROSTER = ("Mallory", "Unknown", "mallory@elsewhere.edu", 1999, 5550199, "2026999", 0)


def t(s):
    return datetime.strptime(s, "%Y-%m-%d %H:%M").replace(tzinfo=TZ)


# The story of each student: submissions as (local time, notebook), the last one latest.
STORY = {
    "Lovelace": {"subs": [("2026-11-20 20:15", "bob_correct")], "case": "on time"},
    "Turing": {
        "subs": [("2026-11-21 00:09", "carol_no_sqrt")],
        "case": "10 minutes late: within the 15-minute grace (Canvas still marks it LATE)",
    },
    "Hopper": {"subs": [("2026-11-21 18:00", "bob_correct")], "case": "18 h 01 min late: 1 day charged"},
    "Dijkstra": {
        "subs": [("2026-11-22 00:00", "carol_no_sqrt")],
        "case": "24 h 01 min late: just past one day, 2 days charged (boundary)",
    },
    "Liskov": {
        "subs": [("2026-11-25 12:00", "bob_correct")],
        "case": "4 days 12 h 01 min late: 5 days, 50 %, capped at 30 %",
    },
    "Chen": {
        "subs": [("2026-11-22 22:00", "bob_correct")],
        "case": "48 h extension: due 2026-11-22 23:59, submitted 1 h 59 min before it (2 days late without it)",
    },
    "Johnson": {
        "subs": [("2026-11-19 10:00", "grace_half_done"), ("2026-11-21 09:00", "bob_correct")],
        "case": "resubmission: half-done on time, then complete 9 h 01 min late; the latest counts (1 day, 10 %)",
    },
    "Knuth": {
        "subs": [("2026-11-20 21:00", "bob_correct")],
        "case": "renamed file (a TA renamed it knuth.ipynb before zipping again): not in the LMS scheme",
    },
    "Allen": {
        "subs": [("2026-11-20 22:00", "bob_correct")],
        "case": "file named by another LMS's scheme (Moodle's, inside the Canvas zip; Canvas's inside Moodle's)",
    },
    "Perlman": {
        "subs": [("2026-11-28 09:00", "bob_correct")],
        "case": "7 days 9 h 01 min late: after 'not accepted after' 2026-11-27 23:59: 0",
    },
    "Unknown": {"subs": [("2026-11-20 19:00", "bob_correct")], "case": "not on the roster"},
}


def lateness(sub_time, ext_hours):
    due = DUE + timedelta(hours=ext_hours)
    late = sub_time - due
    mins = late.total_seconds() / 60
    if sub_time > CUTOFF + timedelta(hours=ext_hours):
        return (
            mins,
            None,
            "not accepted: after %s" % (CUTOFF + timedelta(hours=ext_hours)).strftime("%Y-%m-%d %H:%M %Z"),
        )
    if mins <= 0:
        return mins, 0, "on time (%s before the due date %s)" % (fmt_dur(-mins), due.strftime("%Y-%m-%d %H:%M %Z"))
    if mins <= POLICY["grace_minutes"]:
        return mins, 0, "%s late, within the %d-minute grace: no penalty" % (fmt_dur(mins), POLICY["grace_minutes"])
    days = math.ceil(mins / (24 * 60))
    pct = min(days * POLICY["penalty_percent_per_day"], POLICY["max_penalty_percent"])
    return (
        mins,
        pct,
        (
            "%s late = %.4f days -> ceil = %d day(s) x %d %% = %d %%, cap %d %% -> %d %%"
            % (
                fmt_dur(mins),
                mins / 1440,
                days,
                POLICY["penalty_percent_per_day"],
                days * POLICY["penalty_percent_per_day"],
                POLICY["max_penalty_percent"],
                pct,
            )
        ),
    )


def fmt_dur(mins):
    mins = int(round(mins))
    d, rem = divmod(mins, 1440)
    h, m = divmod(rem, 60)
    return f"{d} d {h} h {m} min"


def zinfo(name, when):
    zi = zipfile.ZipInfo(name, date_time=when.astimezone(TZ).timetuple()[:6])
    zi.compress_type = zipfile.ZIP_DEFLATED
    return zi


def write_zip(path, entries):
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, when, data in entries:
            z.writestr(zinfo(name, when), data)


def main():
    if (HERE / "classes").exists():
        shutil.rmtree(HERE / "classes")
    people = {r[1]: r for r in ROSTER + [OFF_ROSTER]}
    with open(HERE / "roster.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "name",
                "email",
                "lms_id",
                "canvas_user_id",
                "moodle_participant_id",
                "sis_user_id",
                "sis_login_id",
                "section",
                "extension_hours",
            ]
        )
        for first, last, email, cid, mid, sid, ext in ROSTER:
            w.writerow([f"{first} {last}", email, cid, cid, mid, sid, email.split("@")[0], "A", ext])
    (HERE / "policy.yaml").write_text(
        "# The late policy of this corpus, as issue 45 words it. measure.py puts it under the assignment's\n"
        "# `late:` key of a copy of config.yaml (see --policy to give the product's own spelling).\n"
        "due: '2026-11-20 23:59'\ntimezone: America/New_York\ngrace: 15 min\n"
        "penalty: {per: day, percent: 10, max_percent: 30, floor: 0}\n"
        "not_accepted_after: '2026-11-27 23:59'\nextensions: {roster_column: extension_hours}\n"
        "times: {canvas: times.csv, moodle: grading worksheet, gradescope: submission metadata}\n"
    )

    truth = {
        "policy": POLICY,
        "max_score": MAX,
        "arithmetic": (
            "lateness = submission time - (due + extension); <= 0: on time; <= 15 min: grace, 0 %; else days = "
            "ceil(lateness / 24 h), penalty = min(10 % x days, 30 %); after not_accepted_after (+ extension): not "
            "accepted, 0 points. final = raw x (1 - penalty/100), rounded to 2 decimals. Times in America/New_York "
            "(EST, UTC-5, in November 2026)."
        ),
        "classes": {},
    }

    def student_truth(last, lms, file_counts, others, listed_reason=None):
        first, _, email, cid, mid, sid, ext = people[last]
        when, nb = STORY[last]["subs"][-1]
        st = t(when)
        row = {
            "name": f"{first} {last}",
            "email": email,
            "lms_id": cid,
            "case": STORY[last]["case"],
            "file_counts": file_counts,
            "others_listed": others,
            "submitted": st.isoformat(),
        }
        if listed_reason:
            row.update({"graded_into_gradebook": False, "listed_reason": listed_reason, "final": None})
            return row
        mins, pct, why = lateness(st, ext)
        raw = RAW[nb]
        if pct is None:
            row.update(
                {
                    "raw": raw,
                    "late_minutes": round(mins),
                    "penalty_percent": None,
                    "final": 0,
                    "arithmetic": why + " -> final 0",
                    "graded_into_gradebook": True,
                    "listed_reason": "not accepted (late)",
                }
            )
        else:
            final = round(raw * (1 - pct / 100), 2)
            row.update(
                {
                    "raw": raw,
                    "late_minutes": round(mins),
                    "penalty_percent": pct,
                    "final": final,
                    "arithmetic": f"{why}; final = {raw} x (1 - {pct}/100) = {final}",
                    "graded_into_gradebook": True,
                }
            )
        return row

    # ---------------- Canvas ----------------
    # <lastfirst lower-case, no spaces>[_LATE]_<user id>_<attachment (submission file) id>_<file name as uploaded>
    # A file uploaded again under the same name gets Canvas's "-1" suffix before the extension.
    canvas_entries, ctimes, ctruth = [], [], {}
    att = 700100
    for first, last, email, cid, mid, sid, ext in ROSTER + [OFF_ROSTER]:
        when, nb = STORY[last]["subs"][-1]
        st = t(when)
        att += 7
        late = st > DUE + timedelta(hours=ext)  # Canvas marks late against the student's own due date
        uploaded = "attention_numpy-1.ipynb" if last == "Johnson" else "attention_numpy.ipynb"
        name = f"{last.lower()}{first.lower()}{'_LATE' if late else ''}_{cid}_{att}_{uploaded}"
        if last == "Knuth":
            name = "knuth.ipynb"
        if last == "Allen":
            name = f"{first} {last}_{mid}_assignsubmission_file_attention_numpy.ipynb"
        canvas_entries.append((name, st, NB[nb]))
        ctimes.append([cid, f"{first} {last}", st.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")])
        if last == "Knuth":
            ctruth[last] = student_truth(
                last, "canvas", name, [], "the file name does not follow Canvas's scheme (renamed)"
            )
        elif last == "Allen":
            ctruth[last] = student_truth(last, "canvas", name, [], "a Moodle file name inside a Canvas download")
        elif last == "Unknown":
            ctruth[last] = student_truth(last, "canvas", name, [], "user id 1999 is not on the roster")
        else:
            ctruth[last] = student_truth(last, "canvas", name, [])
            ctruth[last]["canvas_late_marker"] = late
    write_zip(HERE / "classes/canvas/submissions.zip", canvas_entries)
    with open(HERE / "classes/canvas/times.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["user_id", "name", "submitted_at"])
        w.writerows(ctimes)
    truth["classes"]["canvas"] = {
        "input": "classes/canvas/submissions.zip",
        "times": "classes/canvas/times.csv",
        "students": ctruth,
        "exit": 0,
    }

    # Canvas with times lacking a zone: bad input, nothing half-written.
    write_zip(HERE / "classes/canvas_naive/submissions.zip", canvas_entries)
    with open(HERE / "classes/canvas_naive/times.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["user_id", "name", "submitted_at"])
        for cid, nm, iso in ctimes:
            local = datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).astimezone(TZ)
            w.writerow([cid, nm, local.strftime("%Y-%m-%d %H:%M:%S")])  # no zone
    truth["classes"]["canvas_naive"] = {
        "input": "classes/canvas_naive/submissions.zip",
        "times": "classes/canvas_naive/times.csv",
        "students": {},
        "exit": "non-zero",
        "expect": "clock times without a zone are refused, listed with the reason; no gradebook half-written",
    }

    # ---------------- Moodle ----------------
    # flat:      <Full Name>_<participant id>_assignsubmission_file_<file name>
    # folders:   <Full Name>_<participant id>_assignsubmission_file/<file name>   (Moodle >= 3.1 "in folders")
    for layout in ("flat", "folders"):
        entries, mtruth, sheet = [], {}, []
        for first, last, email, cid, mid, sid, ext in ROSTER + [OFF_ROSTER]:
            subs = STORY[last]["subs"]
            prefix = f"{first} {last}_{mid}_assignsubmission_file"
            files = []
            if last == "Johnson":  # two files in the submission (the assignment allows 2): v1 older, v2 latest
                files = [
                    ("attention_numpy.ipynb", t(subs[0][0]), NB[subs[0][1]]),
                    ("attention_numpy_v2.ipynb", t(subs[1][0]), NB[subs[1][1]]),
                ]
            else:
                files = [("attention_numpy.ipynb", t(subs[-1][0]), NB[subs[-1][1]])]
            for fn, when, data in files:
                name = f"{prefix}_{fn}" if layout == "flat" else f"{prefix}/{fn}"
                if last == "Knuth":
                    name = "knuth.ipynb" if layout == "flat" else f"{prefix}/knuth.ipynb"
                if last == "Allen":
                    name = f"allenfrances_{cid}_700163_attention_numpy.ipynb"
                entries.append((name, when, data))
            counts = (
                (f"{prefix}_attention_numpy_v2.ipynb" if layout == "flat" else f"{prefix}/attention_numpy_v2.ipynb")
                if last == "Johnson"
                else entries[-1][0]
            )
            others = [entries[-2][0]] if last == "Johnson" else []
            if last == "Knuth" and layout == "flat":
                mtruth[last] = student_truth(
                    last, "moodle", "knuth.ipynb", [], "the file name does not follow Moodle's scheme (renamed)"
                )
            elif last == "Allen":
                mtruth[last] = student_truth(
                    last, "moodle", entries[-1][0], [], "a Canvas file name inside a Moodle download"
                )
            elif last == "Unknown":
                mtruth[last] = student_truth(last, "moodle", counts, [], "participant 5550199 is not on the roster")
            else:
                # in folders, a renamed file inside the student's own folder is still the student's
                mtruth[last] = student_truth(last, "moodle", counts, others)
            if last != "Unknown" or True:
                st = t(subs[-1][0])
                sheet.append(
                    [
                        f"Participant {mid}",
                        f"{first} {last}",
                        email,
                        "Submitted for grading",
                        "",
                        "11.00",
                        "Yes",
                        st.strftime("%A, %d %B %Y, %I:%M %p").replace(" 0", " "),
                        "",
                        "-",
                        "",
                    ]
                )
        zname = f"CS-ATTN-2026-attention_numpy-{'flat' if layout == 'flat' else 'folders'}.zip"
        write_zip(HERE / f"classes/moodle_{layout}/{zname}", entries)
        with open(HERE / f"classes/moodle_{layout}/grading_worksheet.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(
                [
                    "Identifier",
                    "Full name",
                    "Email address",
                    "Status",
                    "Grade",
                    "Maximum Grade",
                    "Grade can be changed",
                    "Last modified (submission)",
                    "Online text",
                    "Last modified (grade)",
                    "Feedback comments",
                ]
            )
            w.writerows(sheet)
        truth["classes"][f"moodle_{layout}"] = {
            "input": f"classes/moodle_{layout}/{zname}",
            "times": f"classes/moodle_{layout}/grading_worksheet.csv",
            "timezone_of_worksheet": "America/New_York (the Moodle site's zone; the worksheet prints local times)",
            "students": mtruth,
            "exit": 0,
        }

    # ---------------- Gradescope ----------------
    # assignment_<aid>_export/submission_<sid>/<files>, assignment_<aid>_export/submission_metadata.yml
    aid = 6120345
    root = f"assignment_{aid}_export/"
    entries, meta, gtruth = [], [], {}
    subid = 310000000
    for first, last, email, cid, mid, sid, ext in ROSTER + [OFF_ROSTER]:
        when, nb = STORY[last]["subs"][-1]
        st = t(when)
        subid += 1111
        folder = f"{root}submission_{subid}/"
        fn = "attention_numpy.ipynb"
        if last == "Knuth":
            fn = "knuth.ipynb"  # Gradescope keeps the student's own file name: identity is from metadata, so this is fine
        entries.append((folder + fn, st, NB[nb]))
        if last == "Allen":
            # a folder the metadata does not name (a Canvas-named file dropped into the export by hand)
            entries[-1] = (f"{root}allenfrances_{cid}_700163_attention_numpy.ipynb", st, NB[nb])
            gtruth[last] = student_truth(
                last,
                "gradescope",
                entries[-1][0],
                [],
                "a file outside any submission_<id> folder, not in submission_metadata.yml",
            )
            continue
        created = st.strftime("%Y-%m-%d %H:%M:%S.000000000 %z")
        created = created[:-2] + ":" + created[-2:]
        meta.append(
            f"submission_{subid}:\n  :submitters:\n  - :name: {first} {last}\n    :sid: '{sid}'\n"
            f"    :email: {email}\n  :created_at: {created}\n  :score: 0.0\n"
        )
        if last == "Unknown":
            gtruth[last] = student_truth(last, "gradescope", folder + fn, [], "sid 2026999 is not on the roster")
        else:
            gtruth[last] = student_truth(last, "gradescope", folder + fn, [])
    entries.append((root + "submission_metadata.yml", t("2026-11-28 12:00"), "".join(meta).encode()))
    write_zip(HERE / f"classes/gradescope/assignment_{aid}_export.zip", entries)
    truth["classes"]["gradescope"] = {
        "input": f"classes/gradescope/assignment_{aid}_export.zip",
        "times": "submission_metadata.yml :created_at:",
        "students": gtruth,
        "exit": 0,
    }
    (HERE / "truth.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n")
    n = sum(len(c["students"]) for c in truth["classes"].values())
    print(len(truth["classes"]), "classes,", n, "student rows")


if __name__ == "__main__":
    main()
