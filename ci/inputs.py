"""The one place where the commands' input files are read and their values checked.

Every file format a command reads -- traces and concurrent histories, corpus
entries, mutant shard reports, soak reports, parity records, explorer counts --
goes through `read_json`: a bounded read (a device file or a pipe reports no
size worth trusting), UTF-8, strict JSON that parses (no NaN, no infinity),
and text the program can encode again (JSON escapes can spell a lone
surrogate, which no UTF-8 text holds). No command reads a YAML file: a policy
profile travels as text inside a queue trace, and the crate parses it. What a
format holds is then checked by its owner's loader with the typed readers
below (`expect_int` with a range, `expect_str`, `expect_object` with exactly
its keys, ...), each naming the field it reads as a JSON path
(`steps[3].op.worker`).

Whatever goes wrong is one `InputError(path, field, problem)`, printed as
`PATH: FIELD: PROBLEM`; a command prints it as its one usage-error line and
exits 2. Bad input is never a verdict about the system under test.

Why hand-written rather than a typed-validation library: the checks are a few
small functions shared by every format, the formats' codecs are driven by the
model's own dataclass annotations (so a schema library would need a second
copy of every operation), and the comparison on a corpus trace
(docs/inputs.md) found no speed to gain.
"""

from __future__ import annotations

import json
import math
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ci.cli import file_kind, one_line

JSON_BYTES_MAX: Final[int] = 64 * 1024 * 1024
"""The default cap of an input file: far above any report or trace we write."""
U32_MAX: Final[int] = 2**32 - 1
U64_MAX: Final[int] = 2**64 - 1
USIZE_MAX: Final[int] = 2**64 - 1
"""Rust's integer types as the binding declares them (64-bit hosts)."""


class InputError(ValueError):
    """An input file is not what its command reads: which file, which field, why."""

    def __init__(self, path: str, field: str, problem: str) -> None:
        """Remember the file (may be empty), the field's JSON path and the problem."""
        self.path = path
        self.field = field
        self.problem = problem
        super().__init__(self._text())

    def _text(self) -> str:
        place = ": ".join(part for part in (self.path, self.field) if part)
        return one_line(f"{place}: {self.problem}" if place else self.problem)

    def in_file(self, path: str) -> InputError:
        """The same error, naming the file it came from."""
        return InputError(path, self.field, self.problem)


# ---- reading ---------------------------------------------------------------------


def read_text(path: Path, bytes_max: int = JSON_BYTES_MAX) -> str:
    """A file's UTF-8 text, read at most `bytes_max` bytes far."""
    name = str(path)
    try:  # os.stat opens nothing: a FIFO is refused here, not waited on
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise InputError(name, "", "is a folder, not a file")
        if not stat.S_ISREG(mode):
            raise InputError(name, "", f"{file_kind(mode)}, not a regular file")
        with path.open("rb") as stream:
            data = stream.read(bytes_max + 1)
    except FileNotFoundError:
        raise InputError(name, "", "no such file") from None
    except OSError as error:
        raise InputError(name, "", f"cannot read: {error.strerror}") from None
    if len(data) > bytes_max:
        raise InputError(name, "", f"more than the cap of {bytes_max} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            name, "", f"not UTF-8 (byte {error.start}: {data[error.start]:#04x})"
        ) from None


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 parses to infinity
        raise ValueError(f"{text} is beyond a finite number")
    return value


def parse_json(text: str, path: str = "") -> object:
    """Strict JSON (no NaN or Infinity) whose every string UTF-8 can hold."""
    try:
        document = json.loads(
            text, parse_constant=_reject_constant, parse_float=_finite_float
        )
    except json.JSONDecodeError as error:
        raise InputError(
            path,
            f"line {error.lineno} column {error.colno}",
            f"not valid JSON: {error.msg}",
        ) from None
    except (ValueError, RecursionError) as error:
        raise InputError(path, "", f"not valid JSON: {error}") from None
    _check_encodable(document, path)
    return document


def _check_encodable(document: object, path: str) -> None:
    """Refuse a string (value or key) no UTF-8 text holds: a lone surrogate."""
    try:
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        bad = error.object[error.start : error.end]
        where = _first_unencodable(document, "")
        raise InputError(
            path, where, f"text that is not valid Unicode (a lone surrogate): {bad!a}"
        ) from None


def _first_unencodable(value: object, where: str) -> str:
    """The JSON path of the first string UTF-8 cannot hold (only on the error path)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where
        return ""
    items: list[tuple[str, object]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if _first_unencodable(key, "x"):
                return where
            items.append((at(where, key), item))
    elif isinstance(value, list):
        items = [(at(where, index), item) for index, item in enumerate(value)]
    for member, item in items:
        found = _first_unencodable(item, member)
        if found:
            return found
    return ""


def read_json(path: Path, bytes_max: int = JSON_BYTES_MAX) -> object:
    """A JSON file: bounded, UTF-8, strict JSON, encodable text."""
    return parse_json(read_text(path, bytes_max), str(path))


# ---- typed fields -------------------------------------------------------------------


def at(where: str, key: str | int) -> str:
    """The JSON path of a member: `steps` + 3 is `steps[3]`, + `op` is `steps[3].op`."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def type_name(value: object) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def expect_object(
    value: object,
    where: str,
    required: frozenset[str],
    optional: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """`value` as an object with exactly the `required` keys (plus `optional`)."""
    if not isinstance(value, dict):
        raise InputError("", where, f"expected an object, got {type_name(value)}")
    missing = sorted(required - value.keys())
    if missing:
        raise InputError("", where, f"missing field {missing[0]!r}")
    unknown = sorted(value.keys() - required - optional)
    if unknown:
        known = ", ".join(sorted(required | optional))
        raise InputError("", where, f"unknown field {unknown[0]!r} (known: {known})")
    return value


def expect_int(
    value: object, where: str, low: int | None = None, high: int | None = None
) -> int:
    """`value` as an integer (a JSON boolean is not one), within `low..=high`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError("", where, f"expected an integer, got {type_name(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        shown = "..=".join("" if end is None else str(end) for end in (low, high))
        raise InputError("", where, f"{value} is outside {shown}")
    return value


def expect_number(value: object, where: str, low: float = -math.inf) -> float:
    """`value` as a finite number (an integer too) of at least `low`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError("", where, f"expected a number, got {type_name(value)}")
    if not math.isfinite(value) or value < low:
        raise InputError("", where, f"{value!r} is not a finite number >= {low}")
    return float(value)


def expect_str(value: object, where: str, length_max: int | None = None) -> str:
    """`value` as a string, of at most `length_max` characters."""
    if not isinstance(value, str):
        raise InputError("", where, f"expected a string, got {type_name(value)}")
    if length_max is not None and len(value) > length_max:
        raise InputError("", where, f"longer than {length_max} characters")
    return value


def expect_bool(value: object, where: str) -> bool:
    """`value` as a boolean."""
    if not isinstance(value, bool):
        raise InputError("", where, f"expected a boolean, got {type_name(value)}")
    return value


def expect_list(value: object, where: str, length_max: int | None = None) -> list[Any]:
    """`value` as an array, of at most `length_max` items."""
    if not isinstance(value, list):
        raise InputError("", where, f"expected an array, got {type_name(value)}")
    if length_max is not None and len(value) > length_max:
        raise InputError("", where, f"{len(value)} items exceed the cap {length_max}")
    return value


def expect_types(
    document: Mapping[str, Any],
    where: str,
    types: Mapping[str, type | tuple[type, ...]],
) -> None:
    """Each named member present with its JSON type (a boolean is no number)."""
    for key, expected in sorted(types.items()):
        if key not in document:
            raise InputError("", where, f"missing field {key!r}")
        value = document[key]
        allowed = expected if isinstance(expected, tuple) else (expected,)
        numeric = any(kind in (int, float) for kind in allowed)
        if (isinstance(value, bool) and bool not in allowed) or not isinstance(
            value, allowed
        ):
            wanted = " or ".join(sorted(kind.__name__ for kind in allowed))
            raise InputError(
                "", at(where, key), f"expected {wanted}, got {type_name(value)}"
            )
        if numeric and isinstance(value, float) and not math.isfinite(value):
            raise InputError("", at(where, key), f"{value!r} is not a finite number")


def expect_optional(value: object, where: str, read: Any) -> Any:
    """`None` for JSON null, else `read(value, where)`."""
    return None if value is None else read(value, where)
