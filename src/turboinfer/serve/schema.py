"""Typed access to request JSON: every field's JSON type is checked before use, and a wrong one is an
InvalidInput naming the field's path (`inputs[0].name must be a string, got array`). Shared by every route."""

from __future__ import annotations

import json
from typing import Any

import orjson

from turboinfer.core.errors import InvalidInput

JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"),
              (dict, "object"), (type(None), "null"))  # fmt: skip
"""Python type → JSON type name, bool before int (bool is an int in Python)."""


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value."""
    for kind, name in JSON_TYPES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


def parse_object(raw: bytes, what: str) -> Fields:
    """A JSON object (as Fields) or InvalidInput saying what was wrong."""
    try:
        value = orjson.loads(raw)  # strict: no NaN literals, UTF-8 only, 64-bit integers, bounded nesting
    except orjson.JSONDecodeError as err:
        if non_finite_literal(raw):
            raise InvalidInput(f"{what} holds NaN or Infinity, which JSON does not allow") from None
        raise InvalidInput(f"{what} is not valid JSON: {err}") from None
    return Fields(value, what)


def non_finite_literal(raw: bytes) -> bool:
    """True when raw is JSON but for NaN/Infinity literals (as Python's json.dumps writes them)."""

    def found(literal: str) -> None:
        raise OverflowError(literal)

    try:
        json.loads(raw, parse_constant=found)
    except OverflowError:
        return True
    except (ValueError, RecursionError):
        return False
    return False


class Fields:
    """One JSON object; each accessor checks a field's type and returns it (None when optional and absent)."""

    def __init__(self, value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise InvalidInput(f"{path} must be an object, got {json_type(value)}")
        self.value: dict[str, Any] = value
        self.path = path

    def where(self, key: str) -> str:
        """The path of one field, for messages."""
        return key if self.path in ("request body", "request header") else f"{self.path}.{key}"

    def get(self, key: str, expected: str, required: bool) -> Any:
        """The field, checked to be of the JSON type `expected` (null counts as absent when optional)."""
        value = self.value.get(key)
        if value is None:
            if required:
                raise InvalidInput(f"{self.where(key)} is required")
            return None
        if json_type(value) != expected and not (expected == "number" and json_type(value) == "integer"):
            raise InvalidInput(f"{self.where(key)} must be {article(expected)}, got {json_type(value)}")
        return value

    def string(self, key: str, required: bool = False) -> str | None:
        """A string field."""
        return self.get(key, "string", required)

    def boolean(self, key: str, required: bool = False) -> bool | None:
        """A boolean field (true/false; not 0/1)."""
        return self.get(key, "boolean", required)

    def integer(self, key: str, required: bool = False, low: int | None = None, high: int | None = None) -> int | None:
        """An integer field (not a boolean), optionally within [low, high]."""
        value = self.get(key, "integer", required)
        if value is not None and ((low is not None and value < low) or (high is not None and value > high)):
            raise InvalidInput(f"{self.where(key)} must be between {low} and {high}, got {value}")
        return value

    def number(self, key: str, required: bool = False) -> float | None:
        """A number field (integer or fraction)."""
        value = self.get(key, "number", required)
        return None if value is None else float(value)

    def array(self, key: str, required: bool = False) -> list[Any] | None:
        """An array field."""
        return self.get(key, "array", required)

    def object(self, key: str, required: bool = False) -> Fields | None:
        """An object field, as Fields."""
        value = self.get(key, "object", required)
        return None if value is None else Fields(value, self.where(key))

    def objects(self, key: str, required: bool = False) -> list[Fields]:
        """An array field whose every element is an object."""
        return [Fields(v, f"{self.where(key)}[{i}]") for i, v in enumerate(self.array(key, required) or [])]

    def integers(self, key: str, required: bool = False) -> list[int] | None:
        """An array field of integers (no booleans, no fractions)."""
        values = self.array(key, required)
        if values is None:
            return None
        for i, value in enumerate(values):
            if json_type(value) != "integer":
                raise InvalidInput(f"{self.where(key)}[{i}] must be an integer, got {json_type(value)}")
        return values


def article(kind: str) -> str:
    """ "an integer", "a string"."""
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
