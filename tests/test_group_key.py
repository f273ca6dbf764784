r"""The sub-agent group key: `subagent_group_affinity_id`, crate against model.

The model's key is "\\x01sg:" + the lowercase hex of blake3(parent as UTF-8)
(SPEC B.15): 68 bytes for any parent. Where the build has the function (a
manual-clock tree), the crate must give the same key for every parent, empty,
ASCII, multi-byte UTF-8, up to and over the session-id byte limit, and the key
must work as a session id through the table exactly as the model says. The
pinned crate has no such function: the crate half is skipped with the reason.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from impl import adapter
from impl.adapter import CrateAffinity
from model.affinity.api import AffinityApi
from model.affinity.ops import Acquire, Commit, Op, Query, outcome_of
from model.affinity.table import GROUP_ID_PREFIX, ModelAffinity, group_affinity_id
from model.affinity.types import SECOND_NS, AffinityConfig, Initialize, Target
from model.errors import UnsupportedError

GROUP_ID_BYTES = 68
ID_LIMIT_BYTES = 256

parents = st.text(max_size=ID_LIMIT_BYTES + 44) | st.sampled_from(
    ("", "parent", "ß" * 128, "x" * ID_LIMIT_BYTES, "x" * (ID_LIMIT_BYTES + 1))
)


def _crate_has_group_key() -> bool:
    try:
        adapter.subagent_group_affinity_id("probe")
    except UnsupportedError:
        return False
    return True


needs_group_key = pytest.mark.skipif(
    not _crate_has_group_key(),
    reason="the build has no subagent_group_affinity_id (crates.io 1.6.1 has none)",
)


@given(parent=parents)
@example(parent="")
def test_the_model_key_is_68_bytes_of_prefix_and_lowercase_hex(parent: str) -> None:
    r"""Any parent gives "\x01sg:" and 64 lowercase hex digits."""
    key = group_affinity_id(parent)

    assert GROUP_ID_BYTES == len(key.encode())
    assert key.startswith("\x01sg:")
    assert set(key.removeprefix(GROUP_ID_PREFIX)) <= set("0123456789abcdef")


@needs_group_key
@given(parent=parents)
@example(parent="")
@example(parent="ß" * 200)
def test_the_crate_key_equals_the_model_key(parent: str) -> None:
    """The crate and the model give the same key for every parent."""
    assert group_affinity_id(parent) == adapter.subagent_group_affinity_id(parent)


def _through_the_table(api: AffinityApi, key: str) -> list[object]:
    ops: list[Op] = [Acquire(key, None)]
    outcomes = [outcome_of(api, ops[0])]
    step = outcomes[0].value
    if isinstance(step, Initialize):
        ops = [Commit(step.handle, Target(2, 1)), Query(key, None)]
        outcomes.extend(outcome_of(api, op) for op in ops)
    outcomes.append(outcome_of(api, Acquire(key, Target(1, None))))
    return [*outcomes, api.entry_count(), api.lease_count(key)]


@needs_group_key
@pytest.mark.parametrize("limit", [GROUP_ID_BYTES - 1, GROUP_ID_BYTES, ID_LIMIT_BYTES])
@pytest.mark.parametrize("reaping", ["runtime_reaper", "every_advance"])
def test_a_group_key_is_a_session_id_like_any_other(limit: int, reaping: str) -> None:
    """Bound, served, refused for another target, and refused over the id limit."""
    config = AffinityConfig(
        ttl_ns=10 * SECOND_NS,
        max_session_id_bytes=limit,
        reaping=reaping,  # type: ignore[arg-type]
    )
    key = adapter.subagent_group_affinity_id("parent-session")

    expected = _through_the_table(ModelAffinity(config), key)
    actual = _through_the_table(CrateAffinity(config), key)

    assert expected == actual
