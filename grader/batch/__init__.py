"""Grading a class at once: intake, parallel workers, resumable cached results.

    intake(paths, assignment)     -> Intake: one Submission per notebook, the student id taken from
                                     the layout, identical files found by content
    ResultStore(course, key)      -> one JSON file per submission content, written as soon as it is
                                     graded: an interrupted batch resumes, an unchanged one is not re-run
    grade_all(grader, ...)        -> a Scorecard per submission, --jobs N at a time, in intake order

Modules: ``intake`` (layouts), ``store`` (the results cache), ``progress``, ``parallel``
(``grade_all``).

Layouts understood (each path given may be any of them, or a single file):

    class/alice.ipynb                          a folder of notebooks: the student is the file name
    class/alice/<anything>.ipynb               a folder per student: the student is the folder name
    course/submitted/alice/<assignment>/*.ipynb  nbgrader's exchange layout
    class.zip                                  any of the above, inside a zip archive

A subfolder named after the assignment is a folder of notebooks, not a student. When a student's
folder holds several notebooks, the one named after the assignment is graded if there is one;
otherwise each is graded as its own row. A student folder with no notebook at all has its files
graded anyway, so the student gets a scorecard saying why nothing could be read.
"""


from grader.batch.intake import Intake, Submission, collect, intake, output_names
from grader.batch.parallel import Outcome, default_jobs, grade_all, summary_lines
from grader.batch.progress import Progress
from grader.batch.store import ResultStore, card_from_data, card_to_data, fingerprint

__all__ = ["Intake", "Outcome", "Progress", "ResultStore", "Submission", "card_from_data", "card_to_data",
           "collect", "default_jobs", "fingerprint", "grade_all", "intake", "output_names", "summary_lines"]
