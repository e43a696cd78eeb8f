"""Isolation of the student process: resource limits, a scrubbed environment, a private directory.

``environment()`` builds the environment a student process starts with (nothing from the grader's
own environment but a short allow-list, so CI tokens never reach student code). ``enter(job)`` runs
first thing in the student process and applies the limits the job carries.
"""

from __future__ import annotations

import os
import resource
import sys

ALLOWED_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def environment(workdir: str) -> dict[str, str]:
    """The whole environment of a student process."""
    env = {k: os.environ[k] for k in ALLOWED_ENV if k in os.environ}
    env.update(
        {
            "HOME": workdir,
            "TMPDIR": workdir,
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": workdir,
            "IPYTHONDIR": os.path.join(workdir, ".ipython"),
            "CUDA_VISIBLE_DEVICES": "",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
        }
    )
    return env


def _set(limit: int, value: int) -> None:
    try:
        soft, hard = resource.getrlimit(limit)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(limit, (value, value if hard == resource.RLIM_INFINITY else hard))
    except (ValueError, OSError):
        pass


def enter(job: dict) -> None:
    """Apply the job's limits to this process (and what it starts)."""
    limits = job["limits"]
    mb = 1024 * 1024
    _set(resource.RLIMIT_CPU, int(limits["cpu_time"]))
    _set(resource.RLIMIT_AS, int(limits["memory_mb"]) * mb)
    _set(resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * mb)
    _set(resource.RLIMIT_NOFILE, int(limits["open_files"]))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
