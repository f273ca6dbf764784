"""Traces of any subject: record a program, write it, read it back strictly.

A `Trace` is a subject's setup (for the affinity table its configuration and
session pool, for the queue its profile), the envelope of
`ci/replay/envelope.py`, and the recorded steps: each operation with what the
reference model answered and a small projection of the model after it. A
subject's *trace kind* (`TraceKind`, one module per subject: `affinity.py`,
`queue.py`, `replica.py`; the subject registry `ci.subjects` names it) knows
its setup keys, operations, values and projection, how to build its harness
and which systems it can be replayed against; replay, minimization, artifacts
and the corpus only talk to a kind.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci import subjects
from ci.inputs import InputError
from ci.replay.codec import Codec, OpCodec
from ci.replay.envelope import (
    STEPS_MAX,
    Header,
    TraceError,
    crate_version,
    dumps,
    parse,
    read_header,
    read_steps,
    read_text,
    subject_of,
    suite_version,
    trace_path,
    write_header,
)
from stateful.harness import Harness


@dataclass(frozen=True)
class RecordedStep:
    """One operation and what the model answered when the trace was recorded."""

    index: int
    op: Any
    expected: Any
    model: Any  # the kind's projection of the model after the step
    comment: str = ""


@dataclass(frozen=True)
class Trace:
    """A recorded program of one subject."""

    header: Header
    setup: Any
    steps: tuple[RecordedStep, ...]

    @property
    def kind(self) -> TraceKind:
        """The trace kind of this trace's subject."""
        return kind_of(self.header.subject)

    @property
    def ops(self) -> tuple[Any, ...]:
        """The operations, in order."""
        return tuple(step.op for step in self.steps)

    @property
    def description(self) -> str:
        """What the program shows."""
        return self.header.description

    def to_json(self) -> dict[str, Any]:
        """The trace as a JSON document."""
        kind = self.kind
        return (
            write_header(self.header)
            | kind.encode_setup(self.setup)
            | {"steps": [kind.encode_step(step) for step in self.steps]}
        )

    def dumps(self) -> str:
        """The trace as deterministic JSON text."""
        return dumps(self.to_json())


Factory = Callable[[Any], Any]


class TraceKind(ABC):
    """Everything a trace knows about one subject."""

    subject: str
    noun: str  # what one setup builds: "table", "queue"
    setup_keys: frozenset[str]
    ops: OpCodec
    outcomes: Codec  # a step's outcome, as JSON and back
    projections: Codec  # the model projection after a step, as JSON and back
    model: Factory  # a second reference model as the system under test
    crate: tuple[str, str]  # the crate's adapter: its module and name

    # -- JSON --

    @abstractmethod
    def encode_setup(self, setup: Any) -> dict[str, Any]:
        """The subject's own top-level keys."""

    @abstractmethod
    def decode_setup(self, document: dict[str, Any]) -> Any:
        """The setup from the subject's keys, strictly (a `TraceError` names why)."""

    # -- running --

    @abstractmethod
    def project(self, model: Any) -> Any:
        """The projection of a reference model after a step."""

    @abstractmethod
    def harness(self, setup: Any, factory: Factory) -> Harness[Any, Any]:
        """A harness over `setup` against the system `factory` builds."""

    def setup_from(self, subject: Any, config: Any) -> Any:
        """The setup of a harness over `subject` built with `config` (default: it)."""
        del subject
        return config

    def setup_of(self, harness: Harness[Any, Any]) -> Any:
        """The setup a harness was built with."""
        return self.setup_from(harness.subject, harness.config)

    @abstractmethod
    def describe(self, setup: Any) -> str:
        """The setup in one line, for the replay's header."""

    def model_factory(self) -> Factory:
        """A second reference model as the system under test (`model`)."""
        return self.model

    def crate_factory(self) -> Factory:
        """The crate's adapter `crate` (ImportError when the binding is not built)."""
        import impl.adapter  # noqa: F401, PLC0415 - fail here when unbuilt

        factory: Factory = subjects.lazy(*self.crate)()
        return factory

    def canaries(self) -> Mapping[str, Factory]:
        """Deliberately broken systems, by name (the registry's canary module)."""
        return subjects.entry(self.subject).canary_factories()

    def show_op(self, op: Any) -> str:
        """An operation in a replay table cell."""
        return repr(op)

    def show_value(self, value: Any) -> str:
        """A returned value in a replay table cell."""
        return repr(value)

    def check_program(self, setup: Any, ops: Sequence[Any]) -> None:
        """Refuse a program the binding cannot run (a `TraceError` naming the step).

        Ranges of single fields are the codec's (`ci.replay.codec`); this is
        for what depends on the setup or on earlier steps. By default, nothing.
        """
        del setup, ops

    def rebuild(self, trace: Trace, keep: Sequence[int]) -> list[tuple[int, Any]]:
        """The kept steps (0-based) as a program; by default, unchanged."""
        return [(position, trace.steps[position].op) for position in keep]

    # -- steps --

    def encode_step(self, step: RecordedStep) -> dict[str, Any]:
        """One step object (the comment only when there is one)."""
        encoded = {
            "index": step.index,
            "op": self.ops.encode(step.op),
            "expected": self.outcomes[0](step.expected),
            "model": self.projections[0](step.model),
        }
        if step.comment:
            encoded["comment"] = step.comment
        return encoded

    def decode(self, document: object) -> Trace:
        """A strict decode of a parsed trace of this subject."""
        header = read_header(document, self.setup_keys)
        if header.subject != self.subject:
            raise TraceError(
                "subject", f"expected {self.subject!r}, got {header.subject!r}"
            )
        assert isinstance(document, dict)
        setup = self.decode_setup(document)
        steps = []
        for step in read_steps(document):
            at = f"steps[{step['index'] - 1}]"
            steps.append(
                RecordedStep(
                    index=step["index"],
                    op=self.ops.decode(step["op"], f"{at}.op"),
                    expected=self.outcomes[1](step["expected"], f"{at}.expected"),
                    model=self.projections[1](step["model"], f"{at}.model"),
                    comment=step.get("comment", ""),
                )
            )
        self.check_program(setup, [step.op for step in steps])
        return Trace(header, setup, tuple(steps))

    def record(
        self,
        setup: Any,
        ops: Sequence[Any],
        description: str,
        comments: Sequence[str] = (),
    ) -> Trace:
        """Run `ops` on a fresh reference model and record its answers."""
        if len(ops) > STEPS_MAX:
            raise TraceError("steps", f"{len(ops)} steps exceed the cap of {STEPS_MAX}")
        harness = self.harness(setup, self.model_factory())
        harness.check_states = False
        steps = []
        for index, op in enumerate(ops, start=1):
            expected = harness.step(op).expected
            comment = comments[index - 1] if index <= len(comments) else ""
            steps.append(
                RecordedStep(index, op, expected, self.project(harness.model), comment)
            )
        header = Header(
            subject=self.subject,
            description=description,
            suite_version=suite_version(),
            crate_version=crate_version(),
        )
        return Trace(header, setup, tuple(steps))

    def record_harness(self, harness: Harness[Any, Any], description: str) -> Trace:
        """The program a harness ran so far, recorded afresh on the model."""
        return self.record(self.setup_of(harness), harness.ops, description)


def kind_of(subject: str) -> TraceKind:
    """The trace kind of a registered subject (`ci.subjects`)."""
    kind: TraceKind = subjects.entry(subject).kind()
    return kind


def loads(text: str, source: str = "") -> Trace:
    """Decode a trace of any known subject from JSON text."""
    document = parse(text, source)
    try:
        return kind_of(subject_of(document, subjects.names())).decode(document)
    except InputError as error:
        raise error.in_file(source) from None


def load(path: Path) -> Trace:
    """Read a trace file (or an artifact folder's `trace.json`)."""
    file = trace_path(path)
    return loads(read_text(file), str(file))


def save(trace: Trace, path: Path) -> Path:
    """Write `trace` to `path` (or into an artifact folder) deterministically."""
    file = trace_path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(trace.dumps(), encoding="utf-8")
    return file
