"""What the adapter's modules share (`impl/src/lib.rs`): versions, errors, values.

The binding's build facts, the translation of its exceptions into
`model.errors`, and the conversions of targets and sequences.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
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
"""The cargo profile of impl/Cargo.toml the binding was built in."""
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


DEADLOCK_MS_ENV: Final[str] = "VERIFY_DEADLOCK_MS"
DEADLOCK_MS_DEFAULT: Final[int] = 10_000
"""How long one call into the crate may take before it counts as a deadlock:
far above any call the suite makes (microseconds to milliseconds), so that a
loaded machine never trips it."""
EXIT_DEADLOCK: Final[int] = 1
"""The status of a process ended by the watchdog: a failure, as pytest's."""


class _Watchdog:
    """Ends the process when one call into the crate does not return in time.

    A call that deadlocks inside the crate (a lock held across a callback, say)
    can neither be interrupted nor killed: its thread stays blocked. The
    binding releases the GIL around every crate call (`guard`,
    impl/src/lib.rs), so this thread still runs: it samples the call in
    progress once per limit, and a call seen in progress at two samples in a
    row has run at least the limit. It then prints one line naming the call
    (`deadlock: commit did not return within 10000 ms`) and the test, keeps a
    note of it in the artifacts folder if one is set, and ends the process
    with `EXIT_DEADLOCK`: a failing step, never a hung CI job. The limit is a
    watchdog's, read from the wall clock; nothing the system under test does
    depends on it.
    """

    __slots__ = ("before_exit", "busy", "call", "limit_ms", "name", "started")

    def __init__(self) -> None:
        self.before_exit: list[Callable[[], object]] = []
        self.call = 0  # calls entered so far: progress
        self.busy = False  # a call is in progress
        self.name = ""  # the adapter method of the latest call
        self.started = False
        self.limit_ms = DEADLOCK_MS_DEFAULT

    def start(self) -> None:
        """Start the sampling thread (once per process)."""
        self.started = True
        text = os.environ.get(DEADLOCK_MS_ENV, "")
        self.limit_ms = int(text) if text.isascii() and text.isdigit() else 0
        self.limit_ms = self.limit_ms or DEADLOCK_MS_DEFAULT
        threading.Thread(target=self._watch, name="crate-watchdog", daemon=True).start()

    def _watch(self) -> None:
        seen = (-1, False)
        wake = threading.Event()  # never set: waits out one limit at a time
        while True:
            wake.wait(self.limit_ms / 1000)
            now = (self.call, self.busy)
            if now[1] and now == seen:
                self._deadlock()
            seen = now

    def _deadlock(self) -> None:
        test = os.environ.get("PYTEST_CURRENT_TEST", "").removesuffix(" (call)")
        check = f"deadlock: {self.name} did not return within {self.limit_ms} ms"
        line = f"{check} ({test})" if test else check
        folder = os.environ.get("VERIFY_ARTIFACTS_DIR")
        if folder:
            note = {"check": check, "test": test, "call": self.name}
            with contextlib.suppress(OSError):
                path = Path(folder) / f"deadlock-{os.getpid()}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(note, indent=2) + "\n", encoding="utf-8")
                line += f"; noted in {path}"
        for callback in self.before_exit:  # a test runner's capture, say
            with contextlib.suppress(Exception):
                callback()
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(line.replace("\n", " ") + "\n")
            sys.stderr.flush()
        os._exit(EXIT_DEADLOCK)


_WATCHDOG: Final[_Watchdog] = _Watchdog()


def before_deadlock_exit(callback: Callable[[], object]) -> None:
    """Run `callback` before the watchdog's line (pytest: stop capturing stderr)."""
    _WATCHDOG.before_exit.append(callback)


class Translation:
    """A context manager that re-raises a binding exception as a `model.errors` one.

    A plain context manager rather than a `contextlib.contextmanager`
    generator: every read of the crate goes through one, and a generator
    costs a frame and two calls per use. Subclasses say how (`translate`).
    Every call inside one runs under the crate watchdog (`_Watchdog`).
    """

    __slots__ = ()

    def __enter__(self) -> None:
        """Mark a crate call in progress for the watchdog (and name it)."""
        watchdog = _WATCHDOG
        if not watchdog.started:
            watchdog.start()
        watchdog.call += 1
        watchdog.name = sys._getframe(1).f_code.co_name  # noqa: SLF001 - the caller
        watchdog.busy = True

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Translate `error`, if any (`translate` raises ours or lets it go on)."""
        _WATCHDOG.busy = False
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
            for crate, ours in _ERRORS:
                if isinstance(error, crate):
                    raise ours(str(error)) from error
            raise AffinityError(str(error)) from error
        if isinstance(error, (_native.HandleError, _native.RustPanic)):
            for crate, ours in _ERRORS:
                if isinstance(error, crate):
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
