"""The figures a notebook's cells draw, taken from the grader's own run of them (student side).

A plot question is graded by a person, who must see what the student's code draws, not what the
student saved: a notebook handed in without being run has no figure saved, and a pasted image is
not a plot the code made. The run's matplotlib draws into memory (the ``Agg`` backend); after the
cells that answer such a question, ``take`` renders each figure they drew as a PNG image and closes
it, as Jupyter's inline backend shows and closes the figures of a cell. A figure shown and closed
within the cell (``plt.show(); plt.close()``) is kept when it is shown (``install`` wraps
``pyplot.show``).

Bounded: at most ``MAX_FIGURES`` images, each drawn at ``DPI`` and no larger than ``MAX_PIXELS``
or than a captured string may be (``grader.capture.MAX_STR``, base64 included); what is left out
is counted. The images are plain data (base64 text); the page that shows them renders them as
``data:`` images, which run nothing.
"""

from __future__ import annotations

import base64
import contextlib
import io
import sys
from typing import Any

from grader.capture import MAX_STR

MAX_FIGURES = 6
DPI = 72
MAX_PIXELS = 1600 * 1600
_WRAPPED = "__grader_figures__"

_shown: dict[int, str] = {}  # a figure's number -> its image when ``plt.show()`` was last called
_left_out = [0]


def _pyplot() -> Any:
    return sys.modules.get("matplotlib.pyplot")


def install() -> None:
    """Keep each figure as it is when the student's code calls ``plt.show()`` (once matplotlib is
    imported; a no-op until then and after the first time)."""
    pyplot = _pyplot()
    if pyplot is None or getattr(pyplot.show, _WRAPPED, False):
        return
    original = pyplot.show

    def show(*args: Any, **kwargs: Any) -> Any:
        for number in list(pyplot.get_fignums()):
            image = _render(pyplot.figure(number))
            if image:
                _shown[number] = image
        return original(*args, **kwargs)

    setattr(show, _WRAPPED, True)
    pyplot.show = show


def _render(figure: Any) -> str:
    """The figure as a base64 PNG, or "" when it cannot be drawn within the bounds."""
    try:
        width, height = figure.get_size_inches()
        dpi = DPI
        if width * height * dpi * dpi > MAX_PIXELS:
            dpi = max(10, int((MAX_PIXELS / max(width * height, 1e-6)) ** 0.5))
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi)
    except Exception:  # noqa: BLE001 - a figure that cannot be drawn is left out, and counted
        return ""
    text = base64.b64encode(buffer.getvalue()).decode("ascii")
    return text if len(text) <= MAX_STR else ""


def take() -> list[str]:
    """The images of the figures drawn since the last call (shown, or still open), in the order
    they were made; the open ones are closed. The last item is the count of figures left out,
    as text (``"0"`` when none)."""
    pyplot = _pyplot()
    images = dict(_shown)
    _shown.clear()
    if pyplot is not None:
        for number in list(pyplot.get_fignums()):
            image = _render(pyplot.figure(number))
            if image:
                images[number] = image
            else:
                _left_out[0] += 1
            with contextlib.suppress(Exception):
                pyplot.close(number)
    ordered = [images[n] for n in sorted(images)]
    left_out = _left_out[0] + max(0, len(ordered) - MAX_FIGURES)
    _left_out[0] = 0
    return [*ordered[:MAX_FIGURES], str(left_out)]


def drop() -> None:
    """Close the figures drawn before the cells that answer a question: they are not its answer
    (Jupyter has shown and closed them with their own cells)."""
    _shown.clear()
    _left_out[0] = 0
    pyplot = _pyplot()
    if pyplot is not None:
        with contextlib.suppress(Exception):
            pyplot.close("all")
