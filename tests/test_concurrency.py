"""The linearizability check: its search, its files, and the canary it must catch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from command_support import run_module

from ci.inputs import InputError
from ci.replay import history as history_files
from ci.replay.artifacts import write_history_artifact
from model.affinity.history import Census, Event, History, ThreadOp
from model.affinity.ops import (
    Abort,
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    Op,
    Outcome,
    PollWaiter,
    Query,
    Value,
)
from model.affinity.types import (
    AffinityConfig,
    Initialize,
    Published,
    ReplicaOutcome,
    Target,
    Version,
    Wait,
)
from model.errors import InvalidArgumentError
from stateful import capture, version_order
from stateful.concurrent_affinity import (
    CRATE_REAPER_COUNT,
    CRATE_REPLICA_APPLY,
    SESSIONS,
    OutOfDomainError,
    actions_of,
    prefix,
    shortest_failure,
    verdict,
)
from stateful.concurrent_runs import check_scenarios
from stateful.linearizability import lanes_of

CONFIG = AffinityConfig(ttl_ns=1_000_000_000, max_entries=4)
REPLAY_TIMEOUT_S = 120
REPO_ROOT = Path(__file__).resolve().parent.parent


def call(
    thread: int, invoked: int, returned: int, op: Op, value: Value = None
) -> Event:
    """One recorded call (program index: its invocation instant)."""
    return Event(thread, invoked, invoked, returned, op, Outcome(value=value))


def history_of(*events: Event, census: Census | None = None) -> History:
    """A history of two threads over `CONFIG`."""
    return History(CONFIG, 2, events, census)


# ---- the search ----------------------------------------------------------------


def test_a_sequential_history_linearizes_in_its_own_order() -> None:
    """One thread acquiring then committing is linearizable as it happened."""
    run = history_of(
        call(0, 0, 1, Acquire("s0"), Initialize(1)),
        call(0, 2, 3, Commit(1, Target(1)), 2),
        call(0, 4, 5, Query("s0"), Target(1)),
    )
    found = verdict(run)
    assert found.linearizable
    assert [action.event.invoked for action in found.order] == [0, 2, 4]


def test_overlapping_calls_may_take_effect_in_either_order() -> None:
    """A query overlapping a commit may see the binding: it is ordered after."""
    run = history_of(
        call(0, 0, 1, Acquire("s0"), Initialize(7)),
        call(0, 2, 5, Commit(7, Target(1)), 8),
        call(1, 3, 4, Query("s0"), Target(1)),
    )
    assert verdict(run).linearizable


def test_real_time_order_is_respected() -> None:
    """A query that returned before the commit began cannot see its binding."""
    run = history_of(
        call(0, 0, 1, Acquire("s0"), Initialize(7)),
        call(1, 2, 3, Query("s0"), Target(1)),
        call(0, 4, 5, Commit(7, Target(1)), 8),
    )
    found = verdict(run)
    assert found.decided
    assert not found.linearizable


def test_two_initializers_of_one_session_are_not_linearizable() -> None:
    """Two threads cannot both initialize the same session."""
    run = history_of(
        call(0, 0, 3, Acquire("s0"), Initialize(1)),
        call(1, 1, 2, Acquire("s0"), Initialize(2)),
    )
    assert not verdict(run).linearizable
    waited = replace(
        run,
        events=(run.events[0], replace(run.events[1], outcome=Outcome(value=Wait(2)))),
    )
    assert verdict(waited).linearizable


def test_the_census_must_match_the_linearization() -> None:
    """The entry count after the run is part of what is checked."""
    events = (call(0, 0, 1, Acquire("s0"), Initialize(1)),)
    right = Census(now_ns=0, entry_count=1, lease_counts=(("s0", 0),))
    assert verdict(history_of(*events, census=right)).linearizable
    wrong = replace(right, entry_count=0)
    assert not verdict(history_of(*events, census=wrong)).linearizable


def test_an_advance_is_a_clock_move_then_a_reaper_pass() -> None:
    """A reaper tick: move, pass, freed slots; a move past a tick is out of domain."""
    run = history_of(call(0, 0, 1, Advance(1_000_000_000)))
    assert [action.part for action in actions_of(run)] == ["clock", "reap", "count"]
    atomic = actions_of(run, reaper_count="atomic")
    assert [action.part for action in atomic] == ["clock", "reap"]
    assert verdict(run).linearizable
    past_a_tick = history_of(call(0, 0, 1, Advance(1_500_000_000)))
    with pytest.raises(OutOfDomainError, match="past a reaper tick"):
        verdict(past_a_tick)


def test_an_abort_frees_its_slot_after_its_entry_goes_as_the_crate_does() -> None:
    """F6: an acquisition between an abort's removal and its count is refused."""
    full = replace(CONFIG, max_entries=1)
    refused = Outcome(
        error="ResourceExhausted", message="session affinity entry limit reached"
    )
    run = History(
        full,
        2,
        (
            call(1, 0, 1, Acquire("s1"), Initialize(1)),
            call(1, 2, 5, Abort(1)),
            Event(0, 3, 3, 4, Acquire("s1"), refused),
        ),
        None,
    )
    parts = [action.part for action in actions_of(run)]
    assert parts == ["call", "call", "count", "call"]
    assert not verdict(run, reaper_count="atomic").linearizable
    found = verdict(run, reaper_count=CRATE_REAPER_COUNT)
    assert found.linearizable
    assert [action.part for action in found.order] == ["call", "call", "call", "count"]


def test_a_replica_update_is_read_atomically_or_as_the_crate_does() -> None:
    """Sequence observed first: a commit in between outranks the update."""
    run = history_of(
        call(0, 0, 1, Acquire("s0"), Initialize(1)),
        call(
            1,
            2,
            5,
            ApplyReplica("s0", Target(2), Version(3, 1)),
            ReplicaOutcome.IGNORED_CONFLICT,
        ),
        call(0, 3, 4, Commit(1, Target(1)), 2),
    )
    assert not verdict(run, "atomic").linearizable
    found = verdict(run, "observe_first")
    assert found.linearizable
    assert [action.part for action in found.order][1:4] == ["observe", "call", "call"]


def test_a_pending_call_may_or_may_not_have_taken_effect() -> None:
    """Cut before it returned, a commit may explain a query's answer, or not."""
    run = history_of(
        call(0, 0, 1, Acquire("s0"), Initialize(1)),
        call(0, 2, 9, Commit(1, Target(1)), 2),
        call(1, 3, 4, Query("s0"), Target(1)),
        call(1, 5, 6, PollWaiter(99), value=True),
    )
    cut = prefix(run, 4)
    assert [event.pending for event in cut.events] == [False, True, False]
    assert verdict(cut).linearizable
    assert verdict(prefix(run, 1)).linearizable


def test_a_pending_advance_may_not_have_moved_the_clock() -> None:
    """Cut while an advance runs: neither its move nor its pass need have happened."""
    run = history_of(
        call(0, 0, 9, Advance(CONFIG.ttl_ns)),
        call(1, 1, 2, Query("s0"), None),
    )
    cut = prefix(run, 2)
    assert [event.pending for event in cut.events] == [True, False]
    assert verdict(cut).linearizable


def test_the_shortest_failure_is_the_first_failing_prefix() -> None:
    """Calls after the point of failure are cut away."""
    run = history_of(
        call(0, 0, 1, Acquire("s0"), Initialize(1)),
        call(1, 2, 3, Acquire("s0"), Initialize(2)),
        call(0, 4, 5, Query("s1"), None),
        call(1, 6, 7, Query("s1"), None),
    )
    shortest = shortest_failure(run)
    assert len(shortest.events) == 2
    assert not verdict(shortest).linearizable


# ---- publications and the census additions -----------------------------------

WRITER = 9
"""The sink's writer id in hand-made histories."""


def publishing(event: Event, *items: Published) -> Event:
    """`event` with what it published, at the instants right after its invocation."""
    assert event.invoked + len(items) < event.returned, "room inside the call"
    return replace(
        event,
        published=items,
        published_at=tuple(event.invoked + 1 + k for k in range(len(items))),
    )


def with_sink(*events: Event, census: Census | None = None) -> History:
    """A history of two threads over `CONFIG`, recorded with a sink."""
    return History(CONFIG, 2, events, census, writer_id=WRITER)


def bound_s0(version: Version, *, census: Census | None = None) -> History:
    """One thread binds s0 to target 1; the commit published at `version`."""
    return with_sink(
        call(0, 0, 1, Acquire("s0"), Initialize(1)),
        publishing(
            call(0, 2, 4, Commit(1, Target(1)), 2),
            Published("s0", Target(1), version),
        ),
        census=census,
    )


def test_a_publication_is_part_of_the_calls_result() -> None:
    """A commit must publish the version and target the model predicts, once."""
    assert verdict(bound_s0(Version(1, WRITER))).linearizable
    assert not verdict(bound_s0(Version(2, WRITER))).linearizable
    assert not verdict(bound_s0(Version(1, WRITER + 1))).linearizable
    silent = replace(
        bound_s0(Version(1, WRITER)),
        events=tuple(
            replace(e, published=(), published_at=())
            for e in bound_s0(Version(1, WRITER)).events
        ),
    )
    assert not verdict(silent).linearizable, "a sink that heard nothing"
    assert verdict(replace(silent, writer_id=None)).linearizable, "no sink at all"


def commit_publishing(
    thread: int, span: tuple[int, int], at: int, handles: tuple[int, int], sequence: int
) -> Event:
    """Thread `thread` commits `handles[0]` (session s<thread>) to target 1.

    The commit returns lease `handles[1]` and published at instant `at`.
    """
    invoked, returned = span
    assert invoked < at < returned
    return replace(
        call(thread, invoked, returned, Commit(handles[0], Target(1)), handles[1]),
        published=(Published(f"s{thread}", Target(1), Version(sequence, WRITER)),),
        published_at=(at,),
    )


def test_publications_between_calls_may_follow_another_order() -> None:
    """Overlapping commits may publish out of version order; ordered ones may not."""
    acquisitions = (
        call(0, 0, 1, Acquire("s0"), Initialize(1)),
        call(1, 2, 3, Acquire("s1"), Initialize(2)),
    )
    overlapping = with_sink(
        *acquisitions,
        commit_publishing(0, (4, 9), 8, (1, 3), 1),
        commit_publishing(1, (5, 10), 6, (2, 4), 2),
    )
    assert verdict(overlapping).linearizable, "the sink heard version 2 first"
    ordered = with_sink(
        *acquisitions,
        commit_publishing(0, (4, 6), 5, (1, 3), 2),
        commit_publishing(1, (7, 9), 8, (2, 4), 1),
    )
    assert not verdict(ordered).linearizable, "s0's commit returned before s1's"


def test_the_census_compares_targets_and_the_version_counter() -> None:
    """After the run the bound target and the next version are checked too."""
    right = Census(
        0,
        1,
        (("s0", 1),),
        targets=(("s0", Target(1)), ("s1", None)),
        next_version=Version(2, WRITER),
    )
    assert verdict(bound_s0(Version(1, WRITER), census=right)).linearizable
    for wrong in (
        replace(right, targets=(("s0", Target(2)), ("s1", None))),
        replace(right, targets=(("s0", Target(1)), ("s1", Target(1)))),
        replace(right, next_version=Version(3, WRITER)),
        replace(right, next_version=Version(2, 0)),
    ):
        assert not verdict(bound_s0(Version(1, WRITER), census=wrong)).linearizable
    unread = replace(right, targets=None, next_version=None)
    assert verdict(bound_s0(Version(1, WRITER), census=unread)).linearizable


# ---- files -------------------------------------------------------------------


def failing_history() -> History:
    """A small non-linearizable history with a census."""
    return history_of(
        call(0, 0, 3, Acquire("s0"), Initialize(1)),
        call(1, 1, 2, Acquire("s0"), Initialize(2)),
        census=Census(0, 1, (("s0", 0),)),
    )


def test_a_history_file_round_trips_byte_for_byte(tmp_path: Path) -> None:
    """Written, read and written again, a history file is unchanged."""
    file = history_files.record(failing_history(), "two initializers")
    path = history_files.save(file, tmp_path / "h.json")
    again = history_files.load(path)
    assert again.history == file.history
    assert not again.linearizable
    second = history_files.save(again, tmp_path / "again.json")
    assert second.read_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda text: text.replace('"thread": 1', '"thread": 5'), "is not one of 2"),
        (
            lambda text: text.replace('"returned": 2', '"returned": 0'),
            "returned before",
        ),
        (lambda text: text.replace('"observe_first"', '"eventual"'), "unknown reading"),
        (lambda text: text.replace('"thread": 1', '"thread": 0'), "overlap"),
        (
            lambda text: text.replace('"returned": 3', f'"returned": {2**64}'),
            "outside the driver's u64 counter",
        ),
        (lambda text: text.replace('"invoked": 1', '"invoked": -1'), "outside"),
        (lambda text: text.replace('"threads": 2', '"threads": 0'), "outside 1..64"),
        (lambda text: text.replace('"threads": 2', '"threads": 65'), "outside 1..64"),
    ],
)
def test_a_malformed_history_is_refused_in_one_line(
    tmp_path: Path, edit: object, problem: str
) -> None:
    """The loader names the place and the problem."""
    path = history_files.save(
        history_files.record(failing_history(), "x"), tmp_path / "h.json"
    )
    assert callable(edit)
    path.write_text(edit(path.read_text()))
    with pytest.raises(InputError, match=problem):
        history_files.load(path)
    done = run_module("ci.replay", str(path), timeout_s=REPLAY_TIMEOUT_S)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1


def published_history() -> History:
    """A linearizable history with a publication and a full census."""
    census = Census(
        0,
        1,
        (("s0", 1),),
        targets=(("s0", Target(1)), ("s1", None)),
        next_version=Version(2, WRITER),
    )
    return bound_s0(Version(1, WRITER), census=census)


def test_a_history_with_publications_round_trips(tmp_path: Path) -> None:
    """Publications, their instants, the writer and the census additions survive."""
    file = history_files.record(published_history(), "one commit")
    assert file.linearizable
    path = history_files.save(file, tmp_path / "h.json")
    again = history_files.load(path)
    assert again.history == file.history
    second = history_files.save(again, tmp_path / "again.json")
    assert second.read_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            lambda text: text.replace('"history_format": 2', '"history_format": 3'),
            "unsupported history format 3",
        ),
        (
            lambda text: text.replace('"history_format": 2,', ""),
            "unsupported history format 1",
        ),
        (lambda text: text.replace('"at": 3', '"at": 4'), "outside the call"),
        (lambda text: text.replace('"at": 3', '"at": 2'), "outside the call"),
        (
            lambda text: text.replace('"writer_id": 9', '"writer_id": null'),
            "without a sink",
        ),
        (
            lambda text: text.replace('"next_version": {', '"next_version": {"x": 1,'),
            "unknown field",
        ),
        (lambda text: text.replace('"targets": [', '"target": ['), "field"),
    ],
)
def test_a_malformed_publication_or_format_is_refused_in_one_line(
    tmp_path: Path, edit: object, problem: str
) -> None:
    """Format, publication instants and the sink are checked; exit 2, one line."""
    path = history_files.save(
        history_files.record(published_history(), "x"), tmp_path / "h.json"
    )
    assert callable(edit)
    edited = edit(path.read_text())
    assert edited != path.read_text(), "the edit applies"
    path.write_text(edited)
    with pytest.raises(InputError, match=problem):
        history_files.load(path)
    done = run_module("ci.replay", str(path), timeout_s=REPLAY_TIMEOUT_S)
    assert (done.returncode, len(done.stderr.strip().splitlines())) == (2, 1)


def test_publications_out_of_the_sinks_order_are_refused(tmp_path: Path) -> None:
    """A call's publications are listed in increasing instants."""
    run = with_sink(
        call(0, 0, 1, Acquire("s0"), Initialize(1)),
        replace(
            call(0, 2, 6, Commit(1, Target(1)), 2),
            published=(Published("s0", Target(1), Version(1, WRITER)),) * 2,
            published_at=(4, 3),
        ),
    )
    path = history_files.save(history_files.record(run, "x"), tmp_path / "h.json")
    with pytest.raises(InputError, match="out of the sink's order"):
        history_files.load(path)


def test_a_call_after_a_pending_call_on_its_thread_is_refused(tmp_path: Path) -> None:
    """A pending call never returned: its thread cannot have called again."""
    run = history_of(
        call(0, 0, 1, Acquire("s0"), Initialize(1)),
        replace(call(0, 2, 3, Commit(1, Target(1)), 2), pending=True),
        call(0, 4, 5, Query("s0"), Target(1)),
    )
    path = history_files.save(history_files.record(run, "x"), tmp_path / "h.json")
    with pytest.raises(InputError, match="a call follows a pending call"):
        history_files.load(path)
    done = run_module("ci.replay", str(path), timeout_s=REPLAY_TIMEOUT_S)
    assert (done.returncode, len(done.stderr.strip().splitlines())) == (2, 1)


def test_a_pending_call_returns_at_infinity_whatever_its_file_says() -> None:
    """An early `returned` on a pending call orders nothing after it."""
    run = history_of(
        call(0, 0, 1, Acquire("s0"), Initialize(1)),
        replace(call(0, 2, 3, Commit(1, Target(1)), 2), pending=True),
        call(1, 5, 6, Query("s0"), None),
    )
    assert verdict(run).linearizable, "the commit may not have taken effect"
    done = replace(run, events=tuple(replace(e, pending=False) for e in run.events))
    assert not verdict(done).linearizable, "returned at 3, it precedes the query"


def test_split_actions_keep_their_order_whatever_the_input_order() -> None:
    """An advance's clock precedes its reap by the lane key, not by a stable sort."""
    run = history_of(call(0, 0, 1, Advance(CONFIG.ttl_ns), None))
    actions = actions_of(run)
    lane = lanes_of(tuple(reversed(actions)))[0]
    assert [a.part for a in lane] == ["clock", "reap", "count"]


def test_a_history_replays_without_canary_or_rust(tmp_path: Path) -> None:
    """`--canary` and `--emit rust` mean nothing for a history: usage errors."""
    path = history_files.save(
        history_files.record(failing_history(), "x"), tmp_path / "h.json"
    )
    for flags in (["--canary", "lifo_ties"], ["--emit", "rust"]):
        done = run_module("ci.replay", str(path), *flags, timeout_s=REPLAY_TIMEOUT_S)
        assert done.returncode == 2, done.stderr
        assert "history" in done.stderr


# ---- the binding's driver ------------------------------------------------------


def run(programs: Sequence[Sequence[ThreadOp]], canary: str | None = None) -> History:
    """Programs against the crate."""
    from impl.adapter import run_concurrent  # noqa: PLC0415 - needs the binding

    return run_concurrent(CONFIG, programs, 1, SESSIONS, canary)


@pytest.mark.crate
@pytest.mark.parametrize(
    ("programs", "problem"),
    [
        ([[], [ThreadOp("advance", delta_ns=1)]], "only thread 0"),
        ([[ThreadOp("bogus")]], "unknown operation"),  # type: ignore[arg-type]
        ([[]] * 65, "between 1 and 64"),
        ([], "between 1 and 64"),
    ],
)
def test_the_driver_refuses_what_it_cannot_run(
    programs: list[list[ThreadOp]], problem: str
) -> None:
    """A bad program is refused before any thread starts."""
    with pytest.raises(InvalidArgumentError, match=problem):
        run(programs)
    with pytest.raises(InvalidArgumentError, match="unknown canary"):
        run([[ThreadOp("query", "s0")]], canary="nope")


@pytest.mark.crate
@pytest.mark.parametrize("kind", ["drop", "?", "Advance"])
def test_a_recorded_call_the_adapter_cannot_read_is_refused(kind: str) -> None:
    """An unknown recorded call is a ValueError, never read as a clock advance."""
    from impl.adapter import concurrent  # noqa: PLC0415 - needs the binding

    with pytest.raises(ValueError, match=f"cannot read: {kind!r}"):
        concurrent._call_in((kind, "s0", None, 1, None, 5))
    assert Advance(5) == concurrent._call_in(("advance", "", None, None, None, 5))


@pytest.mark.crate
def test_the_driver_records_every_call_with_its_instants() -> None:
    """Invocation before response, one counter, census after the threads."""
    from impl.adapter import CONCURRENT_WRITER_ID  # noqa: PLC0415 - the binding

    programs = [
        [ThreadOp("acquire", "s0"), ThreadOp("commit", "s0", Target(1), 0)],
        [ThreadOp("query", "s1"), ThreadOp("advance", delta_ns=1)],
    ]
    with pytest.raises(InvalidArgumentError):
        run(programs)  # thread 1 may not advance
    recorded = run(list(reversed(programs)))
    instants = sorted(
        instant
        for event in recorded.events
        for instant in (event.invoked, event.returned, *event.published_at)
    )
    assert instants == list(range(len(instants)))
    assert all(e.invoked < e.returned for e in recorded.events)
    expected_census = Census(
        1,
        1,
        (("s0", 1), ("s1", None)),
        targets=(("s0", Target(1)), ("s1", None)),
        next_version=Version(2, CONCURRENT_WRITER_ID),
    )
    assert expected_census == recorded.census
    (commit,) = (e for e in recorded.events if isinstance(e.call, Commit))
    assert commit.published == (
        Published("s0", Target(1), Version(1, CONCURRENT_WRITER_ID)),
    )
    assert verdict(recorded).linearizable


CANARIES = ("split_commit", "torn_version", "lost_publication", "stray_version")
"""The driver's broken variants (`impl/src/concurrent.rs`), one per observed
quantity: commits, versions, publications, the census's version counter."""


@pytest.mark.crate
@pytest.mark.parametrize("name", CANARIES)
def test_a_canary_is_harmless_on_one_thread(name: str) -> None:
    """Without a second thread no canary's window opens: one thread linearizes."""
    from impl.adapter import run_concurrent  # noqa: PLC0415 - needs the binding

    program = [
        ThreadOp("acquire", "s0"),
        ThreadOp("query", "s1"),
        ThreadOp("commit", "s0", Target(1), 0),
        ThreadOp("join", "s1", Target(2)),
        ThreadOp("acquire", "s1"),
        ThreadOp("acquire", "s1"),
        ThreadOp("commit", "s1", Target(2), 2),
        ThreadOp("drop", "s0", None, 0),
        ThreadOp("query", "s0"),
    ]
    for seed in range(20):
        alone = run_concurrent(CONFIG, [program], seed, SESSIONS, name)
        assert len(alone.publications()) >= 2
        assert verdict(alone).linearizable
        assert version_order.violations(alone) == []


@pytest.mark.crate
@pytest.mark.parametrize("name", CANARIES)
def test_a_canary_is_caught_and_replays(tmp_path: Path, name: str) -> None:
    """Each broken driver fails the pr-profile check; its artifact replays as such."""
    from impl.adapter import run_concurrent  # noqa: PLC0415 - needs the binding

    def canary(
        config: AffinityConfig, programs: Sequence[Sequence[ThreadOp]], seed: int
    ) -> History:
        return run_concurrent(config, programs, seed, SESSIONS, name)

    capture.reset()
    # Threads interleave anew on every run: Hypothesis' shrink would mostly end
    # as flaky, so detection stops at the first failing history, which the
    # history minimizer shortens (`minimal.json`). Hypothesis still replays
    # that example once to report it, which may not fail again: either report.
    with pytest.raises(Exception) as caught:  # noqa: PT011 - either report
        check_scenarios(canary, f"canary-{name.replace('_', '-')}", detect_only=True)
    (failed,) = capture.failed_histories()
    assert failed.check in {"linearizable", "version_order"}
    assert (
        not verdict(failed.history).linearizable
        or version_order.violations(failed.history) != []
    )
    folder = write_history_artifact(failed, "canary", str(caught.value), root=tmp_path)
    done = run_module(
        "ci.replay", str(folder / "minimal.json"), timeout_s=REPLAY_TIMEOUT_S
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "NOT LINEARIZABLE" in done.stdout or "VERSIONS OUT OF ORDER" in done.stdout
    whole = history_files.load(folder / "history.json")
    minimal = history_files.load(folder / "minimal.json")
    assert not whole.linearizable
    assert len(minimal.history.events) <= len(whole.history.events)


# ---- the corpus of histories -------------------------------------------------

HISTORIES = sorted(
    (REPO_ROOT / "ci" / "replay" / "corpus" / "histories").glob("*.json")
)


def test_the_corpus_keeps_the_crates_races() -> None:
    """The histories the check found in the crate are kept."""
    assert [path.stem for path in HISTORIES] == [
        "abort_refuses_a_removed_session_at_capacity",
        "reaper_refuses_a_removed_session_at_capacity",
        "replica_update_applies_at_a_stale_clock",
        "replica_update_races_a_commit",
    ]


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.stem)
def test_a_corpus_history_keeps_its_verdict(path: Path) -> None:
    """Each history keeps its verdict; the crate's readings explain it."""
    kept = history_files.load(path)
    as_recorded = verdict(
        kept.history, kept.replica_apply, reaper_count=kept.reaper_count
    )
    assert as_recorded.linearizable == kept.linearizable
    assert verdict(kept.history, CRATE_REPLICA_APPLY).linearizable
    done = run_module("ci.replay", str(path), timeout_s=REPLAY_TIMEOUT_S)
    assert done.returncode == (0 if kept.linearizable else 1), done.stderr
    explained = run_module(
        "ci.replay",
        str(path),
        "--reading",
        CRATE_REPLICA_APPLY,
        "--reaper-count",
        CRATE_REAPER_COUNT,
        timeout_s=REPLAY_TIMEOUT_S,
    )
    assert explained.returncode == 0, explained.stdout


def test_the_reaper_count_is_read_as_the_file_says(tmp_path: Path) -> None:
    """The cleanup finding fails read atomically and passes read as the crate does."""
    path = (
        REPO_ROOT
        / "ci/replay/corpus/histories/"
        / ("reaper_refuses_a_removed_session_at_capacity.json")
    )
    kept = history_files.load(path)
    assert kept.reaper_count == "atomic"
    assert not kept.linearizable
    assert not verdict(kept.history, reaper_count="atomic").linearizable
    refused = [e for e in kept.history.events if e.outcome.error == "ResourceExhausted"]
    assert len(refused) == 1, "the one refusal no atomic pass allows"
    edited = path.read_text().replace('"reaper_count": "atomic"', '"reaper_count": "x"')
    bad = tmp_path / "bad.json"
    bad.write_text(edited)
    done = run_module("ci.replay", str(bad), timeout_s=REPLAY_TIMEOUT_S)
    assert (done.returncode, len(done.stderr.strip().splitlines())) == (2, 1)
    assert "unknown reading 'x'" in done.stderr
