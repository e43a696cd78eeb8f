"""Progress of a batch: a bar on a terminal, plain lines in CI logs."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

PLAIN_EVERY = 10.0  # seconds between progress lines when there is no terminal


class Progress:
    """A bar with an ETA on a terminal (tqdm); plain lines every few seconds otherwise (CI logs)."""

    def __init__(
        self, total: int, label: str, *, stream: Any = None, bar: bool | None = None, done_word: str = "graded"
    ):
        self.total, self.label, self.done, self.done_word = total, label, 0, done_word
        self.stream = stream if stream is not None else sys.stderr
        if bar is None:
            bar = self.stream.isatty() and not os.environ.get("CI")
        self.started = self.last = time.monotonic()
        self.bar = None
        if bar:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=label, unit="nb", file=self.stream, dynamic_ncols=True, smoothing=0.1)

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.monotonic()
        if self.done >= self.total or now - self.last >= PLAIN_EVERY:
            self.last = now
            print(self.line(now), file=self.stream, flush=True)

    def line(self, now: float) -> str:
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        text = f"{self.label}: {self.done}/{self.total} {self.done_word} ({100 * self.done / max(self.total, 1):.0f}%)"
        if self.done < self.total and rate > 0:
            text += f", {rate:.1f}/s, about {_duration((self.total - self.done) / rate)} left"
        else:
            text += f" in {_duration(elapsed)}"
        return text

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds + 0.5), 60)
    return f"{minutes} min {secs:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
