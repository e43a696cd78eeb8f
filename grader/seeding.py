"""The one rule for seeding random generators, used by the student process, the forking server
and the grader's own runs of an instructor's tests.

Python's ``random``, NumPy's global generator and torch's CPU generator are seeded alike, and only
the modules already imported: seeding never imports torch. Nothing here touches CUDA (a forking
server that did could not fork children that use it; docs/DESIGN's GPU note).
"""

from __future__ import annotations

import random
import sys


def seed_everything(seed: int | None) -> None:
    """Seed every generator a check's computation may draw from with ``seed``; ``None`` gives them
    fresh entropy, as a new process would have."""
    random.seed(seed)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        # The CPU generator, the only one a run has: torch.manual_seed also queues a seed for CUDA,
        # formatting the whole stack (reading every frame's source line) each time.
        if seed is None:
            torch.default_generator.seed()
        else:
            torch.default_generator.manual_seed(seed)
