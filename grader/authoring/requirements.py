"""What a course declares it installs, read as pip reads it: a requirements.txt (pip's format or
conda's own, ``conda list --export`` and ``--explicit``), an environment.yml; the line that installs
a module the grading environment lacks; the versions a notebook ran with, said as facts when a
course's solution fails inside a library."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

_DISTRIBUTIONS = {
    "sklearn": "scikit-learn",
    "cv2": "opencv-python",
    "PIL": "pillow",
    "yaml": "pyyaml",
    "bs4": "beautifulsoup4",
    "skimage": "scikit-image",
    "Bio": "biopython",
    "dateutil": "python-dateutil",
}
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# conda's own spec, as ``conda list --export`` writes it (``seaborn=0.11.1=pyhd3eb1b0_0``), and the
# package file an ``@EXPLICIT`` list names (``.../seaborn-0.11.1-pyhd3eb1b0_0.tar.bz2``).
_CONDA_SPEC = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9._-]*)=([^=\s]+)(?:=([^=\s]+))?$")
_CONDA_FILE = re.compile(r"/([^/]+)-([^-/]+)-([^-/]+?)\.(?:tar\.bz2|conda)$")
_CONDA_NOARCH = re.compile(r"^(py_\d+|pyh\w*|pypi_0)$")  # pure Python (or from PyPI): any Python installs it
# Packages whose conda name is not pip's.
_CONDA_TO_PIP = {
    "matplotlib-base": "matplotlib",
    "pytorch": "torch",
    "py-opencv": "opencv-python",
    "msgpack-python": "msgpack",
    "pytables": "tables",
    "tensorflow-base": "tensorflow",
}
_SHELL_PLAIN = re.compile(r"^[A-Za-z0-9._=+:/@%,-]+$")


def conda_line(line: str) -> str | None:
    """A line of conda's own format as pip names it, or None when it is none. A conda package that
    is no Python package (its build names no Python: ``_libgcc_mutex=0.1=main``, ``blas=1.0=mkl``)
    gives ""; a pure-Python build (``pyh...``, ``py_0``) or one installed from PyPI (``pypi_0``)
    keeps its version (``seaborn==0.11.1``); a build compiled for one Python (``py38h91f5cce_0``)
    does not, since pip's wheel of that version may not exist for the grading Python (``scipy``)."""
    text = line.strip()
    m = _CONDA_FILE.search(text) if "://" in text or text.startswith("/") else _CONDA_SPEC.match(text)
    if m is None:
        return None
    name, version, build = m.group(1), m.group(2), m.group(3) or ""
    if build and "py" not in build:
        return ""
    pip_name = _CONDA_TO_PIP.get(name.lower(), name)
    if not build or _CONDA_NOARCH.match(build):
        return pip_name if "*" in version else f"{pip_name}=={version}"
    return pip_name


def _conda_format(lines: list[str]) -> bool:
    """Whether a requirements file is conda's (``conda list --export`` or ``--explicit``), not pip's."""
    specs = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]
    if any(ln.strip() == "@EXPLICIT" for ln in lines) or any("conda create" in ln for ln in lines[:5]):
        return True
    return bool(specs) and all(_CONDA_SPEC.match(ln) and "==" not in ln for ln in specs)


def declared_requirements(paths: list[Path]) -> list[str]:
    """The requirement lines a course declares: a requirements.txt (``-r`` and options left out), an
    environment.yml (its conda ``dependencies`` as pip would name them, and its ``pip:`` list).
    Each line once, in the order found; ``python`` itself and the grader's own are left out."""
    out: list[str] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if path.suffix in (".yml", ".yaml"):
            try:
                env = yaml.safe_load(text) or {}
            except yaml.YAMLError:
                continue
            deps = env.get("dependencies", []) if isinstance(env, dict) else []
            lines: list[str] = []
            for dep in deps if isinstance(deps, list) else []:
                if isinstance(dep, str):  # conda's ``numpy=1.26`` is pip's ``numpy==1.26``
                    spec = dep.split("::")[-1].strip()  # ``conda-forge::numpy``
                    converted = conda_line(spec) if "=" in spec and "==" not in spec else spec
                    if converted:
                        lines.append(converted)
                elif isinstance(dep, dict) and isinstance(dep.get("pip"), list):
                    lines.extend(str(x) for x in dep["pip"])
        else:
            lines = text.splitlines()
            if _conda_format(lines):  # a ``conda list --export`` (or ``--explicit``) saved as requirements.txt
                lines = [c for c in (conda_line(ln) for ln in lines if not ln.lstrip().startswith("#")) if c]
        for line in lines:
            line = line.split(" #")[0].strip()
            m = _REQUIREMENT.match(line)
            if not line or line.startswith(("#", "-")) or m is None:
                continue
            if m.group(1).lower() in ("python", "pip", "otter-grader", "nbgrader") or line in out:
                continue
            if any(_name(line) == _name(o) for o in out):  # conda's matplotlib and matplotlib-base: one
                continue
            out.append(line)
    return out


def _name(line: str) -> str:
    m = _REQUIREMENT.match(line)
    return m.group(1).lower().replace("_", "-") if m else ""


# Errors that say nothing of a library's version: the notebook's own names, its syntax, its files,
# a module that is not there at all (named with the line that installs it elsewhere).
_NOT_A_VERSION = frozenset(
    {"NameError", "UnboundLocalError", "SyntaxError", "IndentationError", "FileNotFoundError", "ModuleNotFoundError"}
)


def versions_ran(ename: str, sources: list[str], declared: list[str]) -> str:
    """For a message saying the solution failed with ``ename``: the versions installed here of the
    libraries the notebook imports, and what the course declares of them, as facts (a course
    written for pandas 2 fails under pandas 3 with an error from inside pandas): `` (it ran here
    with pandas 3.1.1, numpy 2.4.6; the course declares no versions of them)``. Empty for an error no
    library's version explains (``_NOT_A_VERSION``) or a notebook that imports no library."""
    from importlib import metadata

    from grader.notebook import imported_modules

    if not ename or ename in _NOT_A_VERSION:
        return ""
    tops = sorted({m.partition(".")[0] for m in imported_modules(sources)} - set(sys.stdlib_module_names))
    dists = metadata.packages_distributions()
    found: list[str] = []
    for top in tops:
        for dist in dists.get(top, [])[:1]:
            try:
                found.append(f"{top} {metadata.version(dist)}")
            except metadata.PackageNotFoundError:
                continue
    if not found:
        return ""
    names = {t.lower().replace("_", "-") for t in tops} | {_DISTRIBUTIONS.get(t, t).lower() for t in tops}
    asked = [
        line
        for line in declared
        if (m := _REQUIREMENT.match(line)) is not None and m.group(1).lower().replace("_", "-") in names
    ]
    none = "no versions of them" if len(found) > 1 else "no version of it"
    course = f"the course declares {', '.join(asked)}" if asked else f"the course declares {none}"
    return f" (it ran here with {', '.join(found)}; {course})"


def requirement(module: str, declared: list[str]) -> str:
    """What installs ``module``, as pip reads it: the course's own requirement for it where it declares
    one, else the distribution's name."""
    top = module.partition(".")[0]
    wanted = {top.lower().replace("_", "-"), _DISTRIBUTIONS.get(top, top).lower().replace("_", "-")}
    for line in declared:
        if _name(line) in wanted:
            return line
    return _DISTRIBUTIONS.get(top, top)


def install_line(module: str, declared: list[str], also: tuple[str, ...] = ()) -> str:
    """The line that installs ``module`` (and the modules ``also``): the course's own requirement for
    each where it declares one; quoted only where a shell would read a character of it."""
    specs = [requirement(m, declared) for m in (module, *also)]
    return "pip install " + " ".join(s if _SHELL_PLAIN.match(s) else f"'{s}'" for s in specs)
