"""Operations as JSON, driven by their dataclass field annotations.

An operation is written `{"op": <class name>, <field>: <value>, ...}`. Each
field's codec follows from its annotation: integers, strings and booleans as
themselves; a float as a number, or `"inf"`, `"-inf"`, `"nan"` (JSON has no
such numbers); `X | None` as null or X; a `frozenset` as a sorted array;
a `Literal` as one of its values; any other type through the codec a subject
registers for it (a `Target`; a `Dispatch` through `dataclass_codec`, an
object of its fields). A new operation therefore needs no change here unless
it introduces a new field type.

An integer field may carry bounds, by field name (`ranges`): what the binding
can represent (a worker is a `u64`, a rank a `u32`) where the model does not
refuse the value itself. A trace outside them is refused when it is read
(`InputError`, exit 2) -- never replayed into a divergence that only says the
binding could not convert the value.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, fields
from types import NoneType, UnionType
from typing import Any, Final, Literal, get_args, get_origin, get_type_hints

from ci.inputs import (
    expect_bool,
    expect_int,
    expect_list,
    expect_object,
    expect_optional,
    expect_str,
    type_name,
)
from ci.replay.envelope import TraceError

Decoder = Callable[[object, str], Any]
Encoder = Callable[[Any], Any]
Codec = tuple[Encoder, Decoder]
Bounds = tuple[int, int]
"""An integer field's inclusive range."""
NO_RANGES: Final[Mapping[str, Bounds]] = {}

NON_FINITE: Final[dict[str, float]] = {
    "inf": math.inf,
    "-inf": -math.inf,
    "nan": math.nan,
}


def _same(value: Any) -> Any:
    return value


def encode_float(value: float) -> float | str:
    """A finite float as itself; infinities and NaN by name."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def decode_float(value: object, where: str) -> float:
    """A JSON number (an integer too), or `"inf"`, `"-inf"`, `"nan"`."""
    if isinstance(value, str) and value in NON_FINITE:
        return NON_FINITE[value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TraceError(
            where, f"expected a number or 'inf', '-inf', 'nan', got {type_name(value)}"
        )
    return float(value)


def _collection_codec(encode: Encoder, decode: Decoder, kind: type) -> Codec:
    """A frozenset (written sorted) or a tuple (in order) as a JSON array."""

    def encode_items(value: Any) -> list[Any]:
        return [
            encode(item) for item in (sorted(value) if kind is frozenset else value)
        ]

    def decode_items(value: object, where: str) -> Any:
        items = expect_list(value, where)
        return kind(decode(item, f"{where}[{i}]") for i, item in enumerate(items))

    return encode_items, decode_items


def _literal_decoder(allowed: tuple[object, ...]) -> Decoder:
    def decode(value: object, where: str) -> object:
        if value not in allowed:
            known = ", ".join(repr(item) for item in allowed)
            raise TraceError(where, f"expected one of {known}, got {value!r}")
        return value

    return decode


def _bounded_int(bounds: Bounds | None) -> Decoder:
    if bounds is None:
        return expect_int
    low, high = bounds

    def decode(value: object, where: str) -> int:
        return expect_int(value, where, low, high)

    return decode


def dataclass_codec(
    cls: type,
    registered: Mapping[type, Codec],
    ranges: Mapping[str, Bounds] = NO_RANGES,
) -> Codec:
    """A frozen dataclass as an object with one key per field, strictly."""
    hints = get_type_hints(cls)
    spec = [
        (f.name, *codec_for(hints[f.name], registered, ranges.get(f.name)))
        for f in fields(cls)
    ]
    keys = frozenset(name for name, _, _ in spec)

    def encode(value: Any) -> dict[str, Any]:
        return {name: write(getattr(value, name)) for name, write, _ in spec}

    def decode(value: object, where: str) -> Any:
        raw = expect_object(value, where, keys)
        return cls(
            **{name: read(raw[name], f"{where}.{name}") for name, _, read in spec}
        )

    return encode, decode


def codec_for(
    annotation: object, registered: Mapping[type, Codec], bounds: Bounds | None = None
) -> Codec:
    """How a field of this annotation is written and read (ints within `bounds`)."""
    basic: dict[object, Codec] = {
        int: (_same, _bounded_int(bounds)),
        str: (_same, expect_str),
        bool: (_same, expect_bool),
        float: (encode_float, decode_float),
    }
    if annotation in basic:
        return basic[annotation]
    if isinstance(annotation, type) and annotation in registered:
        return registered[annotation]
    if get_origin(annotation) is Literal:
        return _same, _literal_decoder(get_args(annotation))
    if get_origin(annotation) is frozenset:
        (member,) = get_args(annotation)
        return _collection_codec(*codec_for(member, registered, bounds), frozenset)
    if get_origin(annotation) is tuple and get_args(annotation)[1:] == (...,):
        member = get_args(annotation)[0]
        return _collection_codec(*codec_for(member, registered, bounds), tuple)
    if get_origin(annotation) in (UnionType, typing.Union):
        members = [arg for arg in get_args(annotation) if arg is not NoneType]
        if len(members) == 1 and len(get_args(annotation)) == 2:
            encode, decode = codec_for(members[0], registered, bounds)

            def encode_optional(value: Any) -> Any:
                return None if value is None else encode(value)

            def decode_optional(value: object, where: str) -> Any:
                return expect_optional(value, where, decode)

            return encode_optional, decode_optional
    raise TypeError(f"trace fields of type {annotation!r} have no codec")


class OpCodec:
    """Encodes and decodes one subject's operations by class name."""

    def __init__(
        self,
        op_types: Sequence[type],
        registered: Mapping[type, Codec],
        ranges: Mapping[str, Bounds] = NO_RANGES,
        sparse: frozenset[str] = frozenset(),
    ) -> None:
        """Build each operation's field codecs (once, at import).

        `ranges` bounds integer fields by name, in every operation. A `sparse`
        field is written only when it differs from its default, and read as its
        default when absent (traces written before it existed stay valid).
        """
        self.sparse = sparse
        self.defaults: dict[str, dict[str, object]] = {
            op.__name__: {
                field.name: field.default
                for field in fields(op)
                if field.name in sparse and field.default is not MISSING
            }
            for op in op_types
        }
        self.by_name: dict[str, type] = {op.__name__: op for op in op_types}
        self.fields: dict[str, tuple[tuple[str, Encoder, Decoder], ...]] = {
            name: tuple(
                (
                    field.name,
                    *codec_for(
                        get_type_hints(op)[field.name],
                        registered,
                        ranges.get(field.name),
                    ),
                )
                for field in fields(op)
            )
            for name, op in sorted(self.by_name.items())
        }

    def encode(self, op: Any) -> dict[str, Any]:
        """`{"op": <class name>, <field>: <value>, ...}`."""
        name = type(op).__name__
        defaults = self.defaults[name]
        return {"op": name} | {
            field: encode(getattr(op, field))
            for field, encode, _ in self.fields[name]
            if field not in defaults or getattr(op, field) != defaults[field]
        }

    def decode(self, value: object, where: str) -> Any:
        """An operation, its fields checked by type."""
        if not isinstance(value, dict) or "op" not in value:
            raise TraceError(where, "expected an operation object with an 'op' field")
        name = value["op"]
        if not isinstance(name, str) or name not in self.by_name:
            known = ", ".join(sorted(self.by_name))
            raise TraceError(where, f"unknown operation {name!r} (known: {known})")
        spec = self.fields[name]
        defaults = self.defaults[name]
        required = frozenset({"op"} | {f for f, _, _ in spec} - defaults.keys())
        raw = expect_object(value, where, required, frozenset(defaults))
        arguments = {
            field: decode(raw[field], f"{where}.{field}")
            for field, _, decode in spec
            if field in raw
        }
        return self.by_name[name](**arguments)


def outcome_codec(
    encode_value: Encoder, decode_value: Decoder, outcome: Callable[..., Any]
) -> Codec:
    """A step's outcome as `{"value": ..., "error": kind or null, "message": text}`.

    `outcome(value=, error=, message=)` builds the subject's outcome type; an
    outcome with an error carries a null value.
    """

    def encode(result: Any) -> dict[str, Any]:
        return {
            "value": encode_value(result.value),
            "error": result.error,
            "message": result.message,
        }

    def decode(value: object, where: str) -> Any:
        raw = expect_object(value, where, frozenset({"value", "error", "message"}))
        error = expect_optional(raw["error"], f"{where}.error", expect_str)
        decoded = decode_value(raw["value"], f"{where}.value")
        if error is not None and decoded is not None:
            raise TraceError(where, "an outcome with an error has a null value")
        message = expect_str(raw["message"], f"{where}.message")
        return outcome(value=decoded, error=error, message=message)

    return encode, decode
