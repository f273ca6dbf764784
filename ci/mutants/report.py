"""Reports of the mutation sweep: one shard's, and several shards merged.

A shard's `report.json` holds the set it was cut from (tool, fingerprint, every
id), its shard `K/N`, and one entry per mutant tried: per side (ours, the
crate's own `cargo test`) the outcome, the seconds, the first failing test and
the check that failed; the union outcome and its time to detect. `merge` reads
several shards' reports, refuses any that do not belong together, and writes
one report of the same shape; `report.md` is rendered from the JSON alone, so a
merged report reads like a single run's.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Final

from ci.cli import write_results
from ci.inputs import InputError, read_json

# caught: failed; missed: passed; timeout: killed at the limit; error: could not
# run; flaky (crate only): a failure that did not repeat when rerun alone.
OUTCOMES = ("caught", "missed", "timeout", "error", "flaky")
SIDES = ("ours", "crate", "union")
REPORT_NAME = "report.json"


class MergeError(ValueError):
    """Reports that cannot be merged (one line to print)."""


@dataclass(frozen=True)
class Verdict:
    """One side's result on one mutant (or on the baseline)."""

    outcome: str  # one of OUTCOMES
    seconds: float
    test_id: str = ""  # the first failing test
    check: str = ""  # which comparison, invariant or assertion failed
    detail: str = ""  # its first line


@dataclass
class MutantRecord:
    """Everything recorded about one mutant (no source text: see `logs/<id>.diff`)."""

    id: str
    file: str
    line: int
    operator: str
    description: str
    viable: bool
    build_seconds: float
    seconds: float = 0.0  # wall time for this mutant, build and both sides
    ours: Verdict | None = None
    crate: Verdict | None = None

    def union(self) -> Verdict | None:
        """Either side's catch (the quicker), else the worse of the two outcomes."""
        if self.ours is None or self.crate is None:
            return None
        caught = [v for v in (self.ours, self.crate) if v.outcome == "caught"]
        if caught:
            first = min(caught, key=lambda v: v.seconds)
            side = "ours" if first is self.ours else "crate"
            return Verdict(
                "caught", first.seconds, first.test_id, f"{side}: {first.check}"
            )
        for outcome in ("timeout", "error", "flaky"):
            if outcome in {self.ours.outcome, self.crate.outcome}:
                return Verdict(outcome, max(self.ours.seconds, self.crate.seconds))
        return Verdict("missed", max(self.ours.seconds, self.crate.seconds))

    def verdict(self, side: str) -> Verdict | None:
        """The verdict of `side`: one of SIDES."""
        return self.union() if side == "union" else getattr(self, side)

    def as_json(self) -> dict[str, Any]:
        """The report entry, with the union verdict."""
        entry = asdict(self)
        union = self.union()
        entry["union"] = asdict(union) if union else None
        return entry


def record_from_json(entry: dict[str, Any]) -> MutantRecord:
    """The inverse of `MutantRecord.as_json` (the union is derived, not read)."""

    def verdict(side: str) -> Verdict | None:
        return Verdict(**entry[side]) if entry.get(side) else None

    sides = ("ours", "crate")
    plain = {f.name: entry[f.name] for f in fields(MutantRecord) if f.name not in sides}
    return MutantRecord(**plain, ours=verdict("ours"), crate=verdict("crate"))


def partition(ids: Sequence[str], shard: tuple[int, int]) -> list[str]:
    """Shard K of N: every N-th id of the sorted set, starting at the K-th (1-based).

    The shards of one N are disjoint and together cover the set; which shard a
    mutant falls in depends only on the set, never on a seed or a clock.
    """
    index, count = shard
    if not 1 <= index <= count:
        raise ValueError(f"shard {index}/{count}: expected 1 <= K <= N")
    return sorted(ids)[index - 1 :: count]


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def totals(records: Sequence[MutantRecord]) -> dict[str, Any]:
    """Per side: outcome counts and kill rates over the viable mutants tried."""
    viable = [r for r in records if r.viable]
    result: dict[str, Any] = {
        "tried": len(records),
        "viable": len(viable),
        "unviable": len(records) - len(viable),
        "seconds_per_mutant_median": _median([r.seconds for r in records]),
        "seconds_per_viable_mutant_median": _median([r.seconds for r in viable]),
        "seconds_total": round(sum(r.seconds for r in records), 1),
    }
    for side in SIDES:
        verdicts = [v for r in viable if (v := r.verdict(side)) is not None]
        counts = Counter(v.outcome for v in verdicts)
        detect = [v.seconds for v in verdicts if v.outcome == "caught"]
        result[side] = {
            "outcomes": dict(sorted(counts.items())),
            "kill_rate": _rate(counts["caught"], len(viable)),
            # A hang is not a pass either: caught or timed out.
            "stop_rate": _rate(counts["caught"] + counts["timeout"], len(viable)),
            "seconds_to_detect_median": _median(detect),
            "seconds_to_detect_max": round(max(detect), 1) if detect else None,
        }
    return result


def per_file(records: Sequence[MutantRecord]) -> dict[str, dict[str, Any]]:
    """`totals` for each mutated file."""
    files = sorted({r.file for r in records})
    return {name: totals([r for r in records if r.file == name]) for name in files}


def survivors(records: Sequence[MutantRecord], side: str) -> list[str]:
    """Ids of viable mutants `side` did not catch."""
    found = []
    for record in records:
        verdict = record.verdict(side)
        if record.viable and (verdict is None or verdict.outcome != "caught"):
            found.append(record.id)
    return found


# --- merging -------------------------------------------------------------------


def read_report(folder: Path) -> dict[str, Any]:
    """A shard's report.json (`folder` is its run folder or the file itself)."""
    path = folder if folder.suffix == ".json" else folder / REPORT_NAME
    if not folder.exists():
        raise MergeError(f"no such report folder: {folder}")
    if not path.is_file():
        raise MergeError(f"no {REPORT_NAME} in {folder}")
    try:
        data = read_json(path, REPORT_BYTES_MAX)
    except InputError as error:
        raise MergeError(str(error)) from None
    if not isinstance(data, dict) or "mutant_set" not in data or "shard" not in data:
        raise MergeError(f"{path} is not a report of python -m ci.mutants")
    config = data.get("config")
    if isinstance(config, dict) and OLD_CONFIG_KEY in config:
        config.setdefault("cargo_profile", config.pop(OLD_CONFIG_KEY))
    problem = _report_problem(data)
    if problem is not None:
        raise MergeError(f"{path}: {problem}")
    return data


OLD_CONFIG_KEY: Final[str] = "binding_profile"  # old spelling: reports before
"""What reports written before the renames call their `cargo_profile`."""
REPORT_BYTES_MAX = 64 * 1024 * 1024
"""A shard's report is a few megabytes; a larger file is not one."""
_SHARD = re.compile(r"(\d+)/(\d+)")
_REPORT_TYPES: dict[str, type | tuple[type, ...]] = {
    "mutant_set": dict,
    "shard": str,
    "mutants": list,
    "planned": list,
    "finished": bool,
    "git_commit": str,
    "started_at": str,
    "config": dict,
    "mutants_seconds": (int, float),
    "setup_seconds": (int, float),
    "versions": dict,
}
"""What `merge` reads of a report, and the JSON type each must have."""
_ENTRY_TYPES: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "file": str,
    "line": int,
    "operator": str,
    "description": str,
    "viable": bool,
    "build_seconds": (int, float),
    "seconds": (int, float),
}
"""What `record_from_json` reads of a mutant's entry (besides its verdicts)."""


def _type_problem(
    where: str, data: dict[str, Any], types: dict[str, type | tuple[type, ...]]
) -> str | None:
    for key, wanted in types.items():
        if key not in data:
            return f"{where}{key}: missing"
        value = data[key]
        if isinstance(value, bool) and wanted is not bool:
            return f"{where}{key}: {value!r} is not of the recorded type"
        if not isinstance(value, wanted):
            return f"{where}{key}: {value!r} is not of the recorded type"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{where}{key}: {value!r} is not a finite number"
    return None


def _verdict_problem(where: str, verdict: object) -> str | None:
    if verdict is None:
        return None
    if not isinstance(verdict, dict):
        return f"{where}: not a verdict"
    try:
        Verdict(**verdict)
    except TypeError as error:
        return f"{where}: {error}"
    for key in ("outcome", "test_id", "check", "detail"):
        if not isinstance(verdict.get(key, ""), str):
            return f"{where}.{key}: not a text"
    seconds = verdict["seconds"]
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return f"{where}.seconds: not a number"
    if not math.isfinite(seconds) or seconds < 0:
        return f"{where}.seconds: not a finite number >= 0"
    if verdict["outcome"] not in OUTCOMES:  # the kill rate would drop it silently
        return (
            f"{where}.outcome: {verdict['outcome']!r} is none of {', '.join(OUTCOMES)}"
        )
    return None


def _entry_problem(index: int, entry: object) -> str | None:
    """The first field of one mutant's entry `merge` cannot read, if any."""
    where = f"mutants[{index}]."
    if not isinstance(entry, dict):
        return f"mutants[{index}]: not an entry"
    problem = _type_problem(where, entry, _ENTRY_TYPES) or next(
        (
            found
            for side in SIDES
            if (found := _verdict_problem(f"{where}{side}", entry.get(side)))
        ),
        None,
    )
    if problem is None:
        problem = _entry_range_problem(where, entry)
    if problem is None and entry["viable"]:  # a viable mutant ran both suites
        problem = next(
            (
                f"{where}{side}: a viable mutant without this verdict"
                for side in SIDES[:2]
                if not isinstance(entry.get(side), dict)
            ),
            None,
        )
    return problem


def _entry_range_problem(where: str, entry: dict[str, Any]) -> str | None:
    """Lines count from 1; build and run seconds are not negative."""
    if entry["line"] < 1:
        return f"{where}line: {entry['line']} is not a line number (from 1)"
    for key in ("build_seconds", "seconds"):
        if entry[key] < 0:
            return f"{where}{key}: {entry[key]!r} is below 0"
    return None


def _texts_problem(data: dict[str, Any]) -> str | None:
    """The first of the texts and numbers the merged report and its Markdown show."""
    config = data["config"]
    crate_timeout_s = config.get("crate_timeout_s")
    if isinstance(crate_timeout_s, bool) or not isinstance(
        crate_timeout_s, (int, float)
    ):
        return "config.crate_timeout_s: not a number"
    if not isinstance(config.get("cargo_profile", ""), str):
        return "config.cargo_profile: not a text"
    if not isinstance(data["mutant_set"].get("tool"), str):
        return "mutant_set.tool: not a text"
    return next(
        (
            f"versions.{key}: not a text"
            for key in ("crate", "hypothesis")
            if not isinstance(data["versions"].get(key), str)
        ),
        None,
    )


def _report_problem(data: dict[str, Any]) -> str | None:
    """The first field `merge` cannot read as a shard run writes it, if any."""
    problem = _type_problem("", data, _REPORT_TYPES)
    if problem is not None:
        return problem
    mutant_set = data["mutant_set"]
    if not isinstance(mutant_set.get("fingerprint"), str):
        return "mutant_set.fingerprint: not a text"
    ids = mutant_set.get("ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return "mutant_set.ids: not a list of texts"
    if data.get("kind") != "ids":
        shard = _SHARD.fullmatch(data["shard"])
        if shard is None or not 1 <= int(shard[1]) <= int(shard[2]):
            return f"shard: {data['shard']!r} is not K/N with 1 <= K <= N"
    problem = _texts_problem(data)
    if problem is not None:
        return problem
    for index, entry in enumerate(data["mutants"]):
        problem = _entry_problem(index, entry)
        if problem is not None:
            return problem
    return None


def _shard_of(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    return int(index), int(count)


def merge(folders: Sequence[Path], rechecks: Sequence[Path] = ()) -> dict[str, Any]:
    """One report from several shards' reports of one set and one N.

    Refused: a folder without a report; reports of different sets (fingerprint)
    or different N; one shard given twice; a mutant reported twice (identical:
    a duplicate; different: a conflict); a mutant outside its report's shard.

    `rechecks` are later `--ids` runs of the same set (typically survivors run
    again after the suite gained a rule): each of their entries replaces the
    shard's entry for that mutant, and the merged report lists every
    replacement (`rechecked`: the outcomes before and after, and the commits).
    A mutant in several rechecks takes the last one given (a sorted glob of
    the stamped folders gives them in time order); `before` stays the shard's.
    """
    if not folders:
        raise MergeError("merge needs at least one report folder")
    reports = [(folder, read_report(folder)) for folder in folders]
    first_folder, first = reports[0]
    fingerprint = first["mutant_set"]["fingerprint"]
    count = _shard_of(first["shard"])[1]
    ids = list(first["mutant_set"]["ids"])
    entries: dict[str, tuple[Path, dict[str, Any]]] = {}
    shards: dict[int, Path] = {}
    for folder, data in reports:
        if data["mutant_set"]["fingerprint"] != fingerprint:
            raise MergeError(
                f"{folder} is of another mutant set "
                f"({data['mutant_set']['fingerprint']}, not {fingerprint} "
                f"of {first_folder})"
            )
        index, n = _shard_of(data["shard"])
        if n != count:
            raise MergeError(f"{folder} is shard {index}/{n}, not of N = {count}")
        members = set(partition(ids, (index, n)))
        for entry in data["mutants"]:
            _take(entries, folder, entry, members, data["shard"])
        if index in shards:
            raise MergeError(
                f"shard {index}/{count} given twice: {shards[index]} and {folder}"
            )
        shards[index] = folder
    rechecked = _apply_rechecks(entries, rechecks, fingerprint)
    merged = _merged(reports, entries, shards, count)
    if rechecked:
        merged["rechecked"] = rechecked
    return merged


def _apply_rechecks(
    entries: dict[str, tuple[Path, dict[str, Any]]],
    folders: Sequence[Path],
    fingerprint: str,
) -> list[dict[str, Any]]:
    """Replace shard entries by later `--ids` runs' entries (see `merge`)."""
    replaced: dict[str, dict[str, Any]] = {}
    for folder in folders:
        data = read_report(folder)
        if data["mutant_set"]["fingerprint"] != fingerprint:
            raise MergeError(f"recheck {folder} is of another mutant set")
        if data.get("kind") != "ids":
            raise MergeError(f"recheck {folder} is not an --ids run")
        for entry in data["mutants"]:
            mutant = entry["id"]
            # Rechecked again (a later run, after a change to the suite): the
            # later recheck stands, and `before` stays the shard's outcome.
            earlier = replaced.get(mutant)
            before = entries.get(mutant)
            replaced[mutant] = {
                "id": mutant,
                "before": earlier["before"]
                if earlier is not None
                else (None if before is None else _outcomes(before[1])),
                "after": _outcomes(entry),
                "folder": folder.name,
                "git_commit": data["git_commit"],
            }
            entries[mutant] = (folder, entry)
    return [replaced[key] for key in sorted(replaced)]


def _outcomes(entry: dict[str, Any]) -> dict[str, str]:
    if not entry.get("viable", True):
        return dict.fromkeys(SIDES, "unviable")
    return {side: entry[side]["outcome"] for side in SIDES if entry.get(side)}


def _take(
    entries: dict[str, tuple[Path, dict[str, Any]]],
    folder: Path,
    entry: dict[str, Any],
    members: set[str],
    shard: str,
) -> None:
    mutant = entry["id"]
    if mutant not in members:
        raise MergeError(f"{folder}: mutant {mutant} is not in shard {shard}")
    if mutant in entries:
        earlier, seen = entries[mutant]
        kind = "duplicate entries" if seen == entry else "conflicting entries"
        raise MergeError(f"{kind} for mutant {mutant} in {earlier} and {folder}")
    entries[mutant] = (folder, entry)


def _merged(
    reports: Sequence[tuple[Path, dict[str, Any]]],
    entries: dict[str, tuple[Path, dict[str, Any]]],
    shards: dict[int, Path],
    count: int,
) -> dict[str, Any]:
    first = reports[0][1]
    records = [record_from_json(entries[key][1]) for key in sorted(entries)]
    shard_rows = []
    for folder, data in sorted(reports, key=lambda pair: _shard_of(pair[1]["shard"])):
        planned = len(data["planned"])
        shard_rows.append(
            {
                "shard": data["shard"],
                "folder": folder.name,
                "tried": len(data["mutants"]),
                "planned": planned,
                "complete": data["finished"] and len(data["mutants"]) == planned,
                "git_commit": data["git_commit"],
                "started_at": data["started_at"],
                # Reports written before these settings existed built with
                # release and gave the crate's side 180 s.
                "cargo_profile": data["config"].get("cargo_profile", "release"),
                "crate_timeout_s": data["config"]["crate_timeout_s"],
                "seconds": data["mutants_seconds"],
                "setup_seconds": data["setup_seconds"],
            }
        )
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in shards]
    return {
        "kind": "merged",
        "mutant_set": first["mutant_set"],
        "versions": first["versions"],
        "shard": f"{len(shards)} of {count}",
        "shards": shard_rows,
        "shards_missing": missing,
        "shard_runs_seconds": round(
            sum(row["setup_seconds"] + row["seconds"] for row in shard_rows), 1
        ),
        "coverage": {"tried": len(records), "of": len(first["mutant_set"]["ids"])},
        "totals": totals(records),
        "per_file": per_file(records),
        "survivors": {side: survivors(records, side) for side in SIDES},
        "mutants": [record.as_json() for record in records],
    }


# --- Markdown ------------------------------------------------------------------


def percent(rate: float | None) -> str:
    """A rate as a whole percentage, or `n/a` when it has no denominator."""
    return "n/a" if rate is None else f"{100 * rate:.0f} %"


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(cell).replace("|", "/") for cell in cells) + " |"


def _head(*cells: str) -> list[str]:
    return [_row(*cells), _row(*["---"] * len(cells))]


def _rates(t: dict[str, Any], label: str) -> list[str]:
    return [
        _row(
            f"{label}: kill rate over {t['viable']} viable",
            *(
                f"{percent(t[s]['kill_rate'])} ({t[s]['outcomes'].get('caught', 0)})"
                for s in SIDES
            ),
        )
    ]


def markdown(data: dict[str, Any], title: str) -> str:
    """report.md from a report's JSON (one shard's or merged)."""
    t = data["totals"]
    mutant_set = data["mutant_set"]
    versions = data["versions"]
    lines = [
        f"# {title}",
        "",
        (
            f"Mutant set: {mutant_set['tool']}, {len(mutant_set['ids'])} mutants "
            f"(fingerprint `{mutant_set['fingerprint']}`); crate "
            f"{versions['crate']}, Hypothesis {versions['hypothesis']}. "
            + (
                f"Shards: {data['shard']}."
                if data.get("kind") == "merged"
                else f"Shard {data['shard']}."
            )
        ),
        "",
    ]
    if data.get("interrupted"):
        lines += [f"**Run stopped early: {data['interrupted']}.**", ""]
    lines += [
        *_head("", "ours", "crate's tests", "union"),
        *_rates(t, "all"),
        *[
            line
            for name, file_totals in sorted(data["per_file"].items())
            for line in _rates(file_totals, Path(name).name)
        ],
        _row(
            "caught or timed out",
            *(percent(t[s]["stop_rate"]) for s in SIDES),
        ),
    ]
    for outcome in OUTCOMES:
        lines.append(_row(outcome, *(t[s]["outcomes"].get(outcome, 0) for s in SIDES)))
    lines.append(
        _row(
            "time to detect, median / max (s)",
            *(
                f"{t[s]['seconds_to_detect_median']} / {t[s]['seconds_to_detect_max']}"
                for s in SIDES
            ),
        )
    )
    lines += [
        "",
        (
            f"{t['tried']} mutants tried, {t['unviable']} unviable (do not compile). "
            f"Median {t['seconds_per_mutant_median']} s per mutant "
            f"({t['seconds_per_viable_mutant_median']} s per viable one); "
            f"{t['seconds_total'] / 60:.1f} min in all."
        ),
        "",
    ]
    if "shards" in data:
        lines += [
            "## Shards",
            "",
            *_head(
                "shard",
                "tried",
                "planned",
                "complete",
                "commit",
                "build profile",
                "crate limit (s)",
                "minutes (set-up + mutants)",
            ),
        ]
        lines += [
            _row(
                row["shard"],
                row["tried"],
                row["planned"],
                row["complete"],
                f"`{row['git_commit'][:10]}`",
                row["cargo_profile"],
                f"{row['crate_timeout_s']:.0f}",
                f"{row['setup_seconds'] / 60:.1f} + {row['seconds'] / 60:.1f}",
            )
            for row in data["shards"]
        ]
        lines += [
            "",
            (
                f"Missing shards: {', '.join(data['shards_missing']) or 'none'}. "
                f"The shard runs took {data['shard_runs_seconds'] / 3600:.1f} "
                "hours of set-up and mutants in all."
            ),
            "",
        ]
    if data.get("rechecked"):
        lines += [
            "## Rechecked by later runs",
            "",
            "Entries of these mutants come from a later `--ids` run, not a shard.",
            "",
            *_head("id", "before (ours / crate)", "after (ours / crate)", "commit"),
        ]
        lines += [
            _row(
                row["id"],
                _pair(row["before"]),
                _pair(row["after"]),
                f"`{row['git_commit'][:10]}`",
            )
            for row in data["rechecked"]
        ]
        lines.append("")
    lines += _survivor_lines(data)
    lines += [
        "## Every mutant",
        "",
        *_head(
            "id",
            "mutant",
            "ours",
            "caught by (ours)",
            "crate",
            "caught by",
            "union",
            "s",
        ),
    ]
    for entry in data["mutants"]:
        if not entry["viable"]:
            lines.append(
                _row(entry["id"], f"`{entry['description']}`", "unviable", *[""] * 5)
            )
            continue
        ours, crate, union = entry["ours"], entry["crate"], entry["union"]
        lines.append(
            _row(
                entry["id"],
                f"`{entry['description']}`",
                f"{ours['outcome']} {ours['seconds']:.0f} s",
                f"{ours['test_id']} {ours['check']}".strip(),
                f"{crate['outcome']} {crate['seconds']:.0f} s",
                f"{crate['test_id']} {crate['check']}".strip(),
                union["outcome"],
                f"{entry['seconds']:.0f}",
            )
        )
    return "\n".join(lines) + "\n"


def _pair(outcomes: dict[str, str] | None) -> str:
    if outcomes is None:
        return "not in a shard"
    return f"{outcomes.get('ours', '-')} / {outcomes.get('crate', '-')}"


def _survivor_lines(data: dict[str, Any]) -> list[str]:
    by_id = {entry["id"]: entry for entry in data["mutants"]}
    lines = ["## Survivors", ""]
    for side, label in (("ours", "of our suite"), ("union", "of both suites")):
        ids = data["survivors"][side]
        lines.append(f"{len(ids)} {label}" + (":" if ids else "."))
        lines += [f"- {i} `{by_id[i]['description']}`" for i in ids]
        lines.append("")
    return lines


def write(folder: Path, data: dict[str, Any], title: str) -> None:
    """report.json and report.md into `folder` (a failure is `WriteFailed`)."""
    write_results(
        {
            folder / REPORT_NAME: json.dumps(data, indent=2) + "\n",
            folder / "report.md": markdown(data, title),
        }
    )
