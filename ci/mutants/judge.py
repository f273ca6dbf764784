"""Judging one side of one mutant: caught, missed, timeout or error, and by what.

`judge_pytest` reads our suite's exit code and output (the failing test id and
the first assertion line name the check); `judge_crate` reads `cargo test`'s.
"""

from __future__ import annotations

import re

from ci.mutants.report import Verdict
from ci.processes import ProcessResult

DETAIL_CHARS_MAX = 200
PYTEST_ERROR_CODES = {2: "interrupted", 3: "internal error", 4: "usage", 5: "no tests"}


# --- one side's verdict -------------------------------------------------------


def _clip(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= DETAIL_CHARS_MAX:
        return text
    return text[: DETAIL_CHARS_MAX - 3] + "..."


def _check_name(message: str) -> str:
    """`outcome`, `states`, `violated: <names>`, ... from an assertion line."""
    text = message.removeprefix("AssertionError:").strip()
    if text.startswith("violated:"):
        return _clip(text)
    prefix = re.match(r"([A-Za-z_][\w '\"]{0,40}):", text)
    if prefix and not prefix.group(1).endswith(("Error", "Exception")):
        return prefix.group(1)
    error = re.match(r"([\w.]+(?:Error|Exception|Panic)\w*)", text)
    if error:
        return error.group(1)
    if text.startswith("assert "):
        return "assert " + _clip(text.removeprefix("assert "))[:60]
    return _clip(text)[:60]


DEADLOCK = re.compile(
    r"(?P<line>deadlock: \S+ did not return within \d+ ms) \((?P<test>[^)\s]+)\)"
)
"""The crate watchdog's line: the call, the limit and the test it ended."""


def pytest_failures(output: str) -> list[str]:
    """Node ids from pytest's short summary (`FAILED id` and `ERROR id`)."""
    return re.findall(r"(?m)^(?:FAILED|ERROR) (\S+)", output)


def judge_pytest(result: ProcessResult) -> Verdict:
    """Our side's verdict from pytest's exit code and output."""
    if result.returncode is None:
        return Verdict("timeout", result.seconds)
    if result.returncode == 0:
        return Verdict("missed", result.seconds)
    if result.returncode < 0:
        crash = f"process killed by signal {-result.returncode}"
        return Verdict("caught", result.seconds, check="crash", detail=crash)
    if result.returncode != 1:
        reason = PYTEST_ERROR_CODES.get(result.returncode, "unknown")
        tail = _clip(result.output[-DETAIL_CHARS_MAX:])
        return Verdict("error", result.seconds, check=reason, detail=tail)
    deadlock = DEADLOCK.search(result.output)
    if deadlock:  # the crate watchdog ended the run (impl/adapter/lib.py)
        return Verdict(
            "caught",
            result.seconds,
            test_id=deadlock.group("test"),
            check="deadlock",
            detail=_clip(deadlock.group("line")),
        )
    failures = pytest_failures(result.output)
    first_error = re.search(r"(?m)^E +(\S.*)$", result.output)
    line = first_error.group(1) if first_error else ""
    return Verdict(
        "caught",
        result.seconds,
        test_id=failures[0] if failures else "",
        check=_check_name(line) if line else "",
        detail=_clip(line),
    )


def crate_failures(output: str) -> list[str]:
    """Names of the crate's failing tests, from libtest's closing `failures:` list."""
    listed = re.findall(r"(?m)^failures:\n((?:    \S+\n)+)", output)
    if listed:
        return [line.strip() for line in listed[-1].splitlines()]
    # Without the list (a crashed test binary), the per-test lines, both styles.
    return [
        found.group(1) or found.group(2)
        for found in re.finditer(
            r"(?m)^(?:test (\S+) \.\.\. FAILED|(\S+) --- FAILED)$", output
        )
    ]


def judge_crate(result: ProcessResult) -> Verdict:
    """The crate's side from `cargo test`'s exit code and output."""
    if result.returncode is None:
        return Verdict("timeout", result.seconds)
    if result.returncode == 0:
        return Verdict("missed", result.seconds)
    if "could not compile" in result.output:
        detail = _clip(result.output[-DETAIL_CHARS_MAX:])
        return Verdict("error", result.seconds, check="compile", detail=detail)
    failures = crate_failures(result.output)
    panic = re.search(r"panicked at ([^\n]*)\n([^\n]*)", result.output)
    signal_line = re.search(r"signal: \d+, SIG\w+", result.output)
    if panic:
        check = panic.group(1).rstrip(":")
        detail = panic.group(2)
    else:
        check = signal_line.group(0) if signal_line else "failed"
        detail = ""
    return Verdict(
        "caught",
        result.seconds,
        test_id=failures[0] if failures else "",
        check=_clip(check),
        detail=_clip(detail),
    )
