"""A submission that shows what a feedback page must render: math in markdown cells (inline, display
and an environment), a saved image, a long output, the feedback's own marks (carol forgot the
sqrt(d_k): the steps after it are carried forward from *Scaled scores*), and markup the student
typed that must stay text. Used by tests/test_pages.py and docs/screenshots/make.py."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
MATH = (
    r"The scaled scores are $S = \frac{Q K^\top}{\sqrt{d_k}}$, and each row of weights is a softmax:"
    "\n\n"
    r"$$\operatorname{softmax}(s)_j = \frac{e^{s_j}}{\sum_{k=1}^{n} e^{s_k}}$$"
    "\n\n"
    r"\begin{align} \mathrm{Attention}(Q, K, V) &= \operatorname{softmax}(S)\, V \end{align}"
    "\n\nMy notes: <script>alert('x')</script> <img src=x onerror=alert(1)> *I checked this by hand*."
)
LONG_LINES = 400


def png(width: int = 240, height: int = 120) -> bytes:
    """A small PNG (a colour gradient), written without any imaging library."""
    rows = b"".join(
        b"\x00" + bytes(v for x in range(width) for v in (x * 255 // width, y * 255 // height, 160))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def write(path: Path) -> Path:
    nb = nbformat.read(str(ROOT / "examples/attention_numpy/carol_no_sqrt.ipynb"), as_version=4)
    math = nbformat.v4.new_markdown_cell(MATH)
    picture = nbformat.v4.new_code_cell(
        "weights_plot = None  # the plot, drawn on my machine",
        outputs=[
            nbformat.v4.new_output(
                "display_data",
                data={"image/png": base64.b64encode(png()).decode(), "text/plain": "<Figure size 240x120>"},
            )
        ],
    )
    log = "\n".join(f"step {i:3d}: loss {1 / (i + 1):.6f}" for i in range(LONG_LINES)) + "\n"
    long_output = nbformat.v4.new_code_cell(
        "history = None  # a long training log", outputs=[nbformat.v4.new_output("stream", name="stdout", text=log)]
    )
    nb.cells[14:14] = [math]
    nb.cells.append(picture)
    nb.cells.append(long_output)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path
