"""Grading a class at once: intake, parallel workers, resumable cached results.

    intake(paths, assignment)     -> Intake: one Submission per notebook, the student id taken from
                                     the layout, identical files found by content
    ResultStore(course, key)      -> one JSON file per submission content, written as soon as it is
                                     graded: an interrupted batch resumes, an unchanged one is not re-run
    grade_all(grader, ...)        -> a Scorecard per submission, --jobs N at a time, in intake order

Modules: ``intake`` (layouts), ``store`` (the results cache), ``progress``, ``parallel``
(``grade_all``).

The layouts a batch can come in (a folder of notebooks, a folder per student, an
exchange layout, a zip of any of them) are described in ``grader.batch.intake``.
"""

from grader.batch.intake import Intake, Submission, collect, intake, output_names
from grader.batch.lateness import apply as apply_late
from grader.batch.parallel import Cards, Graded, Outcome, default_jobs, grade_all, summary_lines
from grader.batch.progress import Progress
from grader.batch.store import ResultStore, fingerprint

__all__ = [
    "Cards",
    "Graded",
    "Intake",
    "Outcome",
    "Progress",
    "ResultStore",
    "Submission",
    "apply_late",
    "collect",
    "default_jobs",
    "fingerprint",
    "grade_all",
    "intake",
    "output_names",
    "summary_lines",
]
