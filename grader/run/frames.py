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


_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)  # made once, as ``_DECODER`` below


def write_frame(stream: BinaryIO, message: Message) -> None:
    body = _ENCODER.encode(message).encode("utf-8")
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


def parse_frame(body: bytes) -> dict[str, Any]:
    containers = body.count(b"{") + body.count(b"[")
    if containers > MAX_FRAME_CONTAINERS:
        raise ProtocolError(
            f"the student process sent a message of {containers:,} items, over the limit of {MAX_FRAME_CONTAINERS:,}"
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
    """Reads length-prefixed frames from a pipe with deadlines and a size bound."""

    def __init__(self, fd: int, max_frame: int):
        self.fd, self.max_frame, self.buf = fd, max_frame, b""

    def next(self, deadline: float) -> dict[str, Any] | None:
        """The next message, None at end of stream; raises TimeoutError past the deadline."""
        while True:
            if len(self.buf) >= 4:
                (size,) = HEADER.unpack(self.buf[:4])
                if size > self.max_frame:
                    raise ProtocolError(f"the student process sent a message of {size:,} bytes, over the limit")
                if len(self.buf) >= 4 + size:
                    body, self.buf = self.buf[4 : 4 + size], self.buf[4 + size :]
                    return parse_frame(body)
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                if self.buf:
                    raise ProtocolError("the student process ended in the middle of a message")
                return None
            self.buf += chunk
