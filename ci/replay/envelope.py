"""Counterexample traces: JSON files a developer can read, diff and replay.

A trace is one program -- a configuration and an ordered list of operations --
together with what the reference model answered at every step. It is written
by the artifact writer when a machine fails, kept in `ci/replay/corpus/` as a
regression test, and replayed by `python -m ci.replay`. Nothing in it depends
on Hypothesis: a trace replays through `stateful.harness` alone.

Schema version 1, common to every subject (the envelope):

    format          "dynamo-verify-trace"
    schema_version  1
    subject         which component the program drives: a subject's name in the
                    registry `ci.subjects` ("affinity", "queue", "replica");
                    "affinity-history" for a concurrent history of one table
                    (`ci/replay/history.py`: its steps are the calls threads
                    made, with their instants, not one program)
    suite_version   this suite's package version
    crate_version   `impl.adapter.CRATE_VERSION`, or "unknown" without the binding
    description     what the program shows, in English
    steps           [{"index": 1, "op": {...}, "expected": ..., "model": ...}, ...]

plus the subject's own keys (for "affinity": `config` and `session_pool`; for
"queue": `profile`), decoded by the subject's trace kind (`ci/replay/affinity.py`,
`ci/replay/queue.py`, `ci/replay/replica.py`), the only places that know a
subject's operations, values and model projection. A step may carry an
optional `comment`. Affinity traces written before the queue kind existed are
schema version 1 too and read unchanged.

Files are written with sorted keys, a two-space indent, UTF-8 and a final
newline, so that two recordings of one program are byte-identical and a
review diff shows only what changed.

The loader is strict: a malformed or hand-edited file raises `TraceError`
with one line naming the file, the place (`step 3`, `config`) and the problem.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

FORMAT: Final[str] = "dynamo-verify-trace"
SCHEMA_VERSION: Final[int] = 1
PACKAGE: Final[str] = "dynamo-affinity-verify"
TRACE_FILE: Final[str] = "trace.json"
"""The name of the trace inside an artifact folder."""

ENVELOPE_KEYS: Final[frozenset[str]] = frozenset(
    {
        "format",
        "schema_version",
        "subject",
        "suite_version",
        "crate_version",
        "description",
        "steps",
    }
)
STEP_KEYS: Final[frozenset[str]] = frozenset({"index", "op", "expected", "model"})
STEP_OPTIONAL_KEYS: Final[frozenset[str]] = frozenset({"comment"})
STEPS_MAX: Final[int] = 100_000
"""No trace holds more steps; a longer one is refused, never truncated."""
TRACE_BYTES_MAX: Final[int] = 64 * 1024 * 1024


class TraceError(ValueError):
    """A trace file is malformed; the message names the place and the problem."""

    def __init__(self, where: str, problem: str, source: str = "") -> None:
        """Remember where (e.g. `step 3`), what went wrong, and in which file."""
        self.where = where
        self.problem = problem
        self.source = source
        super().__init__(self._text())

    def _text(self) -> str:
        place = ": ".join(part for part in (self.source, self.where) if part)
        return f"{place}: {self.problem}" if place else self.problem

    def in_file(self, source: str) -> TraceError:
        """The same error, naming the file it came from."""
        return TraceError(self.where, self.problem, source)


@dataclass(frozen=True)
class Header:
    """The envelope fields every trace carries, whatever its subject."""

    subject: str
    description: str
    suite_version: str
    crate_version: str


def suite_version() -> str:
    """The suite's installed version, or "unknown" when run from a bare tree."""
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def crate_version() -> str:
    """The bound crate's version, or "unknown" when the extension is not built."""
    try:
        adapter = importlib.import_module("impl.adapter")
    except ImportError:
        return "unknown"
    return str(adapter.CRATE_VERSION)


# ---- reading JSON with a place attached to every error ----------------------


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
        raise TraceError(where, f"expected an object, got {type_name(value)}")
    missing = sorted(required - value.keys())
    if missing:
        raise TraceError(where, f"missing field {missing[0]!r}")
    unknown = sorted(value.keys() - required - optional)
    if unknown:
        known = ", ".join(sorted(required | optional))
        raise TraceError(where, f"unknown field {unknown[0]!r} (known: {known})")
    return value


def expect_int(value: object, where: str) -> int:
    """`value` as an integer (a JSON boolean is not one)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceError(where, f"expected an integer, got {type_name(value)}")
    return value


def expect_str(value: object, where: str) -> str:
    """`value` as a string."""
    if not isinstance(value, str):
        raise TraceError(where, f"expected a string, got {type_name(value)}")
    return value


def expect_bool(value: object, where: str) -> bool:
    """`value` as a boolean."""
    if not isinstance(value, bool):
        raise TraceError(where, f"expected a boolean, got {type_name(value)}")
    return value


def expect_list(value: object, where: str) -> list[Any]:
    """`value` as an array."""
    if not isinstance(value, list):
        raise TraceError(where, f"expected an array, got {type_name(value)}")
    return value


def expect_optional(value: object, where: str, read: Any) -> Any:
    """`None` for JSON null, else `read(value, where)`."""
    return None if value is None else read(value, where)


# ---- the envelope ------------------------------------------------------------


def read_header(document: object, subject_keys: frozenset[str]) -> Header:
    """Check the envelope (format, schema version, subject, keys) and read it."""
    top = expect_object(document, "trace", ENVELOPE_KEYS | subject_keys)
    trace_format = expect_str(top["format"], "format")
    if trace_format != FORMAT:
        raise TraceError("format", f"expected {FORMAT!r}, got {trace_format!r}")
    version = expect_int(top["schema_version"], "schema_version")
    if version != SCHEMA_VERSION:
        raise TraceError(
            "schema_version",
            f"unsupported schema version {version} (this suite reads {SCHEMA_VERSION})",
        )
    return Header(
        subject=expect_str(top["subject"], "subject"),
        description=expect_str(top["description"], "description"),
        suite_version=expect_str(top["suite_version"], "suite_version"),
        crate_version=expect_str(top["crate_version"], "crate_version"),
    )


def write_header(header: Header) -> dict[str, Any]:
    """The envelope fields as JSON (steps and subject keys are added by the kind)."""
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "subject": header.subject,
        "description": header.description,
        "suite_version": header.suite_version,
        "crate_version": header.crate_version,
    }


def read_steps(
    document: dict[str, Any],
    keys: frozenset[str] = STEP_KEYS,
    optional_keys: frozenset[str] = STEP_OPTIONAL_KEYS,
) -> list[dict[str, Any]]:
    """The step objects, checked for shape and numbering 1, 2, 3, ...

    A subject whose steps are not one program's (a concurrent history's
    calls) names its own step keys.
    """
    raw = expect_list(document["steps"], "steps")
    if len(raw) > STEPS_MAX:
        raise TraceError("steps", f"{len(raw)} steps exceed the cap of {STEPS_MAX}")
    steps = []
    for position, item in enumerate(raw, start=1):
        step = expect_object(item, f"step {position}", keys, optional_keys)
        index = expect_int(step["index"], f"step {position}: index")
        if index != position:
            raise TraceError(
                f"step {position}",
                f"index is {index}; steps must be numbered 1, 2, 3, ... in order",
            )
        if "comment" in step:
            expect_str(step["comment"], f"step {position}: comment")
        steps.append(step)
    return steps


def subject_of(document: object, known: Collection[str]) -> str:
    """The subject named by a parsed trace, checked against the `known` subjects."""
    if not isinstance(document, dict):
        raise TraceError("trace", f"expected an object, got {type_name(document)}")
    if "subject" not in document:
        raise TraceError("trace", "missing field 'subject'")
    subject = expect_str(document["subject"], "subject")
    if subject not in known:
        names = ", ".join(sorted(known))
        raise TraceError("subject", f"unknown subject {subject!r} (known: {names})")
    return subject


# ---- files -------------------------------------------------------------------


def dumps(document: Mapping[str, Any]) -> str:
    """Deterministic, diff-friendly JSON: sorted keys, indent 2, final newline."""
    return json.dumps(document, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def trace_path(path: Path) -> Path:
    """A trace file, or the `trace.json` inside an artifact folder."""
    return path / TRACE_FILE if path.is_dir() else path


def parse(text: str, source: str = "") -> object:
    """Parse JSON text; a syntax error becomes a `TraceError` with its line."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise TraceError(
            f"line {error.lineno} column {error.colno}",
            f"not valid JSON: {error.msg}",
            source,
        ) from None
    try:  # JSON escapes can spell a lone surrogate, which no UTF-8 text holds
        json.dumps(document, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as error:
        reason = "text that is not valid Unicode (a lone surrogate)"
        raise TraceError(
            "", f"{reason}: {error.object[error.start : error.end]!a}", source
        ) from None
    return document


def read_text(path: Path) -> str:
    """A trace file's text; unreadable or oversized files are a `TraceError`."""
    file = trace_path(path)
    try:
        # A bounded read: a device file or a pipe reports no size worth trusting.
        with file.open("rb") as stream:
            data = stream.read(TRACE_BYTES_MAX + 1)
        if len(data) > TRACE_BYTES_MAX:
            raise TraceError(
                "", f"more than the cap of {TRACE_BYTES_MAX} bytes", str(file)
            )
        return data.decode("utf-8")
    except FileNotFoundError:
        raise TraceError("", "no such trace file", str(file)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise TraceError("", f"cannot read: {error}", str(file)) from None
