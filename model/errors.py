"""Errors shared by the reference model and the adapter.

The crate's `AffinityError` has three variants; both systems under test raise the
matching subclass so that a step's outcome compares by value. `HandleError` is
the suite's own: a handle was unknown or already consumed (the crate makes that
impossible by moving values; Python cannot, so both sides refuse it alike).
"""

from __future__ import annotations


class AffinityError(Exception):
    """`AffinityError` of the crate; `kind` names the variant."""

    kind = "AffinityError"


class InvalidArgumentError(AffinityError):
    """`AffinityError::InvalidArgument`."""

    kind = "InvalidArgument"


class ResourceExhaustedError(AffinityError):
    """`AffinityError::ResourceExhausted`."""

    kind = "ResourceExhausted"


class DroppedError(AffinityError):
    """`AffinityError::Dropped`: the table is gone."""

    kind = "Dropped"


class HandleError(Exception):
    """A handle was unknown, already consumed, or of the wrong kind."""

    kind = "HandleError"


class RustPanicError(Exception):
    """The crate panicked; the binding turned the panic into this exception."""

    kind = "RustPanic"


class UnsupportedError(Exception):
    """The pinned crate does not offer this operation (see the README table)."""

    kind = "Unsupported"


class PolicyConfigError(Exception):
    """A policy YAML document was rejected (`RouterPolicyConfigError`)."""

    kind = "PolicyConfigError"

    def __init__(self, stage: str, message: str) -> None:
        """Record whether parsing or validation rejected the document."""
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.message = message


class QueueUsageError(Exception):
    """A queue call the crate would panic on (e.g. an out-of-range class)."""

    kind = "QueueUsageError"


CLOCK_REFUSALS: tuple[tuple[str, str], ...] = (
    ("cannot move backwards", "backwards"),
    ("plus TTL exceeds the supported Instant range", "deadline_overflow"),
    ("uses the runtime clock", "runtime_table"),
    ("affinity clock beyond", "binding_range"),
    ("value out of the crate's range", "binding_range"),
)
"""Which check refused a clock update, recognised by its message."""


def clock_refusal(message: str) -> str | None:
    """The clock check a refusal message names (None: not a clock refusal)."""
    for fragment, refusal in CLOCK_REFUSALS:
        if fragment in message:
            return refusal
    return None


class SchedulerError(Exception):
    """An error `LocalScheduler` returned to a call; `kind` names it."""

    kind = "SchedulerError"

    def __init__(self, kind: str) -> None:
        """Record which error (`not_found`: `SequenceError::RequestNotFound`)."""
        super().__init__(kind)
        self.kind = kind
