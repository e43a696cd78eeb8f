"""A person grades what a program cannot: questions marked ``manual: true``.

store.GradeStore      grades in SQLite beside the outputs (OUT/grades.sqlite), rubrics shared
                      by a question's answers, every change its own transaction
merge.with_grades     the autograder's cards with a person's grades, for every output
csvio                 ``grader review NAME --export / --import grades.csv``
app                   ``grader review NAME``: the local review page (Flask, loopback, a token)
cells                 the answer, the whole notebook and the reference as inert HTML for its frames
lookalike             names shown in one Unicode form; mixed scripts and look-alike names marked
"""
