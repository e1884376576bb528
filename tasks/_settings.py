"""Configs built from the command line's `--set key=value` strings."""

import dataclasses
import types
import typing


def from_settings(cls: type, settings: dict[str, str]):
    """Build the dataclass `cls` from `key=value` strings, converting each to its field's type.

    **Arguments:**

    - `cls`: a dataclass whose field types are `bool`, `int`, `float`, `str` or `X | None`.
    - `settings`: field name -> value as text; `none` gives `None` for an optional field.

    **Returns:** `cls(**converted)` (its own validation runs).

    **Raises:** `ValueError` naming an unknown field, or a value that does not convert.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {}
    for key, text in settings.items():
        if key not in fields:
            raise ValueError(f"unknown setting {key!r}; known: {', '.join(fields)}")
        values[key] = _parse(key, text, fields[key].type)
    return cls(**values)


def _parse(name: str, text: str, kind) -> object:
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        if text.lower() == "none":
            return None
        kind = next(k for k in typing.get_args(kind) if k is not type(None))
    try:
        if kind is bool:
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError
            return text.lower() in ("true", "1")
        return kind(text)
    except ValueError:
        raise ValueError(f"{name} must be a {kind.__name__}, got {text!r}") from None
