"""Build the dossier of one gate run from its statistics records.

Per registered property (of every subject): its statement, kind, antecedent and
boundary, citations resolved to file and line (model functions in this
repository, crate items in the pinned crate's source), and from the run's
machine records: evaluations, non-vacuous evaluations and boundary hits,
summed over the machines of its subject and listed per machine, with the
machines whose run left it vacuous. Its witness is the best program prefix
found -- exercising the property at its boundary beats exercising it
non-vacuously, a program the crate can run beats one only the model can (a
manual-clock table on a crate without one), then the shorter wins -- among the
machines' witnesses
(`ci/dossier/plugin.py`) and prefixes of the corpus traces
(`ci/replay/corpus/`), which are replayed on the model here to find where each
antecedent held. Every witness is written as a trace, replayed against the
crate (or the model, for a table the crate cannot build), and the dossier says
whether the replay agreed and exercised the property at its last step.

    <folder>/dossier.md      for people: where to start, the least exercised,
                             one section per property
    <folder>/dossier.json    the same, as data
    <folder>/traces/<property>.json   one witness per property that has one
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ci.cli import UsageError, write_results
from ci.inputs import InputError
from ci.replay.command import BUILD_ERRORS, factory_for, replay
from ci.replay.corpus import corpus_files
from ci.replay.trace import Trace, load, loads
from properties import Property, properties
from properties.citations import (
    CitationError,
    downloaded_crate,
    resolve_crate,
    resolve_model,
)
from stateful.harness import StepReport

LEAST_SHOWN: Final[int] = 5
TRACES_DIR: Final[str] = "traces"
CORPUS_STEPS_MAX: Final[int] = 10_000
"""Corpus steps replayed on the model to look for witnesses; more is refused."""


@dataclass(frozen=True)
class Counts:
    """Evaluations, non-vacuous evaluations and boundary hits."""

    evaluations: int = 0
    non_vacuous: int = 0
    boundary: int = 0

    def plus(self, other: Sequence[int]) -> Counts:
        """These counts with one machine's [evaluations, non-vacuous, boundary]."""
        return Counts(
            self.evaluations + other[0],
            self.non_vacuous + other[1],
            self.boundary + other[2],
        )


@dataclass(frozen=True)
class WitnessTrace:
    """A program after whose last step a property was exercised."""

    source: str  # "machine NAME" or "corpus FILE"
    steps: int
    at_boundary: bool
    document: Mapping[str, Any]

    def key(self) -> tuple[bool, int, bool]:
        """Boundary first, then shorter, then a machine's over the corpus's."""
        return (not self.at_boundary, self.steps, self.source.startswith("corpus"))


@dataclass
class Row:
    """Everything the dossier says about one property."""

    prop: Property
    counts: Counts = field(default_factory=Counts)
    machines: dict[str, list[int]] = field(default_factory=dict)
    required_in: list[str] = field(default_factory=list)
    candidates: list[WitnessTrace] = field(default_factory=list)  # `choose` picks
    witness: WitnessTrace | None = None
    trace_file: str = ""
    replay_line: str = ""
    replayed: str = ""

    @property
    def vacuous_in(self) -> list[str]:
        """Machines whose run had to exercise the property and never did."""
        return [m for m in self.required_in if self.machines.get(m, [0, 0, 0])[1] == 0]


# ---- merging the records --------------------------------------------------------


def merge(records: Iterable[Mapping[str, Any]]) -> list[Row]:
    """One row per registered property, with the machines' counts and witnesses."""
    rows = {prop.name: Row(prop) for prop in properties()}
    for record in records:
        name = str(record["name"])
        if record["kind"] == "machine":
            for prop, counts in record.get("properties", {}).items():
                if prop in rows:
                    rows[prop].machines[name] = list(counts)
                    rows[prop].counts = rows[prop].counts.plus(counts)
            for prop in record.get("exercisable", []):
                if prop in rows:
                    rows[prop].required_in.append(name)
        elif record["kind"] == "evidence":
            for prop, found in record.get("witnesses", {}).items():
                if prop in rows:
                    rows[prop].candidates.append(
                        WitnessTrace(
                            f"machine {name}",
                            int(found["steps"]),
                            bool(found["at_boundary"]),
                            found["trace"],
                        )
                    )
    return [rows[name] for name in sorted(rows)]


def crate_can_run(witness: WitnessTrace) -> bool:
    """Whether the crate's adapter can build the witness's table or queue."""
    trace = loads(json.dumps(witness.document), witness.source)
    try:
        factory, _ = factory_for(trace.kind, None, None)
        trace.kind.harness(trace.setup, factory)
    except (UsageError, *BUILD_ERRORS):
        return False
    return True


def choose(row: Row) -> None:
    """The row's witness: at its boundary, on the crate, shortest -- in that order."""
    ranked = sorted(row.candidates, key=WitnessTrace.key)
    boundary = [w for w in ranked if w.at_boundary] or ranked
    row.witness = next(
        (w for w in boundary if crate_can_run(w)), boundary[0] if boundary else None
    )


# ---- witnesses from the corpus ----------------------------------------------------


def corpus_witnesses(rows: Sequence[Row], files: Sequence[Path]) -> None:
    """Offer each row the shortest corpus prefix that exercised its property."""
    by_name = {row.prop.name: row for row in rows}
    best: dict[str, tuple[tuple[bool, int], Path, Trace, int, bool]] = {}
    replayed = 0
    for path in files:
        try:
            trace = load(path)
        except InputError:
            continue
        replayed += len(trace.steps)
        if replayed > CORPUS_STEPS_MAX:
            raise UsageError(f"the corpus holds more than {CORPUS_STEPS_MAX} steps")
        for index, report in enumerate(_model_reports(trace), start=1):
            boundary = set(report.at_boundary)
            for name in (*report.exercised, *report.reached):
                key = (name not in boundary, index)
                if name in by_name and (name not in best or key < best[name][0]):
                    best[name] = (key, path, trace, index, name in boundary)
    for name, (_, path, trace, index, at_boundary) in sorted(best.items()):
        kind = trace.kind
        recorded = kind.record(
            trace.setup,
            trace.ops[:index],
            f"Witness for {name}, a prefix of the corpus trace: {trace.description}",
            [step.comment for step in trace.steps[: index - 1]] + [f"exercises {name}"],
        )
        source = f"corpus {path.name}"
        witness = WitnessTrace(source, index, at_boundary, recorded.to_json())
        by_name[name].candidates.append(witness)


def _model_reports(trace: Trace) -> list[StepReport[Any]]:
    """The trace's steps on a fresh model (no system under test compared)."""
    kind = trace.kind
    try:
        harness = kind.harness(trace.setup, kind.model_factory())
    except Exception:  # noqa: BLE001 - a setup the model refuses has no witnesses
        return []
    harness.check_states = False
    reports = []
    for op in trace.ops:
        try:
            reports.append(harness.step(op))
        except Exception:  # noqa: BLE001 - a crash ends the search in this trace
            break
    return reports


# ---- citations ---------------------------------------------------------------------


def citations(prop: Property, crate: Path | None) -> dict[str, list[dict[str, str]]]:
    """The property's citations, each with where it starts (or why it does not)."""

    def where(resolve: Any, path: str) -> str:
        try:
            return str(resolve(path))
        except CitationError as error:
            return f"unresolved: {error}"

    guards = [
        {
            "item": path,
            "at": "crate source not downloaded"
            if crate is None
            else where(lambda p: resolve_crate(p, crate), path),
        }
        for path in prop.guards
    ]
    reads = [
        {"function": path, "at": where(resolve_model, path)} for path in prop.reads
    ]
    return {"reads": reads, "guards": guards}


# ---- writing and replaying the witnesses -------------------------------------------


def replay_witness(row: Row, path: Path) -> None:
    """Replay the written witness; record the command and what the replay showed."""
    trace = loads(path.read_text(encoding="utf-8"), str(path))
    shown = _shown(path)
    try:
        factory, label = factory_for(trace.kind, None, None)
        result = replay(trace, factory, label)
        row.replay_line = f"python -m ci.replay {shown}"
    except UsageError:  # the crate cannot build this table: the model can
        factory, label = factory_for(trace.kind, "model", None)
        result = replay(trace, factory, label)
        row.replay_line = f"python -m ci.replay {shown} --against model"
    failure = result.first_failure
    if failure is not None:
        row.replayed = (
            f"FAILED at a step: {', '.join(failure.failed)}: {failure.detail}"
        )
        return
    last = result.verdicts[-1].report if result.verdicts else None
    name = row.prop.name
    if last is None or name not in (*last.exercised, *last.reached):
        row.replayed = "agrees, but the last step did not exercise the property"
        return
    at_boundary = name in last.at_boundary
    where = "at its boundary" if at_boundary else "non-vacuously"
    if row.prop.kind == "sometimes":
        where = "(the goal is reached)"
    row.replayed = f"agrees against {label}; the last step exercises it {where}"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def write_traces(rows: Sequence[Row], folder: Path) -> None:
    """Write and replay every row's witness trace."""
    traces = folder / TRACES_DIR
    traces.mkdir(parents=True, exist_ok=True)
    for row in rows:
        if row.witness is None:
            continue
        path = traces / f"{row.prop.name}.json"
        path.write_text(
            json.dumps(row.witness.document, indent=2, sort_keys=False) + "\n",
            encoding="utf-8",
        )
        row.trace_file = f"{TRACES_DIR}/{path.name}"
        replay_witness(row, path)


# ---- the least exercised -------------------------------------------------------------


def least_exercised(rows: Sequence[Row], count: int = LEAST_SHOWN) -> list[Row]:
    """The `always` properties with the fewest non-vacuous evaluations."""
    always = [row for row in rows if row.prop.kind == "always"]
    return sorted(
        always,
        key=lambda r: (r.counts.non_vacuous, r.counts.boundary, r.prop.name),
    )[:count]


# ---- the documents -------------------------------------------------------------------


def as_json(rows: Sequence[Row], run: Mapping[str, Any]) -> dict[str, Any]:
    """The dossier as data."""
    crate = downloaded_crate()
    return {
        "run": dict(run),
        "least_exercised": [row.prop.name for row in least_exercised(rows)],
        "properties": [
            {
                "name": row.prop.name,
                "subject": row.prop.subject,
                "kind": row.prop.kind,
                "over": row.prop.over,
                "statement": row.prop.statement,
                "antecedent": _condition(row.prop, "antecedent"),
                "boundary": _condition(row.prop, "boundary"),
                "unreachable": dict(row.prop.unreachable),
                **citations(row.prop, crate),
                "evaluations": row.counts.evaluations,
                "non_vacuous": row.counts.non_vacuous,
                "boundary_hits": None
                if row.prop.boundary is None
                else row.counts.boundary,
                "machines": {
                    machine: dict(
                        zip(
                            ("evaluations", "non_vacuous", "boundary"),
                            counts,
                            strict=True,
                        )
                    )
                    for machine, counts in sorted(row.machines.items())
                },
                "vacuous_in": row.vacuous_in,
                "witness": None
                if row.witness is None
                else {
                    "trace": row.trace_file,
                    "source": row.witness.source,
                    "steps": row.witness.steps,
                    "at_boundary": row.witness.at_boundary,
                    "replay": row.replay_line,
                    "replayed": row.replayed,
                },
            }
            for row in rows
        ],
    }


def _condition(prop: Property, which: str) -> dict[str, str] | None:
    found = getattr(prop, which)
    return None if found is None else {"name": found.name, "statement": found.statement}


INTRO: Final[str] = """# Evidence dossier

One gate run's evidence for every property of the catalogue
(`properties/CATALOGUE.md`). For each property: what it states, when it can
fail (its *antecedent*) and its edge case (its *boundary*), the model functions
it reads and the crate items it guards (file:line), and what this run's machines
did with it:

* **evaluations** -- how often it was checked (every machine step evaluates
  every property of its subject and kind);
* **non-vacuous** -- how many of those evaluations had its antecedent true (or
  failed); for a `sometimes` goal, how often it was reached. Zero in a machine
  that had to exercise the property fails the gate;
* **boundary** -- how many had its boundary true;
* **witness** -- one short trace, replayable with the command shown, whose last
  step exercises it at its boundary (or non-vacuously if it has none, or was
  never met at it): the shortest such program prefix of the machines' runs or of
  the corpus traces.

Start with the least exercised properties below: they are where a green run
says least. docs/evidence.md ("Evidence for auditors") explains the numbers.
"""


def as_markdown(document: Mapping[str, Any]) -> str:
    """The dossier for people."""
    run = document["run"]
    rows = {row["name"]: row for row in document["properties"]}
    lines = [
        INTRO,
        (
            f"Run: gate job `{run.get('job', '?')}`, crate {run.get('crate', '?')}, "
            f"machines: {', '.join(run.get('machines', [])) or 'none'}."
        ),
        "",
        "## Least exercised",
        "",
        "| property | non-vacuous | of evaluations | boundary | witness |",
        "|---|---|---|---|---|",
    ]
    lines += [_summary_row(rows[name]) for name in document["least_exercised"]]
    subjects = sorted({row["subject"] for row in document["properties"]})
    for subject in subjects:
        lines += [
            "",
            f"## {subject}",
            "",
            "| property | kind | evaluations | non-vacuous | boundary | witness |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            _table_row(row)
            for row in document["properties"]
            if row["subject"] == subject
        ]
    for row in document["properties"]:
        lines += ["", *_section(row)]
    return "\n".join(lines) + "\n"


def _boundary_cell(row: Mapping[str, Any]) -> str:
    return "-" if row["boundary_hits"] is None else str(row["boundary_hits"])


def _witness_cell(row: Mapping[str, Any]) -> str:
    witness = row["witness"]
    if witness is None:
        return "none"
    return f"[{witness['steps']} steps]({witness['trace']})"


def _summary_row(row: Mapping[str, Any]) -> str:
    return (
        f"| `{row['name']}` | {row['non_vacuous']} | {row['evaluations']} "
        f"| {_boundary_cell(row)} | {_witness_cell(row)} |"
    )


def _table_row(row: Mapping[str, Any]) -> str:
    return (
        f"| [`{row['name']}`](#{row['name']}) | {row['kind']} | {row['evaluations']} "
        f"| {row['non_vacuous']} | {_boundary_cell(row)} | {_witness_cell(row)} |"
    )


def _section(row: Mapping[str, Any]) -> list[str]:
    lines = [
        f"### {row['name']}",
        "",
        f"{row['statement']} ({row['kind']}, over {row['over']}, {row['subject']})",
        "",
    ]
    for which in ("antecedent", "boundary"):
        condition = row[which]
        if condition is not None:
            label = "when it can fail" if which == "antecedent" else "boundary"
            lines.append(
                f"* {label}: `{condition['name']}` -- {condition['statement']}"
            )
    lines += [
        f"* unreachable under `{tag}`: {why}" for tag, why in row["unreachable"].items()
    ]
    lines += [f"* reads `{r['function']}` ({r['at']})" for r in row["reads"]]
    lines += [f"* guards `{g['item']}` ({g['at']})" for g in row["guards"]]
    lines.append(
        f"* evaluated {row['evaluations']} times, non-vacuous {row['non_vacuous']}, "
        f"at its boundary {_boundary_cell(row)}"
    )
    lines += [
        f"  * {machine}: {c['evaluations']} / {c['non_vacuous']} / {c['boundary']}"
        for machine, c in row["machines"].items()
    ]
    if row["vacuous_in"]:
        lines.append(f"* **never non-vacuous in**: {', '.join(row['vacuous_in'])}")
    witness = row["witness"]
    if witness is None:
        lines.append("* witness: none in this run's machines or the corpus")
    else:
        where = "at its boundary" if witness["at_boundary"] else "non-vacuously"
        lines += [
            (
                f"* witness: [{witness['trace']}]({witness['trace']}), "
                f"{witness['steps']} steps, {where}, from {witness['source']}; "
                f"replay: {witness['replayed']}"
            ),
            "",
            "  ```sh",
            f"  {witness['replay']}",
            "  ```",
        ]
    return lines


def build(
    records: Sequence[Mapping[str, Any]],
    folder: Path,
    run: Mapping[str, Any],
    corpus: Sequence[Path] | None = None,
) -> dict[str, Any]:
    """Write the dossier (and its traces) into `folder`; return it as data."""
    rows = merge(records)
    corpus_witnesses(rows, corpus_files() if corpus is None else corpus)
    for row in rows:
        choose(row)
    folder.mkdir(parents=True, exist_ok=True)
    write_traces(rows, folder)
    machines = sorted(
        str(record["name"]) for record in records if record["kind"] == "machine"
    )
    document = as_json(rows, {**run, "machines": machines})
    write_results(
        {
            folder / "dossier.json": json.dumps(document, indent=2) + "\n",
            folder / "dossier.md": as_markdown(document),
        }
    )
    return document
