"""A frame's cost is bounded before it is parsed: its size and its items are checked as its bytes
arrive, so an amplifying value is refused from its first bytes, not after all of it is read."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from grader import capture
from grader.errors import ProtocolError
from grader.run import frames, worker


def feeding(chunks: list[bytes], hold: threading.Event | None = None) -> tuple[int, threading.Thread]:
    """A pipe's read end, and the thread writing these chunks to it (then, with ``hold``, keeping the
    pipe open until it is set)."""
    r, w = os.pipe()

    def write() -> None:
        try:
            for chunk in chunks:
                os.write(w, chunk)
            if hold is not None:
                hold.wait(30)
        except OSError:  # the reader gave up and closed its end
            pass
        finally:
            os.close(w)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return r, thread


def test_an_amplifying_frame_is_refused_before_the_rest_of_it_arrives():
    """The 26 MB frame of 20 lists of 100,000 ``None``: its header, then only the first 4 MB of its
    body, and the pipe held open. Waiting for the whole frame would time out; it is refused instead."""
    item = b'{"t":"none"},'
    size = 26_000_000
    hold = threading.Event()
    r, thread = feeding(
        [frames.HEADER.pack(size), b'{"ev":"capture","id":"x","value":{"t":"list","items":[', item * 300_000], hold
    )
    reader = frames.FrameReader(r, max_frame=size + 1)
    try:
        with pytest.raises(ProtocolError, match="more than 300,000 items, over the limit"):
            reader.next(time.monotonic() + 30)
    finally:
        hold.set()
        os.close(r)
        thread.join()


def test_a_frame_over_the_size_is_refused_from_its_header():
    hold = threading.Event()
    r, thread = feeding([frames.HEADER.pack(10_000_001)], hold)
    try:
        with pytest.raises(ProtocolError, match="10,000,001 bytes, over the limit of 10,000,000"):
            frames.FrameReader(r, max_frame=10_000_000).next(time.monotonic() + 30)
    finally:
        hold.set()
        os.close(r)
        thread.join()


def test_frames_split_anywhere_are_read_whole_and_counted_alone():
    """Frames that arrive in pieces cut anywhere, several to a read: each is counted on its own bytes
    (one just under the bound after one that is too: each frame's count starts again)."""
    under = {"ev": "capture", "id": "a", "value": {"t": "list", "items": [{"t": "none"}] * 9_900}}
    stream = b"".join(
        frames.HEADER.pack(len(b)) + b for b in (frames.encode_frame(m) for m in (under, under, {"ev": "done"}))
    )
    cuts = [stream[i : i + 7919] for i in range(0, len(stream), 7919)]
    r, thread = feeding(cuts)
    reader = frames.FrameReader(r, max_frame=len(stream), max_items=10_000)
    try:
        got = [reader.next(time.monotonic() + 30) for _ in range(4)]
    finally:
        os.close(r)
        thread.join()
    assert got == [under, under, {"ev": "done"}, None]


@pytest.mark.parametrize(
    "make",
    [
        lambda n: [[None] * n for _ in range(20)],
        lambda n: {str(i): [i, (i / 3, None)] for i in range(n)},
        lambda n: [[[[]]], "text", True, np.zeros(3)] * n,
    ],
    ids=["lists of None", "dict of numbers", "nested and mixed"],
)
@pytest.mark.parametrize("n", [10, 100, 1000])
def test_the_student_side_counts_a_value_as_the_grader_counts_its_frame(make, n):
    """What the worker walks before encoding (``items_over``) is what the frame would carry, so
    it refuses what the grader would (the bound scaled down: the real one is 300,000)."""
    value = make(n)
    encoded = frames.encode_frame({"ev": "capture", "id": "x", "value": capture.encode(value, budget=[1 << 30])})
    carried = frames.items_in(encoded) - 1  # the message's own object
    assert not worker.items_over(value, carried)
    assert worker.items_over(value, carried - 1)


def test_the_walk_over_a_huge_value_stops_at_the_bound():
    assert worker.items_over([[None] * 100_000 for _ in range(20)], frames.MAX_FRAME_CONTAINERS)
    assert not worker.items_over([[None] * 100_000], frames.MAX_FRAME_CONTAINERS)
