"""A waiter is registered when `try_acquire` returns it, not when first polled.

The crate enables the waiter's `Notified` before it releases the session's
entry, so an initializer that commits or aborts before the waiter is first
polled still wakes it. The machine cannot show this: it reads every waiter
(`waiter_done`) after every step, which polls it at once. Here nothing polls
the waiter until the initializer is gone; model and crate must agree that it
is done.
"""

from __future__ import annotations

import pytest
from affinity_support import FACTORIES

from model.affinity.api import AffinityApi
from model.affinity.types import SECOND_NS, AffinityConfig, Initialize, Target, Wait

pytestmark = pytest.mark.crate

CONFIG = AffinityConfig(ttl_ns=SECOND_NS)


def _wake(api: AffinityApi, how: str, handle: int) -> None:
    if how == "commit":
        api.commit(handle, Target(1))
    else:
        api.abort(handle)


@pytest.mark.parametrize("side", sorted(FACTORIES))
@pytest.mark.parametrize("how", ["abort", "commit"])
def test_a_waiter_woken_before_its_first_poll_is_done(side: str, how: str) -> None:
    """The initializer commits or aborts before anyone polls the waiter."""
    api = FACTORIES[side](CONFIG)
    first = api.try_acquire("s", None)
    second = api.try_acquire("s", None)
    assert isinstance(first, Initialize)
    assert isinstance(second, Wait)

    _wake(api, how, first.handle)

    assert api.waiter_done(second.waiter)


@pytest.mark.parametrize("side", sorted(FACTORIES))
def test_every_waiter_woken_before_its_first_poll_is_done(side: str) -> None:
    """Several waiters, none polled, all woken by one commit."""
    api = FACTORIES[side](CONFIG)
    first = api.try_acquire("s", None)
    waiters = [api.try_acquire("s", None) for _ in range(3)]
    assert isinstance(first, Initialize)

    api.commit(first.handle, Target(2))

    assert all(isinstance(w, Wait) and api.waiter_done(w.waiter) for w in waiters)
