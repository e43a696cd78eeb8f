"""The figures of the grader's run, shown in a page of notebook cells: the review page's answer
frame and reference, and the feedback page.

The figures are PNG images (base64 text) that the grader's own run of the notebook drew after a
plot question's answer cells (``grader.run.figures``); here they become one cell of ``data:`` images
(which run nothing) under a line that says what they are, beside the cells as the student saved
them.
"""

from __future__ import annotations

from typing import Any

TAG = "grader-figure"  # the cell holding the figures of the grader's run
STYLE = f".celltag_{TAG} .jp-Cell-inputWrapper{{display:none}}"  # its empty input is not shown
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")  # raster images: shown, never run


def _saved_images(cells: list[dict[str, Any]]) -> int:
    return sum(
        1
        for c in cells
        if c.get("cell_type") == "code"
        for o in c.get("outputs") or []
        if isinstance(o, dict) and any(t in (o.get("data") or {}) for t in IMAGE_TYPES)
    )


def figure_cell(images: tuple[str, ...], text: str) -> list[dict[str, Any]]:
    """A heading and the images as one output cell (``data:`` images: they run nothing)."""
    heading = {"cell_type": "markdown", "metadata": {}, "source": text}
    if not images:
        return [heading]
    outputs = [{"output_type": "display_data", "metadata": {}, "data": {"image/png": image}} for image in images]
    shown: dict[str, Any] = {
        "cell_type": "code",
        "metadata": {"tags": [TAG]},  # its empty input is not shown (``STYLE``)
        "source": "",
        "outputs": outputs,
        "execution_count": None,
    }
    return [heading, shown]


def drawn_cells(picked: list[dict[str, Any]], figures: tuple[str, ...] | None, left_out: int) -> list[dict[str, Any]]:
    """What the answer's code draws in the grader's own run, after the cells as the student saved
    them, said so a person can tell the two apart; nothing where the answer has no code."""
    if figures is None or not any(c.get("cell_type") == "code" for c in picked):
        return []
    code = [
        "".join(c.get("source") or "") if isinstance(c.get("source"), list) else str(c.get("source") or "")
        for c in picked
        if c.get("cell_type") == "code"
    ]
    if all(text.strip() in ("", "?", "...") for text in code):
        return figure_cell((), "---\n**This answer's code is still the blank: it draws nothing.**")
    saved = _saved_images(picked)
    more = f" ({left_out} more left out: too many or too large)" if left_out else ""
    if not figures:
        text = "---\n**In the grader's run of this notebook, this code draws no figure.**" + (
            " The image saved above was not drawn by it." if saved else ""
        )
    elif not saved:
        text = (
            "---\n**The figure this code draws, from the grader's run of the notebook**"
            f"{more}. The notebook was saved without it (never run, or its outputs cleared)."
        )
    else:
        text = f"---\n**The figure this code draws, from the grader's run of the notebook**{more} (above: as saved)."
    return figure_cell(figures, text)
