"""Option groups: a CLI verb takes a few small frozen dataclasses, one per concern, instead of dozens of parameters.

A dataclass decorated with `option_group` holds typer options as fields (`Annotated[type, typer.Option(...)]` with a
default). A command decorated with `grouped` may take such a dataclass as a parameter: typer sees its fields as
options (listed under the group's panel in --help, with the same flags as before), and the command receives one
instance built from them.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from copy import copy
from typing import Any, TypeVar

import typer
from typer.models import ParameterInfo

T = TypeVar("T")
PANEL = "__option_panel__"


def option_group(panel: str) -> Callable[[type[T]], type[T]]:
    """Make a class a frozen dataclass of options shown under `panel` in --help."""

    def decorate(cls: type[T]) -> type[T]:
        group = dataclasses.dataclass(frozen=True)(cls)
        setattr(group, PANEL, panel)
        return group

    return decorate


def _expanded(group: type, seen: set[str]) -> list[inspect.Parameter]:
    """The group's fields as keyword parameters, each option shown under the group's panel."""
    hints = typing.get_type_hints(group, include_extras=True)
    params = []
    for field in dataclasses.fields(group):
        if field.name in seen:
            raise TypeError(f"option {field.name!r} of {group.__name__} is already taken")
        seen.add(field.name)
        panel = getattr(group, PANEL)
        hint = hints[field.name]
        if typing.get_origin(hint) is typing.Annotated:
            base, *extras = typing.get_args(hint)
            hint = typing.Annotated[(base, *(_in_panel(e, panel) for e in extras))]
        else:
            hint = typing.Annotated[hint, typer.Option(rich_help_panel=panel)]
        default = inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default
        params.append(inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
    return params


def _in_panel(extra: object, panel: str) -> object:
    if isinstance(extra, ParameterInfo) and extra.rich_help_panel is None:
        extra = copy(extra)
        extra.rich_help_panel = panel
    return extra


def grouped(command: Callable[..., T]) -> Callable[..., T]:
    """A typer command whose option-group parameters are expanded into their fields for typer, and packed back."""
    hints = typing.get_type_hints(command, include_extras=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, list[str]]] = {}
    seen: set[str] = set()
    for param in inspect.signature(command).parameters.values():
        kind = hints.get(param.name)
        if isinstance(kind, type) and hasattr(kind, PANEL):
            fields = _expanded(kind, seen)
            groups[param.name] = (kind, [f.name for f in fields])
            params.extend(fields)
        else:
            seen.add(param.name)
            params.append(param.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[param.name]))

    @functools.wraps(command)
    def run(**values: Any) -> T:
        for name, (group, fields) in groups.items():
            values[name] = group(**{f: values.pop(f) for f in fields})
        return command(**values)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    del run.__wrapped__
    return run
