"""The mutation sweep's generators, verdicts and local-build staging.

Sharding, merging and the command line: tests/test_mutants_shards.py.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from ci.build_local import (
    IMPL,
    REPO,
    is_link_failure,
    path_dependency_manifest,
    pinned_source,
)
from ci.mutants import command as mutants
from ci.mutants import judge, plan
from ci.mutants import smoke as smoke_check
from ci.mutants.cargo_mutants import (
    MutantSet,
    ToolMissingError,
    apply_diff,
    mutant_set,
    tool_version,
)
from ci.mutants.operators import (
    TARGET_FILES,
    Mutant,
    generate_ours,
    mask,
    minimal_change,
)
from ci.mutants.plan import CARGO_PROFILES
from ci.processes import ProcessResult

CRATE = pinned_source()


@pytest.fixture(scope="module")
def generated() -> list[Mutant]:
    """Every mutant our operators make of the pinned crate."""
    return generate_ours(CRATE)


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
    }

    actual = {m.operator for m in generated}

    assert expected == actual
    assert set(TARGET_FILES) == {m.file for m in generated}


def test_our_mutants_and_their_order_are_the_same_on_every_generation(
    generated: list[Mutant],
) -> None:
    """Generating twice gives the same edits in the same order, none twice."""
    again = generate_ours(CRATE)

    assert generated == again
    assert len({(m.file, m.start, m.end, m.replacement) for m in generated}) == len(
        generated
    )


def test_every_mutant_is_its_minimal_span(generated: list[Mutant]) -> None:
    """Ours are reduced like cargo-mutants' diffs, so duplicates compare equal."""
    texts = {r: (CRATE / r).read_text(encoding="utf-8") for r in TARGET_FILES}

    wider = [
        m.id or m.describe()
        for m in generated
        if (m.start, m.end, m.replacement)
        != minimal_change(texts[m.file], m.apply(texts[m.file]))
    ]

    assert [] == wider


def test_a_unified_diff_applies_back_to_the_mutated_file(
    generated: list[Mutant],
) -> None:
    """apply_diff(text, mutant.diff(text)) is the mutated text, for every kind."""
    texts = {r: (CRATE / r).read_text(encoding="utf-8") for r in TARGET_FILES}
    one_per_operator = {m.operator: m for m in generated}

    applied = {
        name: apply_diff(texts[m.file], m.diff(texts[m.file]))
        for name, m in sorted(one_per_operator.items())
    }

    assert {
        name: m.apply(texts[m.file]) for name, m in sorted(one_per_operator.items())
    } == applied


def test_a_diff_whose_context_does_not_match_is_refused() -> None:
    """A diff of another file's text raises instead of mutating the wrong line."""
    text = (CRATE / plan.AFFINITY_RS).read_text(encoding="utf-8")
    diff = "@@ -1,1 +1,1 @@\n-not the first line\n+x\n"

    with pytest.raises(ValueError, match="does not match"):
        apply_diff(text, diff)


def test_the_removed_lease_decrement_is_a_mutant(generated: list[Mutant]) -> None:
    """Deleting `*active_leases -= 1;` removes one whole line and nothing else."""
    relative = plan.AFFINITY_RS
    text = (CRATE / relative).read_text(encoding="utf-8")
    statement = "*active_leases -= 1;"

    deletions = [
        m.apply(text)
        for m in generated
        if m.operator == "stmt_delete"
        and m.file == relative
        and statement in m.original
    ]

    assert 2 == len(deletions)
    for mutated in deletions:
        removed = set(text.splitlines()) - set(mutated.splitlines())
        assert 1 == len(text.splitlines()) - len(mutated.splitlines())
        assert {statement} == {line.strip() for line in removed}


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
    """The smoke mutant flips query_target's `<=` to `<`; ours generate it too."""
    mutant = smoke_check.expiry_mutant(CRATE)

    pristine = (CRATE / mutant.file).read_text(encoding="utf-8")
    assert "*idle_deadline < Instant::now()" in mutant.apply(pristine)
    assert (mutant.start, mutant.end, mutant.replacement) in {
        (m.start, m.end, m.replacement) for m in generated if m.file == mutant.file
    }


def test_our_verdict_names_the_failing_test_and_the_check() -> None:
    """A failing pytest run is `caught`, with the node id and the assertion prefix."""
    output = (
        "F\n"
        "E       AssertionError: outcome: model Ok(None) != crate Ok(Target(1))\n"
        "FAILED stateful/test_affinity_machine.py::test_x - AssertionError: ...\n"
        "1 failed in 3.10s\n"
    )

    verdict = judge.judge_pytest(ProcessResult(1, 3.2, output))

    assert "caught" == verdict.outcome
    assert "stateful/test_affinity_machine.py::test_x" == verdict.test_id
    assert "outcome" == verdict.check


def test_a_passing_or_hanging_or_broken_run_is_not_a_catch() -> None:
    """Exit 0 is missed, a kill at the limit is timeout, a usage error is error."""
    assert "missed" == judge.judge_pytest(ProcessResult(0, 1, "")).outcome
    assert "timeout" == judge.judge_pytest(ProcessResult(None, 9, "")).outcome
    assert "error" == judge.judge_pytest(ProcessResult(4, 1, "")).outcome


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

    verdict = judge.judge_crate(ProcessResult(101, 40, output))

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

    paths = plan.pytest_paths(config, relative, REPO)

    assert paths[0].startswith("stateful/test_")
    assert all("::" in path or path.endswith(".py") for path in paths)


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


@pytest.fixture(scope="module")
def full_set(tmp_path_factory: pytest.TempPathFactory) -> MutantSet:
    """The sweep's set, listed by the pinned cargo-mutants in a copy of the crate."""
    try:
        tool_version()
    except ToolMissingError as error:
        pytest.skip(str(error))  # optional tool: the sweep's own tests need it
    crate = plan.prepare_crate_tree(tmp_path_factory.mktemp("crate"))
    return mutant_set(crate)


def test_the_set_is_cargo_mutants_then_ours_without_duplicates(
    full_set: MutantSet,
) -> None:
    """Ids name the generator and file; no mutant of ours repeats one of its."""
    cargo = {
        (m.file, m.start, m.end, m.replacement)
        for m in full_set.mutants
        if m.id.startswith("C")
    }
    ours = [m for m in full_set.mutants if m.id.startswith("O")]
    counts = full_set.counts

    assert [m.id for m in full_set.mutants] == sorted(m.id for m in full_set.mutants)
    assert all(re.fullmatch(r"[CO][AQ]\d{3}", m.id) for m in full_set.mutants)
    assert [] == [
        m.id for m in ours if (m.file, m.start, m.end, m.replacement) in cargo
    ]
    assert len(cargo) == sum(c["cargo_mutants"] for c in counts.values())
    assert len(ours) == sum(c["ours"] for c in counts.values())
    assert {"arith_swap", "early_return"}.isdisjoint(m.operator for m in ours)


def test_every_mutant_of_the_set_changes_the_pristine_file(full_set: MutantSet) -> None:
    """Each applies to the pinned source and yields a different text."""
    texts = {r: (CRATE / r).read_text(encoding="utf-8") for r in TARGET_FILES}

    unchanged = [
        m.id for m in full_set.mutants if m.apply(texts[m.file]) == texts[m.file]
    ]

    assert [] == unchanged


def test_the_smoke_mutant_is_one_of_ours_in_the_set(full_set: MutantSet) -> None:
    """cargo-mutants has no `<=` to `<`; our cmp_boundary keeps it in the set."""
    smoke = smoke_check.expiry_mutant(CRATE)

    found = [
        m.id
        for m in full_set.mutants
        if (m.file, m.start, m.end, m.replacement)
        == (smoke.file, smoke.start, smoke.end, smoke.replacement)
    ]

    assert 1 == len(found)
    assert found[0].startswith("OA")


def test_the_mutant_build_profile_keeps_the_release_semantics() -> None:
    """`mutants` differs from release only in the optimizer and codegen units."""
    manifest = tomllib.loads((IMPL / "Cargo.toml").read_text(encoding="utf-8"))
    profiles = manifest["profile"]
    mutants = profiles[CARGO_PROFILES[0]]

    assert "mutants" == CARGO_PROFILES[0]
    assert "release" == mutants["inherits"]
    assert "unwind" == profiles["release"]["panic"]
    assert {"debug-assertions": False, "overflow-checks": False} == {
        key: mutants[key] for key in ("debug-assertions", "overflow-checks")
    }
    changed = set(mutants) - {"inherits", "debug-assertions", "overflow-checks"}
    assert {"opt-level", "codegen-units"} == changed
