"""Traces exported as Rust tests: their shape, their refusals, and cargo's verdict.

The fast tests read the exported text. The last one is the proof of
faithfulness: every corpus trace's export compiles into one test binary of a
scratch cargo project outside the tree (`ci/replay/rust/cargo.py`), against
`dynamo-kv-router` with the version and features the binding pins, and
`cargo test` passes every one; the manual-clock traces are the only ones
refused. (The opposite direction -- an export that must fail -- is the smoke
mutant's, in `tests/test_mutants_smoke.py`.)
"""

from __future__ import annotations

import io
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from command_support import run_module

from ci import subjects
from ci.profiles import selected_profile
from ci.replay.affinity import record
from ci.replay.command import EXIT_AGREE, EXIT_USAGE
from ci.replay.command import main as replay_main
from ci.replay.rust.cargo import run_exports
from ci.replay.rust.clock import REST, TO_GRID, clock_moves
from ci.replay.rust.emit import (
    Capabilities,
    ExportError,
    export,
    export_name,
    rustfmt,
)
from ci.replay.trace import Trace, load, save
from model.affinity.ops import Acquire, Commit, CrateAdvance, Release
from model.affinity.types import SECOND_NS, AffinityConfig, Target

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "ci" / "replay" / "corpus"
TRACES = sorted(CORPUS.glob("*.json"))
PINNED = Capabilities(crate_version="1.6.1", manual_clock=False)
"""What the capability probe reports for the pinned crate (re-probed elsewhere)."""
MS_NS = 1_000_000
BUILDING_PROFILES = ("ci", "nightly")


def _pinned() -> Capabilities:
    return PINNED


def _export(path: Path) -> str:
    return export(load(path), export_name(path), _pinned)


def _steps(text: str) -> list[tuple[int, str]]:
    """(step number, the step's code) for every `// step N:` block, in order."""
    blocks = re.split(r"^ *// step (\d+): .*$", text, flags=re.MULTILINE)
    return [
        (int(number), code)
        for number, code in zip(blocks[1::2], blocks[2::2], strict=True)
    ]


def _manual(trace: Trace) -> bool:
    config = getattr(trace.setup, "config", None)
    return config is not None and config.clock == "manual"


def _unwritable(trace: Trace) -> bool:
    """A subject with no Rust writer (replica networks)."""
    return subjects.entry(trace.header.subject).rust_writer is None


@pytest.fixture(scope="module")
def exports() -> dict[str, str]:
    """Every corpus trace that runs on the runtime clock, exported, by test name."""
    return {
        export_name(path): _export(path)
        for path in TRACES
        if not _manual(load(path)) and not _unwritable(load(path))
    }


def test_every_runtime_corpus_trace_exports_and_every_manual_one_is_refused(
    exports: dict[str, str],
) -> None:
    """On a crate without the manual clock, exactly the manual-clock traces fail."""
    refused = []
    for path in TRACES:
        if export_name(path) not in exports:
            with pytest.raises(ExportError) as error:
                _export(path)
            refused.append((path.stem, str(error.value)))

    unwritable = {p.stem for p in TRACES if _unwritable(load(p))}
    manual = [r for r in refused if r[0] not in unwritable]
    assert sorted(p.stem for p in TRACES if _manual(load(p))) == [r[0] for r in manual]
    assert all("with_manual_clock / advance_clock" in r[1] for r in manual)
    assert all("have no Rust export" in r[1] for r in refused if r not in manual)
    assert len(TRACES) == len(exports) + len(refused)


@pytest.mark.parametrize(
    "name",
    [
        "e2_07_abort_and_commit_wake_waiters_and_release_starts_idle_ttl",
        "queue_c7_a_blocked_worker_lane_stays_blocked_until_emptied",
    ],
)
def test_each_step_is_a_block_under_a_comment_naming_it_as_the_table_does(
    name: str,
) -> None:
    """`// step N: <operation as the replay table shows it>`, in order, once each."""
    trace = load(CORPUS / f"{name}.json")

    text = _export(CORPUS / f"{name}.json")

    shown = [f"// step {s.index}: {trace.kind.show_op(s.op)}" for s in trace.steps]
    found = [line.strip() for line in text.splitlines() if "// step " in line]
    assert shown == found


def test_every_assertion_names_its_step(exports: dict[str, str]) -> None:
    """Each `assert!`/`assert_eq!` in step N's block has a message `"step N: ..."`."""
    for text in exports.values():
        for number, code in _steps(text):
            asserts = re.findall(r"assert(?:_eq)?!\((.*?)\);", code, flags=re.DOTALL)
            for body in asserts:
                assert f'"step {number}:' in body, body


def test_handles_are_named_locals_and_abort_release_and_waits_read_as_rust() -> None:
    """init_N / lease_N / waiter_N; an abort and a release are `drop`s; polls."""
    text = _export(
        CORPUS / "e2_07_abort_and_commit_wake_waiters_and_release_starts_idle_ttl.json"
    )

    assert "let AcquireStep::Held(Hold::Initialize(init_1)) = table" in text
    assert "let AcquireStep::Wait(mut waiter_2) = table" in text
    assert "drop(init_1);" in text
    assert "let lease_5 = init_3.commit(worker_1)" in text
    assert "drop(lease_5);" in text
    assert "waiter_2.as_mut().poll(&mut cx).is_ready()" in text
    assert "#[tokio::test(start_paused = true)]" in text


@pytest.mark.parametrize(
    ("from_ns", "to_ns", "moves"),
    [
        (0, 30 * SECOND_NS, [("sleep_until", 30 * SECOND_NS)]),
        (0, 3 * MS_NS // 2, [("sleep_until", MS_NS), (REST, MS_NS // 2)]),
        (MS_NS // 2, 7 * MS_NS // 10, [(REST, MS_NS // 5)]),
        (MS_NS // 2, 3 * MS_NS, [(TO_GRID, MS_NS // 2), ("sleep_until", 3 * MS_NS)]),
        (15 * SECOND_NS - 1, 15 * SECOND_NS, [(TO_GRID, 1)]),
        (5, 5, []),
    ],
    ids=["on grid", "onto and past", "inside one ms", "off, then on", "1 ns", "still"],
)
def test_the_paused_clock_moves_as_the_binding_moves_it(
    from_ns: int, to_ns: int, moves: list[tuple[str, int]]
) -> None:
    """Step to the 1 ms grid, sleep to the last grid point, step the rest."""
    assert moves == clock_moves(from_ns, to_ns)


def test_a_clock_move_the_binding_refuses_is_a_comment_without_code() -> None:
    """Moving beyond the binding's range changes nothing and runs nothing."""
    text = _export(
        CORPUS / "f4_clock_moves_beyond_the_supported_range_change_nothing.json"
    )
    trace = load(
        CORPUS / "f4_clock_moves_beyond_the_supported_range_change_nothing.json"
    )
    refused = {step.index for step in trace.steps if not step.expected.ok}

    blocks = dict(_steps(text))

    assert refused
    for number in sorted(refused):
        code = [line for line in blocks[number].splitlines() if line.strip()]
        assert all(line.strip().startswith("//") for line in code), code


def test_queue_predicates_are_written_as_data() -> None:
    """Saturated workers, the Any lane and paused classes appear as literals."""
    paused = _export(CORPUS / "queue_c5_a_paused_class_is_skipped.json")
    any_lane = _export(
        CORPUS / "queue_c5_the_any_lane_waits_while_shared_work_is_refused.json"
    )
    blocked = _export(
        CORPUS / "queue_c7_a_blocked_worker_lane_stays_blocked_until_emptied.json"
    )

    assert re.search(r"pop_next\(\|class, _, _\| class != \d\)", paused)
    assert "placement.is_some()" in any_lane
    assert "placement.is_none_or(|worker| ![w1_0].contains(&worker))" in blocked
    assert "queue.retain(|&(id, _)| ![1].contains(&id));" in blocked


FAILURES_EXAMPLE = re.compile(
    r"<!-- rust-export-example:begin \(generated by python -m ci.replay "
    r"(?P<trace>\S+) --emit rust\) -->\n```rust\n(?P<code>.*?)```\n"
    r"<!-- rust-export-example:end -->",
    flags=re.DOTALL,
)


def test_the_readme_shows_the_canary_counterexample_as_exported() -> None:
    """The example in docs/failures.md is today's export of the trace it names."""
    found = FAILURES_EXAMPLE.search(
        (REPO / "docs" / "failures.md").read_text(encoding="utf-8")
    )
    assert found is not None

    assert _export(REPO / found.group("trace")) == found.group("code")


def test_the_export_is_what_rustfmt_makes_of_it() -> None:
    """Formatting the output again changes nothing."""
    text = _export(CORPUS / "b16_virtual_ttl.json")

    assert text == rustfmt(text)


def test_braces_in_a_session_id_are_doubled_only_in_format_strings() -> None:
    """A session id of `{}` compiles: doubled in assert and panic, kept in expect."""
    config = AffinityConfig(ttl_ns=10 * SECOND_NS)
    trace = record(config, ("{}",), (Acquire("{}"),), "A session id with braces.")

    text = export(trace, "braces", _pinned)

    assert '.expect("step 1: try_acquire(\\"{}\\")")' in text
    assert 'panic!("step 1: try_acquire(\\"{{}}\\") should initialize");' in text


def _crate_advance_trace(tmp_path: Path) -> Path:
    config = AffinityConfig(ttl_ns=10 * SECOND_NS)
    ops = (Acquire("a"), CrateAdvance(SECOND_NS))
    return save(
        record(config, ("a",), ops, "The crate's own clock."), tmp_path / "t.json"
    )


def test_a_step_the_crate_lacks_is_refused_naming_the_step(tmp_path: Path) -> None:
    """A CrateAdvance needs `advance_clock`: the error names step 2 and the call."""
    path = _crate_advance_trace(tmp_path)

    with pytest.raises(ExportError) as refused:
        export(load(path), "t", _pinned)

    assert str(refused.value).startswith("step 2: CrateAdvance calls the crate's")
    assert "advance_clock" in str(refused.value)


PINNED_ONLY = pytest.mark.pinned
"""A refusal that holds because the installed crate has no manual clock (1.6.1)."""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["{trace}", "--emit", "wasm"],
            "argument --emit: invalid choice: 'wasm'",
            id="emit",
        ),
        pytest.param(
            ["{trace}", "--out", "{out}"], "--out needs --emit rust", id="out alone"
        ),
        pytest.param(
            ["{trace}", "--emit", "rust", "--against", "model"],
            "drop --against and --canary",
            id="against",
        ),
        pytest.param(
            ["{trace}", "--emit", "rust", "--canary", "late_expiry"],
            "drop --against",
            id="canary",
        ),
        pytest.param(
            ["{manual}", "--emit", "rust"],
            "has no with_manual_clock / advance_clock",
            id="manual",
            marks=PINNED_ONLY,
        ),
        pytest.param(
            ["{advance}", "--emit", "rust"],
            "step 2: CrateAdvance calls the crate's",
            id="crate advance",
            marks=PINNED_ONLY,
        ),
        pytest.param(
            ["{trace}", "--emit", "rust", "--out", "{trace}/x.rs"],
            "is not a folder",
            id="unwritable",
        ),
    ],
)
def test_a_refused_export_exits_two_with_one_line_and_no_output(
    argv: list[str], message: str, tmp_path: Path
) -> None:
    """Bad arguments and inexpressible traces: one stderr line, exit 2, no stdout."""
    places = {
        "trace": str(CORPUS / "b16_virtual_ttl.json"),
        "manual": str(CORPUS / "manual_clock_refuses_a_backwards_advance.json"),
        "advance": str(_crate_advance_trace(tmp_path)),
        "out": str(tmp_path / "out.rs"),
    }

    completed = run_module(
        "ci.replay", *[arg.format(**places) for arg in argv], timeout_s=120
    )

    assert EXIT_USAGE == completed.returncode
    assert "" == completed.stdout
    assert 1 == len(completed.stderr.splitlines()), completed.stderr
    assert completed.stderr.startswith("ci.replay: error: ")
    assert message in completed.stderr
    assert not (tmp_path / "out.rs").exists()


def test_out_writes_the_test_that_stdout_would_show(tmp_path: Path) -> None:
    """`--out FILE` writes exactly the text printed without it, and prints nothing."""
    path = CORPUS / "queue_c6_retain_drops_payloads_and_their_counters.json"
    printed = io.StringIO()
    with redirect_stdout(printed):
        shown = replay_main([str(path), "--emit", "rust"])
    out = tmp_path / "nested" / "repro.rs"
    written = io.StringIO()
    with redirect_stdout(written):
        status = replay_main([str(path), "--emit", "rust", "--out", str(out)])

    assert EXIT_AGREE == shown == status
    assert "" == written.getvalue()
    assert printed.getvalue() == out.read_text(encoding="utf-8")
    assert "fn queue_c6_retain_drops_payloads_and_their_counters() {" in out.read_text()


def test_a_trace_in_an_artifact_folder_is_named_after_its_test(tmp_path: Path) -> None:
    """`<test>/<stamp>/minimal.json` exports as `fn <test>_minimal()`."""
    folder = tmp_path / "test_the_machine-crate" / "20260101T000000Z"
    config = AffinityConfig(ttl_ns=SECOND_NS)
    ops = (Acquire("a"), Commit(1, Target(1)), Release(2))
    save(record(config, ("a",), ops, "x"), folder / "minimal.json")

    assert "test_the_machine_crate_minimal" == export_name(folder / "minimal.json")
    assert "test_the_machine_crate_trace" == export_name(folder)


@pytest.mark.slow
@pytest.mark.pinned
def test_every_corpus_export_passes_cargo_test_on_the_pinned_crate(
    exports: dict[str, str],
) -> None:
    """One test binary, every exportable corpus trace, all pass on =1.6.1."""
    if selected_profile() not in BUILDING_PROFILES:
        pytest.skip("builds the crate: runs under the ci and nightly profiles")

    run = run_exports("pinned", exports)

    lines = sum(len(text.splitlines()) for text in exports.values())
    print(
        f"cargo: {len(exports)} exports, {lines} lines of Rust, "
        f"build {run.build_seconds:.0f} s, tests {run.test_seconds:.1f} s"
    )
    assert run.build_ok, run.output[-4000:]
    assert len(exports) == run.passed, run.output[-4000:]
    assert 0 == run.failed
