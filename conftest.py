"""Suite-wide pytest options: which system under test the machines drive."""

from __future__ import annotations

import os

import pytest

from stateful.harness import AGAINST_ENV, AGAINST_NAMES, against_name

OLD_AGAINST = "--sut"  # old spelling, refused


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--against=crate|model` chooses the system under test in one place."""
    parser.addoption(
        "--against",
        choices=AGAINST_NAMES,
        default=None,
        help="system under test for the machines (default: crate)",
    )
    parser.addoption(OLD_AGAINST, default=None, help="refused: now --against")


def pytest_configure(config: pytest.Config) -> None:
    """Export the choice for the machines (and xdist workers)."""
    if config.getoption(OLD_AGAINST) is not None:
        raise pytest.UsageError(f"{OLD_AGAINST} is now --against (crate or model)")
    choice = config.getoption("--against")
    if choice is not None:
        os.environ[AGAINST_ENV] = choice
    try:
        against_name()
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:  # the crate watchdog's line reaches the terminal
        from impl.adapter.lib import before_deadlock_exit  # noqa: PLC0415 - lazy

        before_deadlock_exit(lambda: capture.suspend_global_capture(in_=False))
