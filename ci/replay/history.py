"""Concurrent histories as files: record, read strictly, and check again.

A history file (subject `affinity-history`) keeps one run of many threads
against one table (`model.affinity.history.History`), or a prefix of it cut
where it stopped being linearizable. It shares the envelope of
`ci/replay/envelope.py`; its own keys are

    history_format HISTORY_FORMAT (2)
    config         the table's `AffinityConfig`, as in affinity traces
    threads        how many threads ran
    writer_id      the recording replica sink's writer id, or null: no sink
    census         {"now_ns", "entry_count", "lease_counts": [[id, n|null]...],
                   "targets": [[id, target|null]...], "next_version": version}
                   read after every thread finished, or null for a prefix
    replica_apply  the reading of replica updates checked against:
                   "observe_first" (the pinned crate's) or "atomic"
    reaper_count   the reading of a reaper pass: "count_after" (the pinned
                   crate's: entries go, then their slots are freed) or "atomic"
    linearizable   the verdict when the file was written

and each step is one call: {"index", "thread", "program_index", "invoked",
"returned", "op", "expected", "published"} plus "pending": true for a call that
had not returned where the history was cut (its "expected" and "published" are
then what the thread would have seen, and are not checked). "published" lists
what the call published to the sink, in the sink's order, each as
{"at": instant, "session_id", "target", "version"}. Operations and outcomes
are written as in affinity traces, with the driver's handle numbers.

Format 1 (before publications were recorded, without "history_format") is
refused like any other format. Its files migrate as runs without a sink:
writer_id null, no publications, and census targets and next_version null (not
read by that driver, so not checked).

`python -m ci.replay FILE` checks the history again against today's model
(`stateful.concurrent_affinity`) and the version properties
(`stateful.version_order`): nothing reruns on the crate, so the verdict is
reproducible on any machine. It exits 1 when the history is not linearizable
or breaks a version property, whatever the file recorded; the corpus test
compares the verdict with the recorded one.
"""

from __future__ import annotations

import itertools
import typing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, get_args

from rich.console import Console
from rich.table import Table

from ci.inputs import (
    U64_MAX,
    USIZE_MAX,
    InputError,
    expect_bool,
    expect_int,
    expect_list,
    expect_object,
    expect_optional,
    expect_str,
)
from ci.replay.affinity import (
    OPS,
    OUTCOMES,
    TYPE_CODECS,
    decode_config,
    decode_target,
    decode_version,
    encode_config,
    encode_target,
    encode_version,
)
from ci.replay.codec import Codec, dataclass_codec
from ci.replay.envelope import (
    Header,
    TraceError,
    crate_version,
    dumps,
    parse,
    read_header,
    read_steps,
    read_text,
    suite_version,
    write_header,
)
from model.affinity.history import INSTANT_END, THREADS_MAX, Census, Event, History
from model.affinity.types import Published
from stateful import version_order
from stateful.concurrent_affinity import (
    CRATE_REAPER_COUNT,
    CRATE_REPLICA_APPLY,
    ReaperCount,
    ReplicaApply,
    shortest_failure,
    verdict,
)

SUBJECT: Final[str] = "affinity-history"
HISTORY_FILE: Final[str] = "history.json"
MINIMAL_FILE: Final[str] = "minimal.json"
HISTORY_FORMAT: Final[int] = 2
CALLS_MAX: Final[int] = 128
"""The most calls a history file may hold: above the nightly runs' largest (8
threads of 12 operations) and the corpus's (50); the search's work grows
exponentially with the calls, so a longer history is refused, not searched."""
"""Format 2 records publications, the sink's writer id and the census additions."""
SUBJECT_KEYS: Final[frozenset[str]] = frozenset(
    {
        "history_format",
        "config",
        "threads",
        "writer_id",
        "census",
        "replica_apply",
        "reaper_count",
        "linearizable",
    }
)
EVENT_KEYS: Final[frozenset[str]] = frozenset(
    {
        "index",
        "thread",
        "program_index",
        "invoked",
        "returned",
        "op",
        "expected",
        "published",
    }
)
EVENT_OPTIONAL_KEYS: Final[frozenset[str]] = frozenset({"pending"})
CENSUS_KEYS: Final[frozenset[str]] = frozenset(
    {"now_ns", "entry_count", "lease_counts", "targets", "next_version"}
)
PUBLISHED_KEYS: Final[frozenset[str]] = frozenset(
    {"at", "session_id", "target", "version"}
)
READINGS: Final[tuple[str, ...]] = get_args(ReplicaApply)
REAPER_COUNTS: Final[tuple[str, ...]] = get_args(ReaperCount)


@dataclass(frozen=True)
class HistoryFile:
    """A history, what it is checked against, and what it showed."""

    header: Header
    history: History
    replica_apply: ReplicaApply
    linearizable: bool
    reaper_count: ReaperCount = CRATE_REAPER_COUNT


def is_history(document: object) -> bool:
    """Whether a parsed file is a history (any other subject is a trace)."""
    return isinstance(document, dict) and document.get("subject") == SUBJECT


def _encode_event(index: int, event: Event) -> dict[str, Any]:
    encoded = {
        "index": index,
        "thread": event.thread,
        "program_index": event.index,
        "invoked": event.invoked,
        "returned": event.returned,
        "op": OPS.encode(event.call),
        "expected": OUTCOMES[0](event.outcome),
        "published": [
            {"at": at, **asdict(published)}
            for at, published in zip(event.published_at, event.published, strict=True)
        ],
    }
    return encoded | ({"pending": True} if event.pending else {})


def to_json(file: HistoryFile) -> dict[str, Any]:
    """The document, keys sorted when written."""
    history, census = file.history, file.history.census
    return (
        write_header(file.header)
        | {
            "history_format": HISTORY_FORMAT,
            "config": encode_config(history.config),
            "threads": history.threads,
            "writer_id": history.writer_id,
            "census": None if census is None else _encode_census(census),
            "replica_apply": file.replica_apply,
            "reaper_count": file.reaper_count,
            "linearizable": file.linearizable,
        }
        | {
            "steps": [
                _encode_event(index, event)
                for index, event in enumerate(history.events, start=1)
            ]
        }
    )


def _encode_census(census: Census) -> dict[str, Any]:
    """The census; targets and the counter as null when they were not read."""
    return {
        "now_ns": census.now_ns,
        "entry_count": census.entry_count,
        "lease_counts": [list(pair) for pair in census.lease_counts],
        "targets": None
        if census.targets is None
        else [
            [session_id, None if target is None else encode_target(target)]
            for session_id, target in census.targets
        ],
        "next_version": None
        if census.next_version is None
        else encode_version(census.next_version),
    }


def _decode_targets(value: object, where: str) -> tuple[tuple[str, Any], ...]:
    pairs = []
    for position, item in enumerate(expect_list(value, where)):
        at = f"{where}[{position}]"
        pair = expect_list(item, at)
        if len(pair) != 2:
            raise TraceError(at, "expected [session id, target or null]")
        pairs.append(
            (expect_str(pair[0], at), expect_optional(pair[1], at, decode_target))
        )
    return tuple(pairs)


def _decode_census(value: object, where: str) -> Census:
    raw = expect_object(value, where, CENSUS_KEYS)
    pairs = []
    for position, item in enumerate(expect_list(raw["lease_counts"], where)):
        at = f"{where}.lease_counts[{position}]"
        pair = expect_list(item, at)
        if len(pair) != 2:
            raise TraceError(at, "expected [session id, lease count or null]")
        pairs.append((expect_str(pair[0], at), expect_optional(pair[1], at, _count)))
    return Census(
        now_ns=_instant(raw["now_ns"], f"{where}.now_ns"),
        entry_count=_count(raw["entry_count"], f"{where}.entry_count"),
        lease_counts=tuple(pairs),
        targets=expect_optional(raw["targets"], f"{where}.targets", _decode_targets),
        next_version=expect_optional(
            raw["next_version"], f"{where}.next_version", decode_version
        ),
    )


_PUBLISHED: Final[Codec] = dataclass_codec(Published, TYPE_CODECS)


def _decode_published(
    value: object, where: str, invoked: int, returned: int
) -> tuple[tuple[int, Published], ...]:
    """A call's publications, inside its interval, in increasing instants."""
    found: list[tuple[int, Published]] = []
    for position, item in enumerate(expect_list(value, where)):
        at = f"{where}[{position}]"
        raw = expect_object(item, at, PUBLISHED_KEYS)
        instant = _instant(raw["at"], f"{at}.at")
        if not invoked < instant < returned:
            raise TraceError(at, f"instant {instant} is outside the call")
        if found and instant <= found[-1][0]:
            raise TraceError(at, "publications are out of the sink's order")
        fields = {key: item for key, item in raw.items() if key != "at"}
        found.append((instant, _PUBLISHED[1](fields, at)))
    return tuple(found)


def _check_history_format(document: dict[str, Any]) -> None:
    """Refuse a file of another history format (format 1 has no key)."""
    found = expect_int(document.get("history_format", 1), "history_format")
    if found != HISTORY_FORMAT:
        raise TraceError(
            "history_format",
            f"unsupported history format {found} (this suite reads {HISTORY_FORMAT})",
        )


def _count(value: object, where: str) -> int:
    """A count the binding returned: a `usize`."""
    return expect_int(value, where, 0, USIZE_MAX)


def _instant(value: object, where: str) -> int:
    instant = expect_int(value, where)
    if not 0 <= instant < INSTANT_END:
        raise TraceError(where, f"{instant} is outside the driver's u64 counter")
    return instant


def _check_threads(events: list[Event]) -> None:
    """Each thread called one at a time, in program order, ending at a pending call.

    A pending call returns at infinity, so nothing can follow it on its thread.
    """
    for thread in sorted({event.thread for event in events}):
        calls = sorted(
            (e for e in events if e.thread == thread), key=lambda e: e.invoked
        )
        for earlier, later in itertools.pairwise(calls):
            where = f"thread {thread}: program steps {earlier.index} and {later.index}"
            if earlier.pending:
                raise TraceError(where, "a call follows a pending call")
            if later.invoked <= earlier.returned:
                raise TraceError(where, "calls on one thread overlap")
            if later.index <= earlier.index:
                raise TraceError(where, "calls are out of program order")


def _capped_calls(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The history's calls as steps, refused past `CALLS_MAX` (before the search)."""
    steps = read_steps(document, EVENT_KEYS, EVENT_OPTIONAL_KEYS)
    if len(steps) > CALLS_MAX:
        raise TraceError(
            "steps", f"{len(steps)} calls exceed the cap of {CALLS_MAX} per history"
        )
    return steps


def decode(document: object) -> HistoryFile:
    """A strict decode: a `TraceError` names the place and the problem."""
    if not isinstance(document, dict):
        raise TraceError("document", "expected a JSON object")
    _check_history_format(document)
    header = read_header(document, SUBJECT_KEYS)
    if header.subject != SUBJECT:
        raise TraceError("subject", f"expected {SUBJECT!r}, got {header.subject!r}")
    writer_id = expect_optional(
        document["writer_id"],
        "writer_id",
        lambda value, at: expect_int(value, at, 0, U64_MAX),
    )
    threads = expect_int(document["threads"], "threads")
    if not 1 <= threads <= THREADS_MAX:
        raise TraceError("threads", f"{threads} is outside 1..{THREADS_MAX}")
    reading = expect_str(document["replica_apply"], "replica_apply")
    if reading not in READINGS:
        known = ", ".join(READINGS)
        raise TraceError("replica_apply", f"unknown reading {reading!r} ({known})")
    reaper_count = expect_str(document["reaper_count"], "reaper_count")
    if reaper_count not in REAPER_COUNTS:
        known = ", ".join(REAPER_COUNTS)
        raise TraceError("reaper_count", f"unknown reading {reaper_count!r} ({known})")
    events = []
    for step in _capped_calls(document):
        at = f"steps[{step['index'] - 1}]"
        thread = expect_int(step["thread"], f"{at}.thread")
        if not 0 <= thread < threads:
            raise TraceError(f"{at}.thread", f"{thread} is not one of {threads}")
        invoked = _instant(step["invoked"], f"{at}.invoked")
        returned = _instant(step["returned"], f"{at}.returned")
        if returned < invoked:
            raise TraceError(at, "returned before it was invoked")
        published = _decode_published(
            step["published"], f"{at}.published", invoked, returned
        )
        if published and writer_id is None:
            raise TraceError(f"{at}.published", "a run without a sink published")
        events.append(
            Event(
                thread=thread,
                index=_count(step["program_index"], f"{at}.program_index"),
                invoked=invoked,
                returned=returned,
                call=OPS.decode(step["op"], f"{at}.op"),
                outcome=OUTCOMES[1](step["expected"], f"{at}.expected"),
                pending=expect_bool(step.get("pending", False), f"{at}.pending"),
                published=tuple(item for _, item in published),
                published_at=tuple(instant for instant, _ in published),
            )
        )
    _check_threads(events)
    history = History(
        config=decode_config(document["config"]),
        threads=threads,
        events=tuple(events),
        census=expect_optional(document["census"], "census", _decode_census),
        writer_id=writer_id,
    )
    return HistoryFile(
        header=header,
        history=history,
        replica_apply=typing.cast("ReplicaApply", reading),
        linearizable=expect_bool(document["linearizable"], "linearizable"),
        reaper_count=typing.cast("ReaperCount", reaper_count),
    )


def minimal_file(path: Path) -> Path | None:
    """The history file PATH names (a folder: its `minimal.json`), if it is one.

    Only the subject is read here; anything else is left to the caller.
    """
    file = path / MINIMAL_FILE if path.is_dir() else path
    if path.is_dir() and not file.is_file():
        return None
    try:
        document = parse(read_text(file), str(file))
    except InputError:
        return None
    return file if is_history(document) else None


def load(file: Path) -> HistoryFile:
    """Read a history file strictly."""
    source = str(file)
    try:
        return decode(parse(read_text(file), source))
    except InputError as error:
        raise error.in_file(source) from None


def record(
    history: History,
    description: str,
    replica_apply: ReplicaApply = CRATE_REPLICA_APPLY,
    reaper_count: ReaperCount = CRATE_REAPER_COUNT,
) -> HistoryFile:
    """A history with today's verdict, ready to write."""
    header = Header(
        subject=SUBJECT,
        description=description,
        suite_version=suite_version(),
        crate_version=crate_version(),
    )
    found = verdict(history, replica_apply, reaper_count=reaper_count)
    return HistoryFile(header, history, replica_apply, found.linearizable, reaper_count)


def save(file: HistoryFile, path: Path) -> Path:
    """Write deterministically; return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(to_json(file)), encoding="utf-8")
    return path


def write_failure(
    history: History,
    folder: Path,
    description: str,
    replica_apply: ReplicaApply = CRATE_REPLICA_APPLY,
) -> tuple[Path, History]:
    """The whole history and its shortest failing prefix, side by side."""
    save(record(history, description, replica_apply), folder / HISTORY_FILE)
    minimal = shortest_failure(history, replica_apply)
    cut = f" Shortest failing prefix: {len(minimal.events)} of {len(history.events)}."
    path = save(
        record(minimal, description + cut, replica_apply), folder / MINIMAL_FILE
    )
    return path, minimal


# ---- the replay --------------------------------------------------------------


def show(history: History, title: str) -> Table:
    """One row per call: thread, instants, operation, result, publications."""
    table = Table(title=title, title_justify="left")
    for column in ("#", "thread", "invoked", "returned", "call", "result", "published"):
        table.add_column(column, overflow="fold")
    for index, event in enumerate(history.events, start=1):
        outcome = event.outcome
        result = (
            "(pending)" if event.pending else (outcome.error or repr(outcome.value))
        )
        published = "; ".join(
            f"@{at} {item.session_id} {item.target} "
            f"v{item.version.sequence}/{item.version.writer}"
            for at, item in zip(event.published_at, event.published, strict=True)
        )
        table.add_row(
            str(index),
            str(event.thread),
            str(event.invoked),
            str(event.returned),
            repr(event.call),
            result,
            published,
        )
    return table


def replay(file: HistoryFile, console: Console) -> bool:
    """Check the history again and print it; True when linearizable.

    A linearizable history that breaks a version property fails too.
    """
    history = file.history
    found = verdict(history, file.replica_apply, reaper_count=file.reaper_count)
    console.print(
        f"{SUBJECT}: {len(history.events)} calls on {history.threads} threads, "
        f"replica updates read as {file.replica_apply!r}, reaper passes as "
        f"{file.reaper_count!r}",
        markup=False,
    )
    console.print(f"  {file.header.description}", markup=False)
    console.print(show(history, "the history"))
    if found.undecided:
        console.print(f"UNDECIDED after {found.explored} search states", markup=False)
        return False
    if found.linearizable:
        order = " -> ".join(
            f"#{history.events.index(action.event) + 1}{action.part[0]}"
            for action in found.order
        )
        console.print(
            f"LINEARIZABLE ({found.explored} search states): {order}", markup=False
        )
        broken = version_order.violations(history)
        for violation in broken:
            console.print(
                f"VERSIONS OUT OF ORDER: {violation.name}: {violation.detail}",
                markup=False,
            )
        return not broken
    console.print(
        f"NOT LINEARIZABLE: no order of these calls gives every result seen "
        f"({found.explored} search states)",
        markup=False,
    )
    return False
