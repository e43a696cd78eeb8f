"""YAML with a line number for every key path, read through accessors that name the path and line
of any problem: ``config.yaml:14: assignments.a.questions[2].points must be a number, got 'two'``."""

from __future__ import annotations

import re
from typing import Any

import yaml

from grader.errors import ConfigError


class Document:
    """Plain data from YAML plus the line of every key path, for error messages."""

    def __init__(self, file: str):
        self.file = file
        self.lines: dict[str, int] = {}
        self._scalars: yaml.SafeLoader | None = None  # one constructor for every scalar of the file

    def build(self, node: yaml.Node, path: str) -> Any:
        self.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for knode, vnode in node.value:
                key = knode.value if isinstance(knode, yaml.ScalarNode) else str(knode.value)
                sub = f"{path}.{key}" if path else str(key)
                if key in out:
                    raise ConfigError(self.file, sub, "is given twice", knode.start_mark.line + 1)
                self.lines[sub] = knode.start_mark.line + 1
                out[key] = self.build(vnode, sub)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(v, f"{path}[{i}]") for i, v in enumerate(node.value)]
        if self._scalars is None:
            self._scalars = yaml.SafeLoader("")
        return self._scalars.construct_object(node, deep=True)


class Reader:
    """Typed accessors over one mapping that report errors with key path and line."""

    def __init__(self, doc: Document, data: Any, path: str):
        self.doc, self.path = doc, path
        if not isinstance(data, dict):
            raise self.error(path, f"must be a mapping, got {describe(data)}")
        self.data = data

    def error(self, path: str, message: str) -> ConfigError:
        line = None
        probe = path
        while probe:
            if probe in self.doc.lines:
                line = self.doc.lines[probe]
                break
            up = re.sub(r"(\.[^.\[\]]+|\[\d+\])$", "", probe)
            if up == probe:
                break
            probe = up
        return ConfigError(self.doc.file, path, message, line)

    def sub(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def only(self, *allowed: str) -> None:
        for key in self.data:
            if key not in allowed:
                near = ", ".join(sorted(allowed))
                raise self.error(self.sub(str(key)), f"is not a known key here (known: {near})")

    def has(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def string(self, key: str, default: Any = ..., *, pattern: re.Pattern[str] | None = None) -> Any:
        if key not in self.data:
            if default is ...:
                raise self.error(self.sub(key), "is required")
            return default
        value = self.data[key]
        if not isinstance(value, str) or not value.strip():
            raise self.error(self.sub(key), f"must be a non-empty string, got {describe(value)}")
        if pattern and not pattern.match(value):
            raise self.error(self.sub(key), f"must be a simple identifier, got {value!r}")
        return value

    def number(self, key: str, default: Any = ..., *, minimum: float = 0.0) -> Any:
        if key not in self.data:
            if default is ...:
                raise self.error(self.sub(key), "is required")
            return default
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(self.sub(key), f"must be a number, got {describe(value)}")
        if value < minimum:
            raise self.error(self.sub(key), f"must be at least {minimum:g}, got {value!r}")
        return value

    def whole(self, key: str, default: Any = ..., *, minimum: int = 0) -> Any:
        value = self.number(key, default, minimum=minimum)
        if value is not None and value is not default and not isinstance(value, int):
            raise self.error(self.sub(key), f"must be a whole number, got {value!r}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.error(self.sub(key), f"must be true or false, got {describe(value)}")
        return value

    def str_list(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(self.sub(key), f"must be a list of strings, got {describe(value)}")
        return tuple(value)

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.data.get(key, default)
        if value not in choices:
            raise self.error(self.sub(key), f"must be one of {', '.join(choices)}, got {value!r}")
        return str(value)  # one of the choices, so a str already

    def reader(self, key: str) -> Reader:
        return Reader(self.doc, self.data.get(key, {}), self.sub(key))

    def items(self, key: str) -> list[tuple[str, Any]]:
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise self.error(self.sub(key), f"must be a list, got {describe(value)}")
        return [(f"{self.sub(key)}[{i}]", v) for i, v in enumerate(value)]


def describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    containers: dict[type, str] = {dict: "a mapping", list: "a list"}
    return containers.get(type(value), type(value).__name__)
