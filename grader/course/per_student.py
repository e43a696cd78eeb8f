"""``per_student:`` of an assignment in config.yaml: the given inputs each student gets drawn for
them (docs/per-student.md; drawn and signed by grader.judge.per_student)."""

from __future__ import annotations

import json

from grader.course.model import KEEP, PerStudentInput, PerStudentSpec, VariantSpec
from grader.course.reader import Reader, describe


def per_student_spec(r: Reader, given: tuple[str, ...], variants: VariantSpec) -> PerStudentSpec:
    """``per_student:``: the given inputs each student gets drawn for them, each an expression
    (``rng``, ``np``) or a list of values to pick one of (docs/per-student.md)."""
    section = r.reader("per_student")
    section.only("inputs")
    raw = section.get("inputs", None)
    if not isinstance(raw, dict) or not [v for v in raw.values() if not (isinstance(v, str) and v.strip() == KEEP)]:
        raise section.error(
            section.sub("inputs"),
            "must map at least one given input to an expression (rng, np) or a list of values to pick from",
        )
    rules = dict(variants.inputs)
    inputs = []
    for name, rule in raw.items():
        path = f"{section.sub('inputs')}.{name}"
        if str(name) not in given:
            raise section.error(path, f"is not a given input of this assignment: add {name} to `given`")
        if rule is not None and isinstance(rule, str) and rule.strip() == KEEP:
            continue  # the same for every student (said explicitly, as in ``variants.inputs``)
        if rules.get(str(name)) == KEEP:
            raise section.error(
                path,
                f"is kept as it is by `variants.inputs.{name}: keep`: a student's own input must be varied too "
                "(remove `keep`)",
            )
        if rule is None:  # random values of the solution's shape and dtype, as a variant draws them
            inputs.append(PerStudentInput(name=str(name), rule=""))
        elif isinstance(rule, str):
            try:
                compile(rule, "<config>", "eval")
            except SyntaxError as exc:
                raise section.error(path, f"is not a Python expression: {exc.msg}") from None
            inputs.append(PerStudentInput(name=str(name), rule=rule))
        elif isinstance(rule, list):
            if not all(isinstance(v, (str, int, float, bool)) for v in rule):
                raise section.error(path, "must list plain values (strings or numbers) to pick one of")
            if len({json.dumps(v) for v in rule}) < 2:
                raise section.error(path, "must list at least two different values: one value is the same for everyone")
            inputs.append(PerStudentInput(name=str(name), choices=tuple(rule)))
        else:
            raise section.error(
                path,
                "must be an expression (rng, np), a list of values to pick one of, null (random, the solution's "
                f"shape and dtype) or 'keep', got {describe(rule)}",
            )
    return PerStudentSpec(inputs=tuple(inputs))
