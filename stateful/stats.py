"""Run statistics for the gate's summary, one small JSON file per record.

The gate (`python -m ci.gate`) sets `VERIFY_STATS_DIR` to a fresh folder; tests
that know something worth summarising write a record there, and the gate reads
them all after pytest exits. Without the variable nothing is written. Each
process writes its own files, so pytest-xdist workers never share one.

Record kinds:

* `machine`: a differential machine's run -- steps, rules run of all rules,
  coverage goals reached of all goals, invariant evaluations, and per
  property [evaluations, non-vacuous evaluations, boundary hits] with the
  `always` properties the run had to exercise (`stateful/evidence.py`);
* `evidence`: per property, the machine's shortest witness as a trace
  (written by `ci/dossier/plugin.py`, which can encode traces);
* `shrink`: a canary's shrunk and minimized counterexample lengths and bounds;
* `coverage`: the share of a bounded graph's states and edges a machine took;
* `concurrency`: concurrent histories checked for linearizability -- how
  many, how long, on how many threads, and the search states it took.
* `network`: a replica-network machine's message and convergence counts.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from properties import properties
from properties.registry import SubjectName, exercisable
from properties.registry import goals as registry_goals
from stateful import evidence as evidence_module
from stateful.evidence import Evidence

STATS_ENV: Final[str] = "VERIFY_STATS_DIR"
RECORDS_MAX: Final[int] = 10_000
_UNSAFE: Final[re.Pattern[str]] = re.compile(r"[^A-Za-z0-9_.-]+")

Kind = Literal["machine", "evidence", "shrink", "coverage", "concurrency", "network"]


class MachineStats(Protocol):
    """What a differential machine class tallies while it runs."""

    steps_run: int
    rules_run: set[str]
    goals_reached: set[str]


def stats_dir() -> Path | None:
    """The folder named by `VERIFY_STATS_DIR`, if any."""
    configured = os.environ.get(STATS_ENV)
    return Path(configured) if configured else None


def write(kind: Kind, name: str, record: dict[str, Any]) -> Path | None:
    """Write one record (if the gate asked for statistics); return its path."""
    directory = stats_dir()
    if directory is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    safe = _UNSAFE.sub("-", name)
    path = directory / f"{kind}-{safe}-{os.getpid()}.json"
    path.write_text(
        json.dumps({"kind": kind, "name": name} | record, sort_keys=True, indent=2)
        + "\n"
    )
    return path


def record_machine(
    subject: SubjectName,
    machine: MachineStats,
    rules: Sequence[str],
    name: str,
    tags: Sequence[str] = (),
) -> Path | None:
    """Record a machine's steps, rules, coverage goals and invariant evaluations.

    `tags` name the configurations the run covered (e.g. `manual`,
    `every_advance`); goals declared unreachable under one of them are left out,
    and so are `always` properties whose antecedent is declared unreachable.
    The machine's witnesses are published for the trace writer.
    """
    goals = sorted(p.name for p in registry_goals(subject, tags))
    invariants = len(properties(subject=subject, kind="always"))
    found: Evidence = getattr(machine, "evidence", Evidence())
    counts = found.counts({p.name: p.over for p in properties(subject=subject)})
    if stats_dir() is not None:
        evidence_module.publish(name, subject, found)
    return write(
        "machine",
        name,
        {
            "subject": subject,
            "steps_run": machine.steps_run,
            "rules_run": sorted(machine.rules_run),
            "rules": sorted(rules),
            "goals_reached": sorted(set(goals) & machine.goals_reached),
            "goals": goals,
            "invariant_checks": machine.steps_run * invariants,
            "goal_counts": dict(sorted(getattr(machine, "goal_counts", {}).items())),
            "tags": sorted(tags),
            "properties": counts,
            "exercisable": sorted(p.name for p in exercisable(subject, tags)),
        },
    )


def record_shrink(
    canary: str, steps: int, bound: int, minimal_steps: int, minimal_bound: int
) -> Path | None:
    """Record a canary's Hypothesis-shrunk and minimized lengths and their bounds."""
    return write(
        "shrink",
        canary,
        {
            "steps": steps,
            "bound": bound,
            "minimal_steps": minimal_steps,
            "minimal_bound": minimal_bound,
        },
    )


def record_coverage(row: dict[str, Any]) -> Path | None:
    """Record one `ci.explore.coverage_summary()` row: whose graph, how covered."""
    return write(
        "coverage",
        f"{row['subject']}-{row['bound']}-{row['machine']}",
        {
            "subject": row["subject"],
            "bound": row["bound"],
            "machine": row["machine"],
            "profile": row["profile"],
            "states": row["states"],
            "edges": row["edges"],
        },
    )


def record_network(name: str, counts: Mapping[str, int]) -> Path | None:
    """Record what a replica-network machine's network did, summed over its run."""
    return write("network", name, {"counts": dict(sorted(counts.items()))})


def read_all(directory: Path) -> list[dict[str, Any]]:
    """Every record in `directory`, sorted by kind and name."""
    paths = sorted(directory.glob("*.json"))
    if len(paths) > RECORDS_MAX:
        raise RuntimeError(f"{len(paths)} statistics files exceed {RECORDS_MAX}")
    records = [json.loads(path.read_text()) for path in paths]
    return sorted(records, key=lambda record: (record["kind"], record["name"]))
