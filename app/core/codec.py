"""Turn the frozen dataclasses of ``app.core`` into JSON-able data and back.

Used to persist research events and settings-like records, so that a stored
run can be replayed exactly.

Reading is lenient by default (settings: unknown keys are ignored, so a
newer settings file still loads). ``strict=True`` is for data whose shape is
known exactly (a stored event of a schema version this code wrote): a key the
type does not have, a value of the wrong type or a missing value is an error
(``ValueError`` or ``TypeError``), never a silently wrong object.
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


def from_jsonable(tp: Any, data: Any, *, strict: bool = False) -> Any:
    """Rebuild a value of type ``tp`` from :func:`to_jsonable` output."""
    origin = get_origin(tp)
    if data is None:
        if strict and not _allows_none(tp, origin):
            raise TypeError(f"expected {_name(tp)}, got null")
        return None
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(tp) if arg is not type(None)]
        for option in options:
            try:
                return from_jsonable(option, data, strict=strict)
            except (TypeError, ValueError, KeyError):
                continue
        raise ValueError(f"{data!r} does not fit {tp}")
    if origin in (tuple, list) and strict and not isinstance(data, list):
        raise TypeError(f"expected a list for {_name(tp)}, got {type(data).__name__}")
    if origin is tuple:
        args = get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_jsonable(args[0], item, strict=strict) for item in data)
        return tuple(
            from_jsonable(arg, item, strict=strict) for arg, item in zip(args, data, strict=True)
        )
    if origin is list:
        (arg,) = get_args(tp)
        return [from_jsonable(arg, item, strict=strict) for item in data]
    if origin is dict:
        if strict and not isinstance(data, dict):
            raise TypeError(f"expected an object for {_name(tp)}, got {type(data).__name__}")
        _, value_type = get_args(tp)
        return {key: from_jsonable(value_type, value, strict=strict) for key, value in data.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_from(tp, data, strict)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tp(data)
    if tp is Any or tp is object:
        return data
    if strict and isinstance(data, bool) and tp is not bool:
        raise TypeError(f"expected {_name(tp)}, got a boolean")
    if tp is float and isinstance(data, int):
        return float(data)
    if isinstance(tp, type) and not isinstance(data, tp):
        raise TypeError(f"expected {tp.__name__}, got {type(data).__name__}")
    return data


def _dataclass_from(tp: type, data: Any, strict: bool) -> Any:
    if not isinstance(data, dict):
        raise TypeError(f"expected an object for {tp.__name__}")
    fields = [f for f in dataclasses.fields(tp) if f.init]
    if strict:
        unknown = sorted(set(data) - {f.name for f in fields})
        if unknown:
            raise ValueError(f"{tp.__name__} has no field {', '.join(map(repr, unknown))}")
        missing = [f.name for f in fields if f.name not in data and _required(f)]
        if missing:
            raise ValueError(f"{tp.__name__} lacks {', '.join(map(repr, missing))}")
    hints = _hints(tp)
    kwargs = {
        f.name: from_jsonable(hints[f.name], data[f.name], strict=strict)
        for f in fields
        if f.name in data
    }
    return tp(**kwargs)


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _allows_none(tp: Any, origin: Any) -> bool:
    if tp is Any or tp is object or tp is type(None):
        return True
    return origin in (Union, types.UnionType) and type(None) in get_args(tp)


def _name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else str(tp)
