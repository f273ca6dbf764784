"""docs/findings.md, the corpus and the findings' Rust tests stay in step.

A finding trace of the corpus is one named `finding_...`, one found on a
reconstructed upstream revision (`aff_...`), or a concurrent history
(`histories/`): each is listed in the findings table, and each listed file
exists. The Rust test of a finding in the pinned crate compiles against it
and fails, at the finding's own assertion: the report a maintainer gets shows
the problem, not a test that passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci.replay.rust.cargo import run_exports

REPO = Path(__file__).resolve().parent.parent
FINDINGS = REPO / "docs" / "findings.md"
CORPUS = REPO / "ci" / "replay" / "corpus"
PINNED_REVISION = "1.6.1"
BEGIN, END = "<!-- findings:begin -->", "<!-- findings:end -->"
CODE = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class Finding:
    """One row of the findings table."""

    ident: str
    revision: str
    evidence: Path
    rust_test: Path | None


def _rows() -> list[Finding]:
    text = FINDINGS.read_text(encoding="utf-8")
    table = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    rows = [line for line in table.strip().splitlines()[2:] if line.startswith("|")]
    findings = []
    for row in rows:
        ident, revision, _severity, _status, evidence, rust = (
            cell.strip() for cell in row.strip("|").split("|")
        )
        (trace,) = CODE.findall(evidence)
        rust_paths = [path for path in CODE.findall(rust) if path.endswith(".rs")]
        findings.append(
            Finding(
                ident=ident,
                revision=CODE.sub(r"\1", revision).split()[-1],
                evidence=REPO / trace,
                rust_test=REPO / rust_paths[0] if rust_paths else None,
            )
        )
    return findings


def _finding_traces() -> list[Path]:
    named = [*CORPUS.glob("finding_*.json"), *CORPUS.glob("aff_*.json")]
    return sorted([*named, *(CORPUS / "histories").glob("*.json")])


def test_the_table_lists_findings_in_order() -> None:
    """Findings are numbered F1, F2, ... without a gap, each with its section."""
    findings = _rows()
    assert [f.ident for f in findings] == [f"F{n}" for n in range(1, len(findings) + 1)]
    text = FINDINGS.read_text(encoding="utf-8")
    assert [f"## {f.ident}. " in text for f in findings] == [True] * len(findings)


def test_every_listed_file_exists() -> None:
    """Each finding's trace or history, and its Rust test, is a file of the tree."""
    listed = [f.evidence for f in _rows()]
    listed += [f.rust_test for f in _rows() if f.rust_test is not None]
    assert [p for p in listed if not p.is_file()] == []


def test_every_finding_trace_of_the_corpus_is_listed() -> None:
    """No finding hides in the corpus without a report."""
    listed = {f.evidence for f in _rows()}
    assert [p.name for p in _finding_traces() if p not in listed] == []


def test_every_rust_test_names_its_finding() -> None:
    """Each Rust test's failure message starts with its finding's id."""
    for finding in _rows():
        if finding.rust_test is not None:
            source = finding.rust_test.read_text(encoding="utf-8")
            assert f'"{finding.ident}: ' in source, finding.ident


@pytest.mark.pinned
def test_the_rust_tests_of_the_pinned_crate_fail_on_it() -> None:
    """Compiled against the pinned crate, each such test builds and fails as stated."""
    pinned = [
        f for f in _rows() if f.revision == PINNED_REVISION and f.rust_test is not None
    ]
    assert pinned, "no finding of the pinned crate has a Rust test"
    exports = {
        f.rust_test.stem: f.rust_test.read_text(encoding="utf-8")
        for f in pinned
        if f.rust_test is not None
    }
    run = run_exports("findings", exports)
    assert run.build_ok, run.output[-3000:]
    assert (run.passed, run.failed) == (0, len(pinned)), run.output[-3000:]
    for finding in pinned:
        assert f"{finding.ident}: " in run.output, finding.ident
