"""Replica canaries: tables that merge replica updates wrongly, on purpose.

Each is a factory of one replica's table; the replica-network machine builds
every replica with it and must catch it by comparison with the reference
models (`tests/test_canaries.py`, by the check `CAUGHT_BY` names).
`ci.replay.replica` offers them (and the affinity canaries) to
`python -m ci.replay TRACE --canary NAME`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from model.affinity.api import AffinityApi
from model.affinity.table import Binding, ModelAffinity
from model.affinity.types import AffinityConfig, ReplicaOutcome, Target, Version


class WriterBlindReplicaModel(ModelAffinity):
    """Model variant: compares replica versions by sequence with `>=`, not `>`.

    The crate orders versions by (sequence, writer), so of two writers that
    bound a session at the same sequence, the greater writer wins everywhere.
    This table lets any update of an equal sequence move a live binding: the
    lesser writer's update wins too, and two replicas can swap bindings.
    """

    def apply_replica_update(
        self, session_id: str, target: Target, version: Version
    ) -> ReplicaOutcome:
        """Take an equal sequence from another writer as newer."""
        entry = self._entries.get(session_id)
        if (
            not self._dropped
            and len(session_id.encode()) <= self._config.max_session_id_bytes
            and isinstance(entry, Binding)
            and not self._expired(entry)
            and entry.target != target
            and version.sequence >= entry.version.sequence
        ):
            self.observe_replica_sequence(version.sequence)
            self._entries[session_id] = replace(
                entry,
                target=target,
                version=version,
                deadline_ns=self._now_ns + self._config.ttl_ns,
            )
            return ReplicaOutcome.REPLACED_NEWER
        return super().apply_replica_update(session_id, target, version)


CANARIES: dict[str, Callable[[AffinityConfig], AffinityApi]] = {
    "writer_blind_replica_model": WriterBlindReplicaModel,
}
"""Every replica canary; each must be caught by the replica-network machine."""

CAUGHT_BY: dict[str, str] = {
    "writer_blind_replica_model": "outcomes_agree",
}
"""The check that reports each canary first in its shrunk counterexample."""
