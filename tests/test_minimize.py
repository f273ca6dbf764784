"""`ci.replay.minimize`: delete steps while the same check still fails first."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci.canaries.affinity import CANARIES
from ci.replay.affinity import record
from ci.replay.command import replay
from ci.replay.minimize import MinimizeError, main, minimize
from ci.replay.trace import Trace, load, save
from model.affinity.ops import (
    Acquire,
    Advance,
    Commit,
    Join,
    PollWaiter,
    Query,
    Release,
)
from model.affinity.table import ModelAffinity
from model.affinity.types import SECOND_NS, AffinityConfig, Target

CONFIG = AffinityConfig(ttl_ns=10 * SECOND_NS)
NOISY = (
    Query("b"),
    Acquire("b"),
    Acquire("b"),
    Acquire("a"),
    Join("b", Target(2, 0)),
    PollWaiter(2),
    Commit(3, Target(1)),
    Advance(SECOND_NS),
    Release(5),
    Query("a"),
)
"""Session "a" is bound and released (steps 4, 7, 9) amid unrelated steps."""


def _trace(program: tuple[object, ...] = NOISY) -> Trace:
    return record(CONFIG, ("a", "b"), program, "noisy")  # type: ignore[arg-type]


def test_deleting_an_earlier_creator_renumbers_later_handles() -> None:
    """Without steps 2-3, session "a" gets handle 1 and its uses follow."""
    kept = _trace().kind.rebuild(_trace(), [3, 6, 8])

    assert [
        (3, Acquire("a")),
        (6, Commit(1, Target(1))),
        (8, Release(2)),
    ] == kept


def test_a_step_whose_handle_creator_was_deleted_goes_too() -> None:
    """Releasing a lease whose commit was deleted is dropped, not misdirected."""
    kept = _trace().kind.rebuild(_trace(), [3, 8])

    assert [(3, Acquire("a"))] == kept


def test_a_forgetful_release_minimizes_to_acquire_commit_release() -> None:
    """Ten steps become the three the failure needs."""
    minimal, _ = minimize(_trace(), CANARIES["forgetful_release"])

    assert (Acquire("a"), Commit(1, Target(1)), Release(2)) == minimal.ops


def test_the_minimal_trace_fails_the_same_check_first() -> None:
    """The minimized program's first failure is the original's."""
    canary = CANARIES["forgetful_release"]
    minimal, _ = minimize(_trace(), canary)

    original = replay(_trace(), canary, "canary").first_failure
    first = replay(minimal, canary, "canary").first_failure
    assert original is not None
    assert first is not None

    assert original.failed == first.failed


def test_a_trace_that_does_not_fail_cannot_be_minimized() -> None:
    """Minimizing an agreeing program is refused with a reason."""
    with pytest.raises(MinimizeError) as refused:
        minimize(_trace(), ModelAffinity)

    assert "the trace does not fail; nothing to minimize" == str(refused.value)


def test_the_replay_budget_is_a_hard_cap() -> None:
    """Running out of replays raises rather than returning a half-minimized trace."""
    with pytest.raises(MinimizeError) as refused:
        minimize(_trace(), CANARIES["forgetful_release"], replays_max=2)

    assert "more than 2 replays; giving up" == str(refused.value)


def test_the_command_writes_a_min_json_beside_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0; `<stem>.min.json` holds three steps; the replay line is printed."""
    path = save(_trace(), tmp_path / "noisy.json")

    status = main([str(path), "--canary", "forgetful_release"])

    assert 0 == status
    assert 3 == len(load(tmp_path / "noisy.min.json").steps)
    assert (
        f"python -m ci.replay {tmp_path / 'noisy.min.json'}" in capsys.readouterr().out
    )


def test_the_command_exits_one_when_nothing_fails(tmp_path: Path) -> None:
    """An agreeing trace has nothing to minimize: status 1."""
    path = save(_trace(), tmp_path / "noisy.json")

    assert 1 == main([str(path), "--against", "model"])


def test_the_command_exits_two_on_a_missing_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A usage error is one line on stderr and status 2."""
    status = main([str(tmp_path / "nowhere.json")])

    assert 2 == status
    assert 1 == len(capsys.readouterr().err.splitlines())
