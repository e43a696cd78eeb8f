"""otter-grader, as an adapter: everything this grader knows of otter lives in this package.

- ``importer``: ``grader import otter``, a master notebook as a solution, a skeleton and a config
  section, otter's rules lowered to generic settings of config.yaml as it writes them;
- ``ok``: otter's OK-format test files; ``exception``: its exception-based (``@test_case``) ones.
"""
