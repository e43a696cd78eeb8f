"""Which notebooks of a class (and of earlier terms) are too alike, for a person to judge.

    find_similar(paths, assignment, past=...)  -> Similarity: the pairs, best first, and the clusters
    write(result, out)                         -> out/similarity.json and out/similarity.html

Modules: ``tokens`` (normalised tokens, k-grams, winnowing), ``documents`` (what of a notebook is
the student's own, and which question each statement belongs to), ``compare`` (the inverted index,
candidate pairs, scores, clusters), ``result`` (what a run found), ``run`` (the command), ``page`` (the HTML page).
A score is a lead, never proof; nothing here changes a grade.
"""

from grader.similarity.compare import Pair, QuestionMatch, Region
from grader.similarity.result import NOTICE, Similarity, Skipped
from grader.similarity.run import find_similar, to_data, write

__all__ = ["NOTICE", "Pair", "QuestionMatch", "Region", "Similarity", "Skipped", "find_similar", "to_data", "write"]
