"""What a machine run shows about each property: counts and one short witness.

Per property, over one run of a differential machine:

* *evaluations* -- how often the property was checked (every step evaluates
  each property of the subject whose kind -- state, step, refusal -- applies);
* *non-vacuous* -- how often an `always` property's antecedent held (or it
  failed), and how often a `sometimes` goal held;
* *boundary* -- how often an `always` property's boundary held;
* a *witness* -- the shortest program prefix of the run after which the
  property was exercised at its boundary (or, lacking one, non-vacuously):
  the harness's subject and configuration and the operations up to that step.

`Evidence.add` is called once per harness step and costs a few dictionary
updates; a witness's operations are copied only when a shorter one is found.
When a machine's record is written (`stateful.stats.record_machine`) its
witnesses are handed to `finished()`, where a pytest plugin of `ci/` that can
encode traces picks them up (`ci/dossier/plugin.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from properties.registry import Over
    from stateful.harness import Harness, StepReport

FINISHED_MAX: Final[int] = 256
"""Machine records whose witnesses wait for the plugin in one process."""


@dataclass(frozen=True)
class Witness:
    """A program prefix after whose last step a property was exercised."""

    steps: int
    at_boundary: bool
    subject: Any  # the harness's `Subject` (pure Python: no system under test)
    config: Any  # the harness's configuration
    ops: tuple[Any, ...]


@dataclass
class Evidence:
    """One machine's counts and witnesses over one run."""

    evaluations: dict[str, int] = field(default_factory=dict)  # over -> count
    exercised: dict[str, int] = field(default_factory=dict)
    boundary: dict[str, int] = field(default_factory=dict)
    witnesses: dict[str, Witness] = field(default_factory=dict)

    def clear(self) -> None:
        """Forget everything (before a run)."""
        self.evaluations.clear()
        self.exercised.clear()
        self.boundary.clear()
        self.witnesses.clear()

    def add(self, report: StepReport[Any], harness: Harness[Any, Any]) -> None:
        """Count one step's evaluations and keep shorter witnesses."""
        for over in report.evaluated:
            self.evaluations[over] = self.evaluations.get(over, 0) + 1
        boundary = set(report.at_boundary)
        for name in (*report.exercised, *report.reached):
            self.exercised[name] = self.exercised.get(name, 0) + 1
            self._offer(name, report.index, name in boundary, harness)
        for name in report.at_boundary:
            self.boundary[name] = self.boundary.get(name, 0) + 1

    def _offer(
        self, name: str, steps: int, at_boundary: bool, harness: Harness[Any, Any]
    ) -> None:
        held = self.witnesses.get(name)
        if held is not None and (
            held.at_boundary > at_boundary
            or (held.at_boundary == at_boundary and held.steps <= steps)
        ):
            return
        self.witnesses[name] = Witness(
            steps=steps,
            at_boundary=at_boundary,
            subject=harness.subject,
            config=harness.config,
            ops=tuple(harness.ops[:steps]),
        )

    def counts(self, overs: dict[str, Over]) -> dict[str, list[int]]:
        """Property -> [evaluations, non-vacuous, boundary] for the named ones."""
        return {
            name: [
                self.evaluations.get(over, 0),
                self.exercised.get(name, 0),
                self.boundary.get(name, 0),
            ]
            for name, over in sorted(overs.items())
        }


@dataclass(frozen=True)
class Finished:
    """A machine run whose witnesses a trace writer may pick up."""

    machine: str
    subject: str
    witnesses: dict[str, Witness]


_finished: list[Finished] = []


def publish(machine: str, subject: str, evidence: Evidence) -> None:
    """Hand a finished run's witnesses over (see the module docstring)."""
    if len(_finished) >= FINISHED_MAX:
        raise RuntimeError(f"more than {FINISHED_MAX} machine records unclaimed")
    _finished.append(Finished(machine, subject, dict(evidence.witnesses)))


def finished() -> list[Finished]:
    """Take every published run (the list empties)."""
    taken = list(_finished)
    _finished.clear()
    return taken
