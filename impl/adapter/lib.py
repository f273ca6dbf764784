"""What the adapter's modules share (`impl/src/lib.rs`): versions, errors, values.

The binding's build facts, the translation of its exceptions into
`model.errors`, and the conversions of targets and sequences.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Final

from impl import _native
from model.affinity.types import (
    Target,
)
from model.errors import (
    AffinityError,
    DroppedError,
    HandleError,
    InvalidArgumentError,
    ResourceExhaustedError,
    RustPanicError,
)

CRATE_VERSION: Final[str] = _native.CRATE_VERSION
CRATE_SOURCE: Final[str] = _native.CRATE_SOURCE
BUILD_PROFILE: Final[str] = _native.BUILD_PROFILE
"""The cargo profile of impl/Cargo.toml the extension was built in."""
OPT_LEVEL: Final[str] = _native.OPT_LEVEL
"""That profile's optimization level for the binding, as cargo gave it."""
DEBUG_ASSERTIONS: Final[bool] = _native.DEBUG_ASSERTIONS
"""Whether the binding was compiled with debug assertions (never, in a profile
of impl/Cargo.toml)."""
HAS_MANUAL_CLOCK: Final[bool] = _native.HAS_MANUAL_CLOCK
CLOCK_NS_MAX: Final[int] = _native.CLOCK_NS_MAX
SEQUENCE_OFFSET: Final[int] = 2**62
"""Crate sequence = model sequence + SEQUENCE_OFFSET (see the module docstring)."""
SEQUENCE_MODEL_MAX: Final[int] = 2**64 - 1 - SEQUENCE_OFFSET
"""The largest model-side sequence that maps onto a crate `u64`."""

_ERRORS: Final[tuple[tuple[type[BaseException], Callable[[str], Exception]], ...]] = (
    (_native.InvalidArgument, InvalidArgumentError),
    (_native.ResourceExhausted, ResourceExhaustedError),
    (_native.Dropped, DroppedError),
    (_native.HandleError, HandleError),
    (_native.RustPanic, RustPanicError),
)


class Translation:
    """A context manager that re-raises a binding exception as a `model.errors` one.

    A plain context manager rather than a `contextlib.contextmanager`
    generator: every read of the crate goes through one, and a generator
    costs a frame and two calls per use. Subclasses say how (`translate`).
    """

    __slots__ = ()

    def __enter__(self) -> None:
        """Nothing to set up."""

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Translate `error`, if any (`translate` raises ours or lets it go on)."""
        if error is not None:
            self.translate(error)

    def translate(self, error: BaseException) -> None:
        """Raise the `model.errors` exception for `error`; return to let it go on."""
        raise NotImplementedError


class _Translation(Translation):
    """The affinity table's exceptions, and an overflow, as `model.errors` ones."""

    __slots__ = ()

    def translate(self, error: BaseException) -> None:
        """Translate a binding exception or an overflow; others go on."""
        if isinstance(error, _native.AffinityError):
            for native, ours in _ERRORS:
                if isinstance(error, native):
                    raise ours(str(error)) from error
            raise AffinityError(str(error)) from error
        if isinstance(error, (_native.HandleError, _native.RustPanic)):
            for native, ours in _ERRORS:
                if isinstance(error, native):
                    raise ours(str(error)) from error
            return
        if isinstance(error, OverflowError):
            raise InvalidArgumentError(
                f"value out of the crate's range: {error}"
            ) from error


_TRANSLATION: Final[_Translation] = _Translation()


def _translated() -> _Translation:
    """The context that re-raises the binding's exceptions as `model.errors`."""
    return _TRANSLATION


def _target_out(target: Target) -> tuple[int, int | None]:
    return (target.worker, target.rank)


def _target_in(raw: tuple[int, int | None]) -> Target:
    return Target(worker=raw[0], rank=raw[1])


def _sequence_in(crate_sequence: int) -> int:
    return crate_sequence - SEQUENCE_OFFSET
