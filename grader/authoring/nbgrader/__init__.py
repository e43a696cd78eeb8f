"""nbgrader, as an adapter: everything this grader knows of nbgrader lives in this package.

- ``importer``: ``grader import nbgrader``, the source notebooks as solutions, skeletons and a config
  section, nbgrader's rules lowered to generic settings of config.yaml as it writes them;
- ``autotest``: nbgrader's ``### AUTOTEST`` lines, expanded as ``nbgrader generate_assignment`` does;
- ``layout``: nbgrader's exchange layout of handed-in notebooks (``submitted/STUDENT/ASSIGNMENT/``),
  read for ``grader grade`` through ``grader.authoring.layouts``.
"""
