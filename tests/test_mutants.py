"""The mutation benchmark's generator, plan, verdicts and local-build staging."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from ci.build_local import (
    IMPL,
    is_link_failure,
    path_dependency_manifest,
    pinned_source,
)
from ci.mutants import command as mutants
from ci.mutants.operators import TARGET_FILES, Mutant, generate, mask

CRATE = pinned_source()


@pytest.fixture(scope="module")
def generated() -> list[Mutant]:
    """Every mutant of the pinned crate."""
    return generate(CRATE)


def _offset(relative: str, pattern: str) -> int:
    text = (CRATE / relative).read_text(encoding="utf-8")
    match = re.search(pattern, text)
    assert match is not None, pattern
    return match.start()


def test_no_mutant_touches_the_crates_own_test_module(generated: list[Mutant]) -> None:
    """Every mutant lies before the `#[cfg(test)] mod tests` of its file."""
    starts = {
        relative: _offset(relative, r"#\[cfg\(test\)\]\s*mod tests")
        for relative in TARGET_FILES
    }

    late = [m.id for m in generated if m.end > starts[m.file]]

    assert [] == late


def test_test_hooks_behind_the_testing_feature_are_never_mutated(
    generated: list[Mutant],
) -> None:
    """The `cfg(any(test, feature = "testing"))` impl block has no mutant."""
    relative = "src/services/selection/affinity.rs"
    start = _offset(relative, r"#\[cfg\(any\(test, feature = \"testing\"\)\)\]\nimpl")
    end = _offset(relative, r"\nimpl Inner \{")

    inside = [m.id for m in generated if m.file == relative and start <= m.start < end]

    assert [] == inside


def test_every_operator_produces_mutants_in_both_files(generated: list[Mutant]) -> None:
    """Each operator of ci/mutants/operators.py finds sites in the pinned source."""
    expected = {
        "cmp_boundary",
        "cmp_negate",
        "logic_swap",
        "bool_negate",
        "bool_literal",
        "literal",
        "stmt_delete",
        "swap_call",
        "arith_swap",
        "early_return",
    }

    actual = {m.operator for m in generated}

    assert expected == actual
    assert set(TARGET_FILES) == {m.file for m in generated}


def test_mutant_ids_and_order_are_the_same_on_every_generation(
    generated: list[Mutant],
) -> None:
    """Generating twice gives the same ids, edits and order."""
    again = generate(CRATE)

    assert generated == again
    assert len({m.id for m in generated}) == len(generated)


def test_the_removed_lease_decrement_is_a_mutant(generated: list[Mutant]) -> None:
    """Deleting `*active_leases -= 1;` removes whole lines and nothing else."""
    deletions = [
        m
        for m in generated
        if m.operator == "stmt_delete" and m.original.strip() == "*active_leases -= 1;"
    ]

    assert 2 == len(deletions)
    assert all(m.original.endswith("\n") for m in deletions)


def test_masking_blanks_strings_comments_and_char_literals_only() -> None:
    """Operators never see `<` inside a string, a comment or a char literal."""
    source = "let a = b < c; // d > e\nlet s = \"f <= g\"; let ch = '<'; x::<'_>();"

    masked = mask(source)

    assert len(source) == len(masked)
    assert "let a = b < c;" in masked
    assert "d > e" not in masked
    assert "f <= g" not in masked
    assert "'<'" not in masked
    assert "x::<'_>()" in masked


def test_the_smoke_mutant_is_the_expiry_check_of_query_target(
    generated: list[Mutant],
) -> None:
    """Exactly one mutant flips query_target's `<=` to `<`."""
    mutant = mutants.expiry_mutant(generated, CRATE)

    pristine = (CRATE / mutant.file).read_text(encoding="utf-8")
    assert "<" == mutant.replacement
    assert "*idle_deadline < Instant::now()" in mutant.apply(pristine)


def test_a_seeded_sample_is_reproducible_and_shards_partition_it(
    generated: list[Mutant],
) -> None:
    """The same seed gives the same order; the shards split it without overlap."""
    whole, _ = mutants.parse_args(["--sample", "40", "--seed", "7"])
    first, _ = mutants.parse_args(["--sample", "40", "--seed", "7", "--shard", "1/2"])
    second, _ = mutants.parse_args(["--sample", "40", "--seed", "7", "--shard", "2/2"])

    order = mutants.plan(generated, whole)
    halves = mutants.plan(generated, first) + mutants.plan(generated, second)

    assert order == mutants.plan(generated, whole)
    assert sorted(order) == sorted(halves)
    assert order != mutants.plan(generated, mutants.parse_args(["--sample", "4"])[0])


def test_our_verdict_names_the_failing_test_and_the_check() -> None:
    """A failing pytest run is `caught`, with the node id and the assertion prefix."""
    output = (
        "F\n"
        "E       AssertionError: outcome: model Ok(None) != sut Ok(Target(1))\n"
        "FAILED stateful/test_affinity_machine.py::test_x - AssertionError: ...\n"
        "1 failed in 3.10s\n"
    )

    verdict = mutants.judge_pytest(mutants.ProcessResult(1, 3.2, output))

    assert "caught" == verdict.outcome
    assert "stateful/test_affinity_machine.py::test_x" == verdict.test_id
    assert "outcome" == verdict.check


def test_a_passing_or_hanging_or_broken_run_is_not_a_catch() -> None:
    """Exit 0 is missed, a kill at the limit is timeout, a usage error is error."""
    assert "missed" == mutants.judge_pytest(mutants.ProcessResult(0, 1, "")).outcome
    assert "timeout" == mutants.judge_pytest(mutants.ProcessResult(None, 9, "")).outcome
    assert "error" == mutants.judge_pytest(mutants.ProcessResult(4, 1, "")).outcome


def test_the_crate_verdict_reads_libtest_failures_and_the_panic() -> None:
    """A failing `cargo test` is caught, with the test and the panic location."""
    output = (
        "running 24 tests\n"
        "...........\n"
        "scheduling::policy_queue::tests::drr --- FAILED\n"
        "failures:\n\n"
        "---- scheduling::policy_queue::tests::drr stdout ----\n\n"
        "thread 'scheduling::policy_queue::tests::drr' (81) panicked at "
        "src/scheduling/policy_queue.rs:1200:9:\n"
        "assertion `left == right` failed\n\n\n"
        "failures:\n"
        "    scheduling::policy_queue::tests::drr\n\n"
        "test result: FAILED. 23 passed; 1 failed\n"
    )

    verdict = mutants.judge_crate(mutants.ProcessResult(101, 40, output))

    assert "caught" == verdict.outcome
    assert "scheduling::policy_queue::tests::drr" == verdict.test_id
    assert "src/scheduling/policy_queue.rs:1200:9" == verdict.check
    assert "assertion `left == right` failed" == verdict.detail


def test_the_staged_manifest_swaps_only_the_crates_io_requirement() -> None:
    """The staged Cargo.toml names the local tree; everything else is impl's."""
    manifest = (IMPL / "Cargo.toml").read_text(encoding="utf-8")
    local = Path("/some/where/kv-router")

    staged = tomllib.loads(path_dependency_manifest(manifest, local))
    pinned = tomllib.loads(manifest)

    dependency = staged["dependencies"]["dynamo-kv-router"]
    assert str(local) == dependency["path"]
    assert "version" not in dependency
    assert (
        pinned["dependencies"]["dynamo-kv-router"]["features"] == dependency["features"]
    )
    assert pinned["features"] == staged["features"]
    assert pinned["dependencies"]["pyo3"] == staged["dependencies"]["pyo3"]


@pytest.mark.parametrize("relative", sorted(TARGET_FILES))
def test_the_default_selection_names_existing_tests(relative: str) -> None:
    """Every default test path for a mutated file matches this checkout."""
    config, _ = mutants.parse_args([])

    paths = mutants.pytest_paths(config, relative, mutants.REPO)

    assert paths[0].startswith("stateful/test_")
    assert all("::" in path or path.endswith(".py") for path in paths)


def _record(ident: str, ours: str | None, crate: str | None) -> mutants.MutantRecord:
    return mutants.MutantRecord(
        id=ident,
        file=mutants.AFFINITY_RS,
        line=1,
        operator="literal",
        description=ident,
        diff="",
        viable=ours is not None,
        build_seconds=1.0,
        ours=None if ours is None else mutants.Verdict(ours, 2.0),
        crate=None if crate is None else mutants.Verdict(crate, 3.0),
    )


def test_kill_rates_count_caught_viable_mutants_and_timeouts_apart(
    tmp_path: Path,
) -> None:
    """Unviable mutants are left out; a timeout is a kill only in the stop rate."""
    config, _ = mutants.parse_args([])
    run = mutants.Run(
        config=config,
        out=tmp_path,
        crate=tmp_path,
        build=mutants.LocalBuild(tmp_path, tmp_path, tmp_path),
        pytree=tmp_path,
        records=[
            _record("A001", "caught", "missed"),
            _record("A002", "missed", "caught"),
            _record("A003", "timeout", "missed"),
            _record("A004", "missed", "flaky"),
            _record("A005", None, None),
        ],
    )

    totals = mutants.totals(run)

    assert (4, 1) == (totals["viable"], totals["unviable"])
    assert (0.25, 0.25, 0.5) == (
        totals["kill_rate_ours"],
        totals["kill_rate_crate"],
        totals["kill_rate_union"],
    )
    assert (0.5, 0.25, 0.75) == (
        totals["stop_rate_ours"],
        totals["stop_rate_crate"],
        totals["stop_rate_union"],
    )


def test_a_link_failure_is_told_apart_from_a_mutant_that_does_not_compile() -> None:
    """Linker errors (a stale incremental cache) are retried, not counted unviable."""
    linker = (
        "rust-lld: error: undefined hidden symbol: anon.61f6.31.llvm.1336\n"
        "collect2: error: ld returned 1 exit status\n"
        "error: could not compile `dynamo-verify-native` (lib) due to 1 previous error"
    )
    rustc = (
        "error[E0308]: mismatched types\n"
        "error: could not compile `dynamo-kv-router` (lib) due to 1 previous error"
    )

    assert is_link_failure(linker)
    assert not is_link_failure(rustc)
