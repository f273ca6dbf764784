"""The trace format: round trips, deterministic text, and a strict loader."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ci.inputs import InputError
from ci.replay.affinity import OPS, decode_value, encode_value, record
from ci.replay.envelope import SCHEMA_VERSION, crate_version
from ci.replay.trace import Trace, load, loads, save
from model.affinity.ops import (
    OP_TYPES,
    Abort,
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    CrateAdvance,
    DropTable,
    EnableReplication,
    Invalidate,
    Join,
    NextVersion,
    ObserveSequence,
    Op,
    PollWaiter,
    Query,
    Release,
    Value,
)
from model.affinity.types import (
    SECOND_NS,
    AffinityConfig,
    Bound,
    Initialize,
    Mode,
    ReplicaOutcome,
    Target,
    Version,
    Wait,
)

CONFIG = AffinityConfig(ttl_ns=10 * SECOND_NS, mode=Mode.SOFT, max_entries=3)
POOL = ("a", "b", "ßß")

SAMPLE_OPS: dict[type[Op], Op] = {
    Advance: Advance(2**64),
    CrateAdvance: CrateAdvance(3),
    Acquire: Acquire("ßß", Target(1, 0)),
    Join: Join("a", Target(2, None)),
    Commit: Commit(1, Target(1, 1)),
    Abort: Abort(3),
    Release: Release(2),
    Invalidate: Invalidate(4),
    PollWaiter: PollWaiter(5),
    Query: Query("b", None),
    ApplyReplica: ApplyReplica("a", Target(2, 0), Version(7, 2)),
    ObserveSequence: ObserveSequence(9),
    EnableReplication: EnableReplication(1),
    NextVersion: NextVersion(),
    DropTable: DropTable(),
}
"""One operation of every type, with every optional field both set and unset."""

PROGRAM: tuple[Op, ...] = (
    EnableReplication(1),
    Acquire("a"),
    Acquire("a"),
    PollWaiter(2),
    Join("a", Target(1, 0)),
    Commit(1, Target(1, 0)),
    ApplyReplica("b", Target(2), Version(5, 2)),
    Query("a", Target(1, 0)),
    Query("ßß"),
    Release(3),
    Advance(10 * SECOND_NS),
    NextVersion(),
    ObserveSequence(20),
    Acquire("x" * 300),
    Invalidate(4),
    Abort(99),
    DropTable(),
)
"""A program whose outcomes cover every value type and an error."""


def _recorded() -> Trace:
    return record(CONFIG, POOL, PROGRAM, "A program touching every operation.")


def _document() -> dict[str, Any]:
    return json.loads(_recorded().dumps())  # type: ignore[no-any-return]


def test_the_sample_operations_cover_every_operation_type() -> None:
    """Every operation of `model.affinity.ops` has a sample below (none untested)."""
    assert set(OP_TYPES) == set(SAMPLE_OPS)


@pytest.mark.parametrize("op_type", OP_TYPES, ids=lambda t: t.__name__)
def test_every_operation_survives_a_round_trip(op_type: type[Op]) -> None:
    """An operation written into a trace reads back equal."""
    op = SAMPLE_OPS[op_type]
    trace = record(CONFIG, POOL, [op], "one operation")

    decoded = loads(trace.dumps())

    assert (op,) == decoded.ops


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        7,
        Initialize(1),
        Bound(2, Target(1, None)),
        Wait(3),
        Target(2, 1),
        Version(4, 2),
        *ReplicaOutcome,
    ],
    ids=repr,
)
def test_every_value_survives_a_round_trip(value: Value) -> None:
    """A step's return value written as JSON reads back equal and of the same type."""
    decoded = decode_value(json.loads(json.dumps(encode_value(value))), "value")

    assert value == decoded
    assert type(value) is type(decoded)


def test_a_recorded_program_survives_a_round_trip() -> None:
    """Configuration, pool, operations, outcomes and projections all read back."""
    trace = _recorded()

    decoded = loads(trace.dumps())

    assert trace == decoded


def test_a_manual_clock_trace_keeps_its_instant_range() -> None:
    """A manual table's Instant range and its refused clock moves read back."""
    config = AffinityConfig(
        ttl_ns=SECOND_NS, reaping="cadence", instant_range_ns=3 * SECOND_NS
    )
    program = (
        Advance(2 * SECOND_NS + 1),
        CrateAdvance(SECOND_NS),
        Advance(0),
        Advance(3 * SECOND_NS + 1),
    )
    trace = record(config, POOL, program, "Refused and accepted manual moves.")

    decoded = loads(trace.dumps())

    assert trace == decoded
    assert 3 * SECOND_NS == json.loads(trace.dumps())["config"]["instant_range_ns"]
    refusals = [step.expected.refusal for step in decoded.steps]
    assert ["deadline_overflow", None, "backwards", "binding_range"] == refusals


def test_a_runtime_trace_has_no_instant_range_field() -> None:
    """Traces of runtime tables are written exactly as before the clock axis."""
    assert "instant_range_ns" not in _document()["config"]


def test_the_program_covers_errors_and_every_value_kind() -> None:
    """The round-trip program's outcomes include an error and each value kind."""
    outcomes = [step.expected for step in _recorded().steps]

    kinds = {type(outcome.value).__name__ for outcome in outcomes if outcome.ok}
    errors = {outcome.error for outcome in outcomes if not outcome.ok}

    assert {"Initialize", "Wait", "Target", "Version", "ReplicaOutcome"} <= kinds
    assert {"bool", "int", "NoneType"} <= kinds
    assert {"HandleError", "InvalidArgument"} <= errors


def test_recording_twice_gives_identical_text() -> None:
    """Two recordings of one program are byte-identical."""
    assert _recorded().dumps() == _recorded().dumps()


def test_the_text_has_sorted_keys_an_indent_and_a_final_newline() -> None:
    """The file is the canonical `json.dumps` of itself: diff-friendly."""
    text = _recorded().dumps()

    canonical = (
        json.dumps(json.loads(text), sort_keys=True, indent=2, ensure_ascii=False)
        + "\n"
    )

    assert canonical == text


def test_the_envelope_names_subject_schema_and_versions() -> None:
    """A trace says what it drives and which suite and crate recorded it."""
    document = _document()

    assert "affinity" == document["subject"]
    assert SCHEMA_VERSION == document["schema_version"]
    assert crate_version() == document["crate_version"]
    assert "unknown" != document["suite_version"]


def test_each_step_carries_the_models_outcome_and_projection() -> None:
    """Step 6 (the initializer's commit after a join) records lease and deadline."""
    step = _document()["steps"][5]

    assert {"error": None, "message": "", "value": 4} == step["expected"]
    assert 0 == step["model"]["now_ns"]
    assert 2 == step["model"]["entries"]["a"]["leases"]
    assert 10 * SECOND_NS == step["model"]["entries"]["a"]["deadline_ns"]


def test_operations_are_tagged_by_class_name_with_targets_as_objects() -> None:
    """`ApplyReplica` is written with its target and version as plain objects."""
    encoded = OPS.encode(ApplyReplica("a", Target(2, None), Version(5, 2)))

    assert {
        "op": "ApplyReplica",
        "session_id": "a",
        "target": {"worker": 2, "rank": None},
        "version": {"sequence": 5, "writer": 2},
    } == encoded


def test_saving_into_a_folder_writes_its_trace_json(tmp_path: Path) -> None:
    """An artifact folder holds its trace as `trace.json`, which `load` finds."""
    tmp_path.joinpath("artifact").mkdir()

    written = save(_recorded(), tmp_path / "artifact")

    assert tmp_path / "artifact" / "trace.json" == written
    assert _recorded() == load(tmp_path / "artifact")


# ---- the strict loader -------------------------------------------------------

Edit = Callable[[dict[str, Any]], None]


def _set(path: tuple[Any, ...], *, to: Any) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        target = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = to

    return edit


def _delete(path: tuple[Any, ...]) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        target = document
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return edit


MALFORMED: dict[str, tuple[Edit, str]] = {
    "instant range not an integer": (
        _set(("config", "instant_range_ns"), to="far"),
        "config.instant_range_ns: expected an integer, got string",
    ),
    "unknown operation": (
        _set(("steps", 1, "op", "op"), to="Acquir"),
        "steps[1].op: unknown operation 'Acquir'",
    ),
    "missing operation field": (
        _delete(("steps", 1, "op", "session_id")),
        "steps[1].op: missing field 'session_id'",
    ),
    "extra operation field": (
        _set(("steps", 1, "op", "worker"), to=1),
        "steps[1].op: unknown field 'worker'",
    ),
    "string where an integer belongs": (
        _set(("steps", 3, "op", "waiter"), to="2"),
        "steps[3].op.waiter: expected an integer, got string",
    ),
    "boolean where an integer belongs": (
        _set(("steps", 3, "op", "waiter"), to=True),
        "steps[3].op.waiter: expected an integer, got boolean",
    ),
    "integer where a session id belongs": (
        _set(("steps", 1, "op", "session_id"), to=5),
        "steps[1].op.session_id: expected a string, got integer",
    ),
    "target without a rank": (
        _delete(("steps", 4, "op", "target", "rank")),
        "steps[4].op.target: missing field 'rank'",
    ),
    "TTL below one second": (
        _set(("config", "ttl_ns"), to=SECOND_NS - 1),
        "config: invalid configuration: session affinity TTL must be between",
    ),
    "TTL as a float": (
        _set(("config", "ttl_ns"), to=1.5e9),
        "config.ttl_ns: expected an integer, got number",
    ),
    "unknown mode": (
        _set(("config", "mode"), to="firm"),
        "config.mode: unknown mode 'firm' (known: hard, soft)",
    ),
    "unknown reaping": (
        _set(("config", "reaping"), to="never"),
        "config.reaping: unknown reaping 'never'",
    ),
    "negative capacity": (
        _set(("config", "max_entries"), to=-1),
        "config.max_entries: -1 is outside 0..=18446744073709551615",
    ),
    "missing config field": (
        _delete(("config", "mode")),
        "config: missing field 'mode'",
    ),
    "schema from the future": (
        _set(("schema_version",), to=SCHEMA_VERSION + 1),
        f"schema_version: unsupported schema version {SCHEMA_VERSION + 1}",
    ),
    "another format": (
        _set(("format",), to="affinity-ops/1"),
        "format: expected 'dynamo-verify-trace', got 'affinity-ops/1'",
    ),
    "unknown subject": (
        _set(("subject",), to="router"),
        (
            "subject: unknown subject 'router' "
            "(known: affinity, queue, replica, scheduler)"
        ),
    ),
    "unknown top-level field": (
        _set(("note",), to="hi"),
        "trace: unknown field 'note'",
    ),
    "missing description": (
        _delete(("description",)),
        "trace: missing field 'description'",
    ),
    "a deleted step leaves a gap in the numbering": (
        _delete(("steps", 2)),
        "steps[2]: index is 4; steps must be numbered 1, 2, 3, ... in order",
    ),
    "duplicate session id": (
        _set(("session_pool",), to=["a", "a"]),
        "session_pool: session id 'a' appears twice",
    ),
    "an error outcome with a value": (
        _set(("steps", 13, "expected", "value"), to=1),
        "steps[13].expected: an outcome with an error has a null value",
    ),
    "unknown value type": (
        _set(("steps", 1, "expected", "value", "type"), to="Hold"),
        "steps[1].expected.value: unknown value type 'Hold'",
    ),
    "unknown replica outcome": (
        _set(("steps", 6, "expected", "value", "outcome"), to="Merged"),
        "steps[6].expected.value.outcome: unknown replica outcome 'Merged'",
    ),
    "unknown entry state": (
        _set(("steps", 6, "model", "entries", "b", "state"), to="expired"),
        "steps[6].model.entries['b'].state: expected 'initializing' or 'bound'",
    ),
    "steps not a list": (
        _set(("steps",), to={}),
        "steps: expected an array, got object",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_trace_is_refused_with_its_place_and_problem(case: str) -> None:
    """Each hand-edit that breaks the format raises an `InputError` naming it."""
    edit, message = MALFORMED[case]
    document = copy.deepcopy(_document())
    edit(document)

    with pytest.raises(InputError) as refused:
        loads(json.dumps(document), "trace.json")

    assert str(refused.value).startswith(f"trace.json: {message}")


def test_a_file_that_is_not_json_is_refused_with_its_line() -> None:
    """A syntax error names the line and column, not a traceback."""
    with pytest.raises(InputError) as refused:
        loads('{"format":\n  oops}', "broken.json")

    assert str(refused.value).startswith("broken.json: line 2 column 3: not valid JSON")


def test_a_missing_file_is_refused_with_its_path(tmp_path: Path) -> None:
    """Loading a path that does not exist names the path."""
    with pytest.raises(InputError) as refused:
        load(tmp_path / "nowhere.json")

    assert f"{tmp_path / 'nowhere.json'}: no such file" == str(refused.value)


def test_an_unencodable_field_type_is_a_clear_error() -> None:
    """Recording a value outside the format fails loudly, naming the value."""
    with pytest.raises(TypeError) as refused:
        encode_value(1.5)  # type: ignore[arg-type]

    assert "no trace encoding for the value 1.5" == str(refused.value)
