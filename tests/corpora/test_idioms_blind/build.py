"""Writes the three nbgrader source notebooks and the manifest of their submissions."""

import importlib.util
import json
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
COURSES = ["pyintro", "physnum", "datapd"]


def load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"course_{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def notebook(cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, spec in enumerate(cells):
        kind = spec[0]
        if kind == "md":
            cell = nbformat.v4.new_markdown_cell(spec[2])
        elif kind == "code":
            cell = nbformat.v4.new_code_cell(spec[2])
        elif kind == "sol":
            cell = nbformat.v4.new_code_cell(spec[2])
            cell.metadata["nbgrader"] = {
                "grade": False,
                "grade_id": spec[1],
                "locked": False,
                "schema_version": 3,
                "solution": True,
                "task": False,
            }
        else:
            _, gid, points, src = spec
            cell = nbformat.v4.new_code_cell(src)
            cell.metadata["nbgrader"] = {
                "grade": True,
                "grade_id": gid,
                "locked": True,
                "points": points,
                "schema_version": 3,
                "solution": False,
                "task": False,
            }
        cell["id"] = f"c{i:02d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def main(out):
    out = Path(out)
    manifest = {"courses": []}
    for name in COURSES:
        mod = load(name)
        folder = out / "source" / name
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook(mod.CELLS), str(folder / f"{name}.ipynb"))
        for sub in mod.SUBMISSIONS.values():
            for edit in sub.get("edits", []):
                assert "\\" not in edit["replace"], edit
        manifest["courses"].append(
            {
                "name": name,
                "tool": "nbgrader",
                "repo": "blind/testidioms",
                "source": f"source/{name}/{name}.ipynb",
                "commit": "0" * 40,
                "submissions": mod.SUBMISSIONS,
            }
        )
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
