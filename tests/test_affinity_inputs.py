"""Bad input gets a clear error and changes nothing, in model and crate alike."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from affinity_support import FACTORIES, Factory
from hypothesis import given
from hypothesis import strategies as st

from impl.adapter import HAS_MANUAL_CLOCK, CrateAffinity
from impl.adapter import parse_mode as crate_parse_mode
from model.affinity.api import AffinityApi
from model.affinity.table import CLOCK_NS_MAX
from model.affinity.types import (
    SECOND_NS,
    TTL_NS_MAX,
    AffinityConfig,
    Bound,
    Initialize,
    Mode,
    Target,
)
from model.affinity.types import parse_mode as model_parse_mode
from model.errors import (
    DroppedError,
    HandleError,
    InvalidArgumentError,
    RustPanicError,
)

TTL_MESSAGE = "session affinity TTL must be between 1 and 31536000 seconds"


@pytest.fixture(params=sorted(FACTORIES))
def build(request: pytest.FixtureRequest) -> Factory:
    """Each test runs against the model and against the crate."""
    return FACTORIES[request.param]


def _bound(table: AffinityApi, session_id: str, target: Target) -> int:
    step = table.try_acquire(session_id, None)
    assert isinstance(step, Initialize)
    return table.commit(step.handle, target)


@pytest.mark.parametrize(
    "ttl_ns", [0, SECOND_NS - 1, TTL_NS_MAX + 1, -1, 2**64], ids=str
)
def test_a_ttl_outside_one_second_to_one_year_is_rejected(
    build: Factory, ttl_ns: int
) -> None:
    """TTLs below 1 s or above 31,536,000 s (or not a u64) are InvalidArgument."""
    with pytest.raises(InvalidArgumentError) as raised:
        build(AffinityConfig(ttl_ns=ttl_ns))

    if 0 <= ttl_ns < 2**64:
        assert TTL_MESSAGE == str(raised.value)


@pytest.mark.parametrize(
    "ttl_ns", [SECOND_NS, SECOND_NS + 1, 3 * SECOND_NS // 2, TTL_NS_MAX], ids=str
)
def test_a_ttl_inside_the_range_is_accepted_at_full_precision(
    build: Factory, ttl_ns: int
) -> None:
    """1 s, 1 s + 1 ns, 1.5 s and the maximum are all valid TTLs."""
    table = build(AffinityConfig(ttl_ns=ttl_ns))

    assert 0 == table.now_ns


def test_a_negative_capacity_is_rejected(build: Factory) -> None:
    """max_entries below zero is InvalidArgument, not a crash."""
    with pytest.raises(InvalidArgumentError):
        build(AffinityConfig(ttl_ns=SECOND_NS, max_entries=-1))


def test_ids_are_measured_in_utf8_bytes_not_characters(build: Factory) -> None:
    """Three 2-byte characters exceed a 4-byte limit; two fit exactly."""
    table = build(AffinityConfig(ttl_ns=SECOND_NS, max_session_id_bytes=4))

    assert isinstance(table.try_acquire("ßß", None), Initialize)
    with pytest.raises(InvalidArgumentError) as raised:
        table.try_acquire("ßßß", None)
    assert "session affinity ID must not exceed 4 bytes" == str(raised.value)
    with pytest.raises(InvalidArgumentError):
        table.query_target("ßßß", None)
    assert 1 == table.entry_count()


def test_a_backwards_clock_is_rejected_and_changes_nothing(build: Factory) -> None:
    """Moving the clock back fails, leaving the clock and bindings as they were."""
    table = build(AffinityConfig(ttl_ns=10 * SECOND_NS))
    table.release(_bound(table, "a", Target(1, 0)))
    table.advance_clock(5 * SECOND_NS)

    with pytest.raises(InvalidArgumentError) as raised:
        table.advance_clock(5 * SECOND_NS - 1)

    assert "affinity clock cannot move backwards" == str(raised.value)
    assert 5 * SECOND_NS == table.now_ns
    assert Target(1, 0) == table.query_target("a", None)


@pytest.mark.parametrize("now_ns", [CLOCK_NS_MAX + 1, 2**64, 2**70], ids=str)
def test_an_overflowing_clock_is_rejected_and_changes_nothing(
    build: Factory, now_ns: int
) -> None:
    """A clock beyond the supported range (or a u64) fails without moving."""
    table = build(AffinityConfig(ttl_ns=SECOND_NS))
    table.advance_clock(7)

    with pytest.raises(InvalidArgumentError):
        table.advance_clock(now_ns)

    assert 7 == table.now_ns


def test_the_clock_may_stand_still(build: Factory) -> None:
    """Advancing to the current time is allowed and changes nothing."""
    table = build(AffinityConfig(ttl_ns=SECOND_NS))
    table.advance_clock(0)

    assert 0 == table.now_ns


def test_a_consumed_handle_cannot_be_reused(build: Factory) -> None:
    """Committing, releasing or aborting a consumed handle raises HandleError."""
    table = build(AffinityConfig(ttl_ns=SECOND_NS))
    step = table.try_acquire("a", None)
    assert isinstance(step, Initialize)
    lease = table.commit(step.handle, Target(1, None))

    with pytest.raises(HandleError):
        table.commit(step.handle, Target(1, None))
    with pytest.raises(HandleError):
        table.abort(step.handle)
    table.release(lease)
    with pytest.raises(HandleError):
        table.release(lease)
    with pytest.raises(HandleError):
        table.invalidate(lease)
    assert 0 == table.lease_count("a")


def test_a_handle_of_the_wrong_kind_is_refused_without_consuming_it(
    build: Factory,
) -> None:
    """Releasing an initialization is refused; the initialization stays usable."""
    table = build(AffinityConfig(ttl_ns=SECOND_NS))
    step = table.try_acquire("a", None)
    assert isinstance(step, Initialize)

    with pytest.raises(HandleError):
        table.release(step.handle)
    with pytest.raises(HandleError):
        table.waiter_done(step.handle)
    lease = table.commit(step.handle, Target(2, None))
    assert isinstance(table.try_acquire("a", None), Bound)
    assert lease > step.handle


def test_committing_after_the_table_is_dropped_reports_dropped(build: Factory) -> None:
    """An initialization outliving its table fails to commit with Dropped."""
    table = build(AffinityConfig(ttl_ns=SECOND_NS))
    step = table.try_acquire("a", None)
    assert isinstance(step, Initialize)
    table.drop_table()

    with pytest.raises(DroppedError):
        table.commit(step.handle, Target(1, None))
    with pytest.raises(HandleError):
        table.try_acquire("a", None)


def test_a_crate_panic_becomes_a_python_exception() -> None:
    """`expire_for_test` panics on a missing entry; Python gets RustPanicError."""
    table = CrateAffinity(AffinityConfig(ttl_ns=SECOND_NS))

    with pytest.raises(RustPanicError):
        table.expire_for_test("missing")
    assert isinstance(table.try_acquire("a", None), Initialize)


def test_a_panic_while_holding_an_entry_leaves_the_table_usable() -> None:
    """`expire_for_test` on an initializing entry panics; the table still works."""
    table = CrateAffinity(AffinityConfig(ttl_ns=SECOND_NS))
    step = table.try_acquire("a", None)
    assert isinstance(step, Initialize)

    with pytest.raises(RustPanicError):
        table.expire_for_test("a")
    lease = table.commit(step.handle, Target(1, None))
    assert 1 == table.lease_count("a")
    table.release(lease)
    assert 0 == table.lease_count("a")


MODE_TEXTS = ["hard", "soft", "Hard", "SOFT", " hard", "soft\n", "", "hard\x00", "hart"]


def _parsed(parse: Callable[[str], Mode], text: str) -> Mode | str:
    """The mode `parse` reads from `text`, or the refusal's message prefix."""
    try:
        return parse(text)
    except InvalidArgumentError as error:
        return str(error).split('"', 1)[0].split("'", 1)[0]


@given(text=st.sampled_from(MODE_TEXTS) | st.text(max_size=8))
def test_a_mode_is_read_from_its_exact_name_and_any_other_text_is_refused(
    text: str,
) -> None:
    """`hard` and `soft` parse to their modes, in crate and model; all else refused."""
    expected = _parsed(model_parse_mode, text)

    assert expected == _parsed(crate_parse_mode, text)
    assert expected in (*Mode, "invalid session affinity mode ")


@pytest.mark.parametrize(
    ("range_ns", "accepted"),
    [(SECOND_NS - 1, False), (0, False), (SECOND_NS, True), (5 * SECOND_NS, True)],
    ids=["ttl-1ns", "zero", "ttl", "5ttl"],
)
def test_a_manual_table_whose_first_deadline_overflows_is_refused(
    build: Factory, range_ns: int, accepted: bool
) -> None:
    """`with_manual_clock` at an origin where origin + TTL overflows is refused."""
    if build is CrateAffinity and not HAS_MANUAL_CLOCK:
        pytest.skip("the build has no manual clock (crates.io 1.6.1 has none)")
    config = AffinityConfig(
        ttl_ns=SECOND_NS, reaping="every_advance", instant_range_ns=range_ns
    )

    if accepted:
        assert 0 == build(config).entry_count()
    else:
        with pytest.raises(InvalidArgumentError, match="exceeds the supported Instant"):
            build(config)
