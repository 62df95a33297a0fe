"""Turn the frozen dataclasses of ``app.core`` into JSON-able data and back.

Used to persist research events and settings-like records, so that a stored
run can be replayed exactly.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from enum import Enum
from functools import cache
from typing import Any, TypeVar, Union, get_args, get_origin

T = TypeVar("T")


def to_jsonable(obj: Any) -> Any:
    """Dataclasses become dicts, enums their values, tuples lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(item) for item in obj]
    if isinstance(obj, dict):
        return {str(key): to_jsonable(value) for key, value in obj.items()}
    return obj


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_jsonable(tp: Any, data: Any) -> Any:
    """Rebuild a value of type ``tp`` from :func:`to_jsonable` output."""
    if data is None:
        return None
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(tp) if arg is not type(None)]
        for option in options:
            try:
                return from_jsonable(option, data)
            except (TypeError, ValueError, KeyError):
                continue
        raise ValueError(f"{data!r} does not fit {tp}")
    if origin is tuple:
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_jsonable(args[0], item) for item in data)
        return tuple(from_jsonable(arg, item) for arg, item in zip(args, data, strict=True))
    if origin is list:
        (arg,) = get_args(tp)
        return [from_jsonable(arg, item) for item in data]
    if origin is dict:
        _, value_type = get_args(tp)
        return {key: from_jsonable(value_type, value) for key, value in data.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise TypeError(f"expected an object for {tp.__name__}")
        hints = _hints(tp)
        kwargs = {
            f.name: from_jsonable(hints[f.name], data[f.name])
            for f in dataclasses.fields(tp)
            if f.name in data and f.init
        }
        return tp(**kwargs)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tp(data)
    if tp is float and isinstance(data, int):
        return float(data)
    if tp is Any or tp is object:
        return data
    if isinstance(tp, type) and not isinstance(data, tp):
        raise TypeError(f"expected {tp.__name__}, got {type(data).__name__}")
    return data
