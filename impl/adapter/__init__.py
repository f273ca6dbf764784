"""The adapter: the crate's tables behind the model's Protocols.

This package holds the only modules that import the compiled `impl._native`
binding, one per source file of the binding (`impl/src/`): `lib` (build
facts, errors, value conversions), `affinity` (`CrateAffinity`),
`concurrent` (`run_concurrent`) and `queue` (`CratePolicyQueue`). They
convert Python values to the binding's tuples and back, map the binding's
exceptions onto `model.errors`, and hide one nondeterminism of the crate:

* Sequence numbers. A runtime-clock table starts its version sequence at the
  UNIX time in nanoseconds (the wall clock). Right after construction the
  adapter calls `observe_replica_sequence(SEQUENCE_OFFSET)`, which moves the
  crate's next sequence to exactly `SEQUENCE_OFFSET + 1`, and reports every
  sequence shifted down by `SEQUENCE_OFFSET` (and shifts replica sequences up),
  so the model sees local sequences 1, 2, 3, ... as on a manual-clock table.
  `SEQUENCE_OFFSET` (2**62) exceeds the wall clock in nanoseconds until 2116.
"""

from impl.adapter.affinity import (
    CrateAffinity,
    crate_default_config,
    parse_mode,
    raw_next_sequence_probe,
    subagent_group_affinity_id,
)
from impl.adapter.concurrent import (
    CONCURRENT_CANARIES,
    CONCURRENT_OPS_MAX,
    CONCURRENT_THREADS_MAX,
    CONCURRENT_WRITER_ID,
    run_concurrent,
)
from impl.adapter.lib import (
    BUILD_PROFILE,
    CLOCK_NS_MAX,
    CRATE_SOURCE,
    CRATE_VERSION,
    DEBUG_ASSERTIONS,
    HAS_MANUAL_CLOCK,
    OPT_LEVEL,
    SEQUENCE_MODEL_MAX,
    SEQUENCE_OFFSET,
)
from impl.adapter.queue import HAS_QUEUE_RECHECK, CratePolicyQueue, token_snapshot
from impl.adapter.scheduler import CrateScheduler

__all__ = [
    "BUILD_PROFILE",
    "CLOCK_NS_MAX",
    "CONCURRENT_CANARIES",
    "CONCURRENT_OPS_MAX",
    "CONCURRENT_THREADS_MAX",
    "CONCURRENT_WRITER_ID",
    "CRATE_SOURCE",
    "CRATE_VERSION",
    "DEBUG_ASSERTIONS",
    "HAS_MANUAL_CLOCK",
    "HAS_QUEUE_RECHECK",
    "OPT_LEVEL",
    "SEQUENCE_MODEL_MAX",
    "SEQUENCE_OFFSET",
    "CrateAffinity",
    "CratePolicyQueue",
    "CrateScheduler",
    "crate_default_config",
    "parse_mode",
    "raw_next_sequence_probe",
    "run_concurrent",
    "subagent_group_affinity_id",
    "token_snapshot",
]
