"""A refused dispatch or pin says which session, where it is bound, and why.

The machine compares the kind of every refusal; here the words are compared
too. The message is what an operator reads in the router's log when a request
is refused, so it must name the session it refuses (a session id of several
UTF-8 bytes, to catch a message built from the wrong string) and both targets,
and model and crate must say it alike.
"""

from __future__ import annotations

import pytest
from affinity_support import FACTORIES

from model.affinity.api import AffinityApi
from model.affinity.types import (
    SECOND_NS,
    AffinityConfig,
    Bound,
    Initialize,
    Mode,
    Target,
)
from model.errors import InvalidArgumentError

pytestmark = pytest.mark.crate

SESSION = "sessión-7"
DISPATCH_REFUSALS: dict[str, tuple[Target, Target, str]] = {
    "another worker": (
        Target(1, 0),
        Target(2, 0),
        f"session {SESSION} is bound to worker 1, not 2",
    ),
    "another rank": (
        Target(1, 0),
        Target(1, 3),
        f"session {SESSION} is bound to DP rank 0, not 3",
    ),
    "no rank": (
        Target(1, 0),
        Target(1),
        (
            f"session {SESSION} is bound to DP rank 0, "
            "but dispatch did not select a DP rank"
        ),
    ),
}
PIN_REFUSALS: dict[str, tuple[Target, Target, str]] = {
    "another worker": (
        Target(4),
        Target(5),
        f"session {SESSION} is bound to worker 4, not 5",
    ),
    "a rank added": (
        Target(4),
        Target(4, 1),
        f"session {SESSION} has worker-only affinity and cannot add DP rank 1",
    ),
    "another rank": (
        Target(4, 2),
        Target(4, 1),
        f"session {SESSION} is bound to DP rank 2, not 1",
    ),
}


def _bound_table(side: str, mode: Mode, target: Target) -> AffinityApi:
    """A table with `SESSION` bound to `target` and no lease left."""
    api = FACTORIES[side](AffinityConfig(ttl_ns=SECOND_NS, mode=mode))
    step = api.try_acquire(SESSION, None)
    assert isinstance(step, Initialize)
    api.release(api.commit(step.handle, target))
    return api


@pytest.mark.parametrize("side", sorted(FACTORIES))
@pytest.mark.parametrize("case", sorted(DISPATCH_REFUSALS))
def test_a_hard_dispatch_elsewhere_is_refused_naming_the_session(
    side: str, case: str
) -> None:
    """Hard mode: committing a bound session elsewhere says where it is bound."""
    bound, dispatched, message = DISPATCH_REFUSALS[case]
    api = _bound_table(side, Mode.HARD, bound)
    step = api.try_acquire(SESSION, None)
    assert isinstance(step, Bound)

    with pytest.raises(InvalidArgumentError) as refused:
        api.commit(step.handle, dispatched)

    assert message == str(refused.value)


@pytest.mark.parametrize("side", sorted(FACTORIES))
@pytest.mark.parametrize("case", sorted(PIN_REFUSALS))
def test_a_pin_that_disagrees_with_the_binding_is_refused_naming_the_session(
    side: str, case: str
) -> None:
    """An explicit pin against the binding says where the session is bound."""
    bound, requested, message = PIN_REFUSALS[case]
    api = _bound_table(side, Mode.SOFT, bound)

    with pytest.raises(InvalidArgumentError) as refused:
        api.try_acquire(SESSION, requested)

    assert message == str(refused.value)
    assert bound == api.query_target(SESSION, None)
