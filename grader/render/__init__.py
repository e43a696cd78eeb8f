"""Renderers: one small module per output format, each over a finished Scorecard.

No renderer reaches into grading logic; each turns a Scorecard (and, for feedback documents,
what students may see of it) into one file.
"""

from __future__ import annotations

from .gradebook import write_gradebook

__all__ = ["write_gradebook"]
