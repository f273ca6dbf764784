"""Gate tables that belong to one subject, named by its registry entry.

`python -m ci.gate` prints, after its own tables, every table a subject's
entry in `ci.subjects` lists under `gate_tables`: each is a function of the
run's statistics records (`stateful/stats.py`) that returns a table, or None
when the subject's machines did not run.
"""

from __future__ import annotations

from typing import Any, Final

from rich.table import Table

REPLICA_NETWORK_ROWS: Final[tuple[tuple[str, str], ...]] = (
    ("programs_of_2_replicas", "programs of 2 replicas"),
    ("programs_of_3_replicas", "programs of 3 replicas"),
    ("calls", "table calls"),
    ("sent", "sent"),
    ("superseded", "published superseded"),
    ("delivered", "delivered"),
    ("dropped", "dropped"),
    ("duplicated", "duplicated"),
    ("reordered", "reordered"),
    ("lost", "lost to partitions"),
    ("partitions", "partitions"),
    ("flush_deliveries", "delivered by flushes"),
    ("convergence_checks", "convergence checks"),
    ("convergence_checks_non_vacuous", "checks non-vacuous"),
)
"""(count, row label) of the replica-network table, in order."""


def replica_network(records: list[dict[str, Any]]) -> Table | None:
    """What each replica-network run's network did, one row per count."""
    runs = [record for record in records if record["kind"] == "network"]
    if not runs:
        return None
    table = Table(title="replica network")
    table.add_column("count")
    for record in runs:
        table.add_column(record["name"], justify="right")
    for count, label in REPLICA_NETWORK_ROWS:
        cells = [str(record.get("counts", {}).get(count, 0)) for record in runs]
        table.add_row(label, *cells)
    return table
