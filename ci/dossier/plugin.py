"""Write each finished machine run's witnesses as traces (`-p ci.dossier.plugin`).

`stateful.stats.record_machine` publishes a machine's witnesses
(`stateful.evidence.finished`) when the gate collects statistics
(`VERIFY_STATS_DIR`). After each test this plugin encodes them with the
subject's trace kind -- the program prefix re-recorded on a fresh model -- and
writes one `evidence` record per machine run next to the machine's own record.
Without the variable nothing is published and this plugin does nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from ci.inputs import InputError
from ci.replay.trace import kind_of
from properties import get
from stateful import evidence, stats
from stateful.evidence import Witness


def description(name: str, witness: Witness, machine: str) -> str:
    """What a witness trace shows, in one sentence."""
    prop = get(name)
    if prop.kind == "sometimes":
        how = "reaches this goal"
    elif witness.at_boundary and prop.boundary is not None:
        how = f"exercises it at its boundary ({prop.boundary.statement.rstrip('.')})"
    else:
        assert prop.antecedent is not None
        how = f"exercises it ({prop.antecedent.statement.rstrip('.')})"
    return (
        f"Witness for {name}: {prop.statement.rstrip('.')}. The last step {how}. "
        f"The shortest such program prefix of {machine}."
    )


def encode(name: str, witness: Witness, machine: str, subject: str) -> dict[str, Any]:
    """The witness as a trace document, re-recorded on a fresh model."""
    kind = kind_of(subject)
    comments = [""] * (len(witness.ops) - 1) + [f"exercises {name}"]
    trace = kind.record(
        kind.setup_from(witness.subject, witness.config),
        witness.ops,
        description(name, witness, machine),
        comments,
    )
    return trace.to_json()


def write_finished() -> None:
    """Encode and write every published machine run's witnesses."""
    for run in evidence.finished():
        witnesses: dict[str, Any] = {}
        problems: dict[str, str] = {}
        for name, witness in sorted(run.witnesses.items()):
            try:
                trace = encode(name, witness, run.machine, run.subject)
            except (InputError, ValueError, TypeError) as error:
                problems[name] = f"{type(error).__name__}: {error}"
                continue
            witnesses[name] = {
                "steps": witness.steps,
                "at_boundary": witness.at_boundary,
                "trace": trace,
            }
        stats.write(
            "evidence",
            run.machine,
            {"subject": run.subject, "witnesses": witnesses, "problems": problems},
        )


def pytest_runtest_teardown(item: pytest.Item) -> None:  # noqa: ARG001 - hook signature
    """After each test, write the witnesses its machine runs published."""
    write_finished()
