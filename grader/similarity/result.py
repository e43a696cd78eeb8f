"""What a similarity run found, and the sentence every output of it carries."""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.course.model import Assignment
from grader.similarity.compare import Pair
from grader.similarity.documents import Document

NOTICE = (
    "A score is a lead for a person to look at, never proof: students who solve the same "
    "exercise correctly write similar code, and a copy may have been made with permission. "
    "Look at the code side by side before deciding anything. Nothing here changes a grade."
)
DEFAULT_THRESHOLD = 0.5  # pairs at or above this score form clusters and are marked in the page


@dataclass(frozen=True)
class Skipped:
    key: str
    origin: str
    reason: str


@dataclass
class Similarity:
    """What a run found."""

    assignment: Assignment
    documents: list[Document]
    pairs: list[Pair]
    clusters: list[list[str]]
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    threshold: float = DEFAULT_THRESHOLD
    notebooks: int = 0  # notebooks whose fragments were counted, earlier terms' included

    def document(self, key: str) -> Document:
        return next(d for d in self.documents if d.key == key)
