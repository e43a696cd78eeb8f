"""Frames on the channel from the student process: a 4-byte big-endian length, then one JSON object.

The student side writes them (``write_frame``); the grader side reads them with deadlines and a
size bound (``FrameReader``) and parses them strictly (``parse_frame``): anything else is a
``ProtocolError``, which the grader blames on the student process, never on itself.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import TYPE_CHECKING, Any, BinaryIO

from grader.errors import ProtocolError

if TYPE_CHECKING:  # the student process imports this module: nothing of the grader's side at run time
    from grader.run.job import Message

HEADER = struct.Struct(">I")
# What decoding a frame may build in the grader's process: every value the worker encodes is a
# JSON object, so objects and arrays bound the items of a frame. Counted on the raw bytes, before
# anything is decoded (26 MB of tiny items used to cost the grader 1.5 GB and many seconds);
# ``capture.MAX_ITEMS`` items to a container, a few containers to a value, leave room for any
# honest capture within ``capture_mb``.
MAX_FRAME_CONTAINERS = 300_000
READ_SIZE = 1 << 18  # bytes read from the pipe at a time: a frame over its bounds is refused within one read of them


_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)  # made once, as ``_DECODER`` below


def encode_frame(message: Message) -> bytes:
    """A message's frame body."""
    return _ENCODER.encode(message).encode("utf-8")


def items_in(body: bytes) -> int:
    """The objects and arrays a frame's body may hold, as the grader counts them (an upper bound:
    brackets inside strings count too)."""
    return body.count(b"{") + body.count(b"[")


def write_frame(stream: BinaryIO, message: Message) -> None:
    write_body(stream, encode_frame(message))


def write_body(stream: BinaryIO, body: bytes) -> None:
    """Send a frame whose body is encoded already (``encode_frame``)."""
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


def parse_frame(body: bytes, *, counted: bool = False) -> dict[str, Any]:
    """The message in one frame's body (``counted``: its items are counted already, by ``FrameReader``)."""
    if not counted:
        if items_in(body) > MAX_FRAME_CONTAINERS:
            raise ProtocolError(
                f"the student process sent a message of more than {MAX_FRAME_CONTAINERS:,} items, over the limit"
            )
    try:
        message = _DECODER.decode(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        raise ProtocolError("the student process sent a message that is not valid JSON") from None
    if not isinstance(message, dict) or not isinstance(message.get("ev"), str):
        raise ProtocolError("the student process sent a message of unknown form")
    return message


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)  # made once: json.loads with an option makes one per call


class FrameReader:
    """Reads length-prefixed frames from a pipe with deadlines and a bound on each frame's cost.

    A frame's size is checked as soon as its header is in, and the objects and arrays of its body
    are counted as its bytes arrive (``MAX_FRAME_CONTAINERS``): a frame over either bound is
    refused at once, before the rest of it is read or any of it is decoded, so an amplifying value
    costs the grader what it read up to the bound (a few milliseconds), never the whole frame."""

    def __init__(self, fd: int, max_frame: int, max_items: int = MAX_FRAME_CONTAINERS):
        self.fd, self.max_frame, self.max_items = fd, max_frame, max_items
        self.buf = bytearray()
        self.size: int | None = None  # the body size of the frame being read, once its header is in
        self.counted = 0  # bytes of that body whose objects and arrays are counted
        self.items = 0

    def next(self, deadline: float) -> dict[str, Any] | None:
        """The next message, None at end of stream; raises TimeoutError past the deadline and
        ProtocolError for a frame over its bounds (as soon as the bytes read show it)."""
        while True:
            message = self._take()
            if message is not None:
                return message
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, READ_SIZE)
            if not chunk:
                if self.buf:
                    raise ProtocolError("the student process ended in the middle of a message")
                return None
            self.buf += chunk

    def _take(self) -> dict[str, Any] | None:
        """The frame at the head of the buffer if it is all there; checks what has arrived of it."""
        if self.size is None:
            if len(self.buf) < HEADER.size:
                return None
            (size,) = HEADER.unpack_from(self.buf)
            if size > self.max_frame:
                raise ProtocolError(
                    f"the student process sent a message of {size:,} bytes, over the limit of {self.max_frame:,}"
                )
            self.size, self.counted, self.items = size, 0, 0
        end = HEADER.size + self.size
        upto = min(len(self.buf), end)
        start = HEADER.size + self.counted
        if upto > start:
            self.items += self.buf.count(b"{", start, upto) + self.buf.count(b"[", start, upto)
            self.counted = upto - HEADER.size
            if self.items > self.max_items:
                raise ProtocolError(
                    f"the student process sent a message of more than {self.max_items:,} items, over the limit"
                )
        if len(self.buf) < end:
            return None
        body = bytes(self.buf[HEADER.size : end])
        del self.buf[:end]
        self.size = None
        return parse_frame(body, counted=True)
