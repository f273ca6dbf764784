"""What every Rust export shares: the file's shape, literals and rustfmt.

An export is one Rust file that a Dynamo developer can paste into the crate's
tests: a header of `//` comments (what the trace shows, the crate, version
and features it was written for, which calls need the `testing` feature), the
`use` lines the test needs and no others (the file compiles under
`-D warnings`), and one test function whose body has one small block per
step, each under a comment giving the step number and the operation as the
replay table names it. Assertions name their step in their message.

Each subject writes its own body (`ci/replay/rust/affinity.py`,
`ci/replay/rust/queue.py`); `export` picks the writer the subject registry
(`ci.subjects`, `rust_writer`) names. A step the
build cannot express is an `ExportError` naming the step and what is
missing, raised before anything is written: there is never partial output.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ci import subjects
from ci.replay.envelope import trace_path

if TYPE_CHECKING:
    from ci.replay.trace import Trace

IMPL: Final[Path] = Path(__file__).resolve().parents[3] / "impl"
"""rustfmt runs here, so that `impl/rust-toolchain.toml` picks its version."""
RUSTFMT_TIMEOUT_S: Final[int] = 60
CRATE: Final[str] = "dynamo-kv-router"
CRATE_FEATURES: Final[tuple[str, ...]] = ("standalone-selection", "testing")
TOKIO_FEATURES: Final[tuple[str, ...]] = ("macros", "rt", "test-util", "time")
EMIT_COMMAND: Final[str] = "python -m ci.replay TRACE --emit rust"
TESTING_MARK: Final[str] = "// testing"
"""Trailing comment on every line that calls a hook of the `testing` feature."""
REPEAT_MIN: Final[int] = 17
"""A string of one character repeated this often is written as `"x".repeat(n)`."""
SECOND_NS: Final[int] = 1_000_000_000


class ExportError(Exception):
    """The trace cannot be written as a Rust test; the message says why."""


@dataclass(frozen=True)
class Capabilities:
    """What the built crate offers beyond the pinned crate's public API."""

    crate_version: str
    manual_clock: bool  # `with_manual_clock` / `advance_clock` (capability probe)


CapabilitiesSource = Callable[[], Capabilities]
"""Asked only when a trace needs a capability (the probe needs the binding)."""


@dataclass
class RustTest:
    """One exported test: header, imports, declarations and steps."""

    name: str
    attribute: str  # `#[test]` or `#[tokio::test(start_paused = true)]`
    header: list[str] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)
    declarations: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)

    def use(self, *paths: str) -> None:
        """Import these items (`std::time::Duration`, ...)."""
        self.imports.update(paths)

    def declare(self, *lines: str) -> None:
        """Lines at the top of the test, before the first step."""
        self.declarations.extend(lines)

    def line(self, *lines: str) -> None:
        """Statements of the current step."""
        self.body.extend(lines)

    def testing(self, statement: str) -> None:
        """A statement that calls a hook of the crate's `testing` feature."""
        self.body.append(f"{statement} {TESTING_MARK}")

    def step(self, index: int, shown: str, comment: str = "") -> None:
        """Start a step: a blank line and `// step N: <operation>`."""
        self.body.append("")
        self.body.append(f"// step {index}: {one_line(shown)}")
        if comment:
            self.body.append(f"// ({one_line(comment)})")

    def render(self) -> str:
        """The test as Rust source (before rustfmt)."""
        is_async = self.attribute.startswith("#[tokio::test")
        lines = [f"// {text}" if text else "//" for text in self.header]
        lines.append("")
        lines.extend(use_lines(self.imports))
        lines.append("")
        lines.append(self.attribute)
        lines.append(f"{'async ' if is_async else ''}fn {self.name}() {{")
        lines.extend(self.declarations)
        lines.extend(self.body)
        lines.append("}")
        return "\n".join(lines) + "\n"


def use_lines(paths: set[str]) -> list[str]:
    """`use a::b::{C, D};` lines, grouped by module, sorted."""
    modules: dict[str, list[str]] = {}
    for path in sorted(paths):
        module, _, item = path.rpartition("::")
        modules.setdefault(module, []).append(item)
    lines = []
    for module, items in sorted(modules.items()):
        listed = items[0] if len(items) == 1 else "{" + ", ".join(items) + "}"
        lines.append(f"use {module}::{listed};")
    return lines


# ---- literals ----------------------------------------------------------------


def one_line(text: str) -> str:
    """Text for a `//` comment: newlines folded into spaces."""
    return " ".join(text.split())


ESCAPES: Final[dict[str, str]] = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}
"""How a Rust string literal spells these; other unprintables go by code point."""


def rust_string(text: str) -> str:
    """A Rust string literal (UTF-8 kept; quotes and unprintables escaped)."""
    escaped = (
        ESCAPES.get(char, char if char.isprintable() else f"\\u{{{ord(char):x}}}")
        for char in text
    )
    return '"' + "".join(escaped) + '"'


def rust_format_string(text: str) -> str:
    """A literal for the message of `assert!`, `assert_eq!` or `panic!`.

    Those read it as a format string: a brace of the text (a session id of
    `{}`) is doubled, or the test does not compile.
    """
    return rust_string(text.replace("{", "{{").replace("}", "}}"))


def repeated(text: str) -> tuple[str, int] | None:
    """(char, count) when `text` is one character repeated at least `REPEAT_MIN`."""
    if len(text) >= REPEAT_MIN and text == text[0] * len(text):
        return text[0], len(text)
    return None


def str_expr(text: str) -> str:
    """A `&str` expression for `text` (a long run of one character as `repeat`)."""
    run = repeated(text)
    if run is None:
        return rust_string(text)
    return f"&{rust_string(run[0])}.repeat({run[1]})"


def string_expr(text: str) -> str:
    """A `String` expression for `text`."""
    run = repeated(text)
    if run is None:
        return f"{rust_string(text)}.to_string()"
    return f"{rust_string(run[0])}.repeat({run[1]})"


def shown_str(text: str) -> str:
    """A string as a message shows it: quoted, a long run abbreviated."""
    run = repeated(text)
    if run is None:
        return '"' + text + '"'
    return f'"{run[0]}" x {run[1]}'


def rust_int(number: int) -> str:
    """An integer literal, digits grouped by `_` from five digits on."""
    digits = str(abs(number))
    if len(digits) >= 5:
        groups = []
        while digits:
            groups.append(digits[-3:])
            digits = digits[:-3]
        digits = "_".join(reversed(groups))
    return ("-" if number < 0 else "") + digits


def rust_float(value: float) -> str:
    """An `f64` literal (`f64::NAN` and the infinities by name)."""
    if value != value:  # noqa: PLR0124 - NaN is the one value unequal to itself
        return "f64::NAN"
    if value in {float("inf"), float("-inf")}:
        return ("-" if value < 0 else "") + "f64::INFINITY"
    text = repr(float(value))
    return text if "." in text or "e" in text else text + ".0"


def duration(ns: int) -> str:
    """`Duration::from_secs(30)`, `from_millis`, `from_micros` or `from_nanos`."""
    for unit, factor in (
        ("secs", SECOND_NS),
        ("millis", 1_000_000),
        ("micros", 1_000),
    ):
        if ns % factor == 0:
            return f"Duration::from_{unit}({rust_int(ns // factor)})"
    return f"Duration::from_nanos({rust_int(ns)})"


def seconds(ns: int) -> str:
    """Nanoseconds as seconds for a reader: `30 s`, `49.999999999 s`."""
    whole, rest = divmod(ns, SECOND_NS)
    if rest == 0:
        return f"{whole} s"
    return f"{whole}.{rest:09d}".rstrip("0") + " s"


HEADER_WIDTH: Final[int] = 84


def wrapped(text: str) -> list[str]:
    """`text` in lines of at most `HEADER_WIDTH` characters, for the header."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > HEADER_WIDTH:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines


_NAME_UNSAFE = re.compile(r"[^a-z0-9_]+")


def test_name(stem: str) -> str:
    """A Rust function name from a file or folder name."""
    name = _NAME_UNSAFE.sub("_", stem.lower()).strip("_") or "trace"
    return name if name[0].isalpha() else f"trace_{name}"


# ---- the whole file ----------------------------------------------------------


def pinned_requirement() -> str:
    """The crate requirement and features of `impl/Cargo.toml` (`=1.6.1`)."""
    manifest = tomllib.loads((IMPL / "Cargo.toml").read_text(encoding="utf-8"))
    requirement: str = manifest["dependencies"][CRATE]["version"]
    return requirement


def header(trace: Trace, facts: Sequence[str]) -> list[str]:
    """The comment every export opens with: where it comes from, what it needs.

    Paragraphs are wrapped to `HEADER_WIDTH`, with an empty comment line between.
    """
    subject = trace.header.subject
    article = "An" if subject[0] in "aeiou" else "A"
    features = ", ".join(f'"{feature}"' for feature in CRATE_FEATURES)
    tokio = ", ".join(f'"{feature}"' for feature in TOKIO_FEATURES)
    paragraphs = [
        f"{article} {subject} trace, exported by `{EMIT_COMMAND}`. "
        + (trace.description or "(no description)"),
        (
            f"Recorded with {CRATE} {trace.header.crate_version}; written for "
            f"{CRATE} {pinned_requirement()} with features {features}, and tokio "
            f"with {tokio}."
        ),
        *facts,
    ]
    lines: list[str] = []
    for paragraph in paragraphs:
        lines.extend([*([""] if lines else []), *wrapped(paragraph)])
    return lines


def rustfmt(source: str) -> str:
    """`source` formatted by the pinned toolchain's rustfmt."""
    try:
        formatted = subprocess.run(
            ["rustfmt", "--edition", "2024", "--emit", "stdout"],  # noqa: S607 - the toolchain's rustfmt
            input=source,
            capture_output=True,
            text=True,
            check=False,
            cwd=IMPL,
            timeout=RUSTFMT_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise ExportError(f"rustfmt could not run ({error})") from None
    if formatted.returncode != 0:
        first = next(iter(formatted.stderr.strip().splitlines()), "no message")
        raise ExportError(f"rustfmt rejected the export: {first}")
    return formatted.stdout


def export(trace: Trace, name: str, capabilities: CapabilitiesSource) -> str:
    """The trace as one formatted Rust test named `name`."""
    subject = trace.header.subject
    writer_of = subjects.entry(subject).rust_writer
    if writer_of is None:
        raise ExportError(f"{subject} traces have no Rust export")
    writer = writer_of()
    test: RustTest = writer.write(trace, test_name(name), capabilities)
    return rustfmt(test.render())


def export_name(path: Path) -> str:
    """The test's name for a trace: the file's stem; in an artifact, the test's."""
    file = trace_path(path)
    if file.stem in {"trace", "minimal"}:
        return test_name(f"{file.parent.parent.name}_{file.stem}")
    return test_name(file.stem)


def probed_capabilities() -> Capabilities:
    """The build's capabilities, from `impl.probe` (needs the binding)."""
    try:
        from impl.adapter import CRATE_VERSION  # noqa: PLC0415 - only when asked
        from impl.probe import capabilities  # noqa: PLC0415 - idem
    except ImportError as error:
        raise ExportError(
            "this trace needs the capability probe, which needs the built "
            f"binding ({error})"
        ) from None
    return Capabilities(CRATE_VERSION, capabilities().has_manual_clock)
