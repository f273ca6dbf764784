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
with one line naming the file, the field as a JSON path (`steps[2].op.handle`,
`config.ttl_ns`) and the problem (`ci/inputs.py`, `docs/inputs.md`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Final

from ci import inputs
from ci.inputs import (
    InputError,
    expect_int,
    expect_list,
    expect_object,
    expect_str,
    parse_json,
    type_name,
)

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


class TraceError(InputError):
    """A trace file is malformed; the message names the file, the field, the problem.

    The trace formats' own name for `ci.inputs.InputError`, in the argument
    order of the trace decoders: where (a JSON path such as `steps[2].op`),
    what went wrong, and the file.
    """

    def __init__(self, where: str, problem: str, source: str = "") -> None:
        """Remember where (e.g. `steps[2]`), what went wrong, and in which file."""
        super().__init__(source, where, problem)

    @property
    def where(self) -> str:
        """The field's JSON path."""
        return self.field

    @property
    def source(self) -> str:
        """The file, or "" before it is known."""
        return self.path


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
    """The bound crate's version, or "unknown" when the binding is not built."""
    try:
        adapter = importlib.import_module("impl.adapter")
    except ImportError:
        return "unknown"
    return str(adapter.CRATE_VERSION)


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
    return Header(**{f.name: expect_str(top[f.name], f.name) for f in fields(Header)})


def write_header(header: Header) -> dict[str, Any]:
    """The envelope fields as JSON (steps and subject keys are added by the kind)."""
    return {"format": FORMAT, "schema_version": SCHEMA_VERSION} | asdict(header)


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
        at = f"steps[{position - 1}]"
        step = expect_object(item, at, keys, optional_keys)
        index = expect_int(step["index"], f"{at}.index")
        if index != position:
            raise TraceError(
                at,
                f"index is {index}; steps must be numbered 1, 2, 3, ... in order",
            )
        if "comment" in step:
            expect_str(step["comment"], f"{at}.comment")
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
    """Parse JSON text strictly (`ci.inputs.parse_json`)."""
    return parse_json(text, source)


def read_text(path: Path) -> str:
    """A trace file's text, bounded and UTF-8 (`ci.inputs.read_text`)."""
    return inputs.read_text(trace_path(path), TRACE_BYTES_MAX)
