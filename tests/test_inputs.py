"""The input boundary (`ci.inputs`) and the final write (`ci.cli.write_results`).

Every file a command reads is read by `read_json` and checked by its format's
loader, which names the file, the field (a JSON path) and the problem in one
`InputError`; values the binding cannot represent are refused there, so a
trace never replays them into a divergence. Every result a command writes
goes through `write_results`: whole or not at all, and a failure after the
work says what was written and where the rest was kept.
"""

from __future__ import annotations

import errno
import io
import json
import os
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from ci import cli
from ci.cli import WriteFailed, one_line, write_results
from ci.inputs import (
    InputError,
    expect_int,
    expect_object,
    expect_types,
    parse_json,
    read_json,
)
from ci.replay.command import main as replay_main

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "ci" / "replay" / "corpus"


def test_an_input_error_names_the_file_the_field_and_the_problem() -> None:
    """`PATH: FIELD: PROBLEM`, with empty parts left out."""
    error = InputError("t.json", "steps[3].op.worker", "expected an integer")

    assert "t.json: steps[3].op.worker: expected an integer" == str(error)
    assert "u.json: x: y" == str(InputError("", "x", "y").in_file("u.json"))
    assert "t.json: no such file" == str(InputError("t.json", "", "no such file"))


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"a": 1', "line 1 column 8: not valid JSON: Expecting ',' delimiter"),
        (b'{"caf\xe9": 1}', "not UTF-8 (byte 5: 0xe9)"),
        (b'{"a": NaN}', "not valid JSON: NaN is not a JSON number"),
        (b'{"a": 1e999}', "not valid JSON: 1e999 is beyond a finite number"),
        (b'{"a": [{"b": "\\ud800"}]}', "a[0].b: text that is not valid Unicode"),
        (b"[" * 100_000, "not valid JSON: maximum recursion depth"),
        (b"9" * 5_000, "not valid JSON: Exceeds the limit (4300 digits)"),
        (b"x" * 65, "more than the cap of 64 bytes"),
    ],
)
def test_read_json_refuses_what_no_format_holds(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    """Bad bytes, bad JSON, non-finite numbers, lone surrogates, too much: refused."""
    path = tmp_path / "f.json"
    path.write_bytes(content)

    with pytest.raises(InputError) as refused:
        read_json(path, bytes_max=64 if content.startswith(b"x") else 1 << 20)

    assert str(refused.value).startswith(f"{path}: {problem}")


def test_read_json_refuses_a_missing_file_and_a_folder(tmp_path: Path) -> None:
    """A path that is not a readable file is named, in one line."""
    with pytest.raises(InputError) as missing:
        read_json(tmp_path / "nowhere.json")
    with pytest.raises(InputError) as folder:
        read_json(tmp_path)

    assert f"{tmp_path / 'nowhere.json'}: no such file" == str(missing.value)
    assert f"{tmp_path}: is a folder, not a file" == str(folder.value)


def test_read_json_refuses_a_device_before_reading_it() -> None:
    """A device file has no end: it is refused by its kind, before any read."""
    with pytest.raises(InputError) as refused:
        read_json(Path("/dev/zero"), bytes_max=1024)

    assert "/dev/zero: a character device, not a regular file" == str(refused.value)


def test_read_json_refuses_a_fifo_without_opening_it(tmp_path: Path) -> None:
    """A FIFO with no writer would block an open: it is refused by `os.stat`."""
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)

    with pytest.raises(InputError) as refused:
        read_json(fifo)

    assert f"{fifo}: a FIFO, not a regular file" == str(refused.value)


def test_read_json_stops_reading_at_its_cap(tmp_path: Path) -> None:
    """A regular file longer than the cap is refused after cap + 1 bytes."""
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)

    with pytest.raises(InputError) as refused:
        read_json(big, bytes_max=1024)

    assert f"{big}: more than the cap of 1024 bytes" == str(refused.value)


def test_an_error_line_escapes_control_characters() -> None:
    """A newline or an escape in a path stays one line, escaped once."""
    error = InputError("a\nb\x1b.json", "steps[0]", "bad\tvalue")

    assert "a\\nb\\x1b.json: steps[0]: bad\\tvalue" == str(error)
    assert str(error) == one_line(str(error))


def test_typed_readers_name_the_field_and_the_range() -> None:
    """Integers within a range (a boolean is none), objects with exactly their keys."""
    with pytest.raises(InputError) as huge:
        expect_int(2**70, "steps[1].op.worker", 0, 2**64 - 1)
    with pytest.raises(InputError) as boolean:
        expect_int(True, "x")  # noqa: FBT003 - the JSON value under test
    with pytest.raises(InputError) as unknown:
        expect_object({"a": 1, "b": 2}, "c", frozenset({"a"}))
    with pytest.raises(InputError) as wrong:
        expect_types({"s": True}, "top", {"s": (int, float)})

    assert f"steps[1].op.worker: {2**70} is outside 0..={2**64 - 1}" == str(huge.value)
    assert "x: expected an integer, got boolean" == str(boolean.value)
    assert "c: unknown field 'b' (known: a)" == str(unknown.value)
    assert "top.s: expected float or int, got boolean" == str(wrong.value)


def test_parse_json_reads_what_the_formats_write() -> None:
    """Plain JSON, non-ASCII text and big (in range) integers are read as written."""
    text = json.dumps({"caf\u00e9": [2**64 - 1, -1.5, None, "\u2713"]})

    assert {"caf\u00e9": [2**64 - 1, -1.5, None, "\u2713"]} == parse_json(text)


# ---- values the binding cannot represent ------------------------------------------

Edit = Callable[[dict[str, Any]], None]


def _set(*path: object, to: object) -> Edit:
    def edit(document: dict[str, Any]) -> None:
        target: Any = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = to

    return edit


BEYOND_THE_BINDING: dict[str, tuple[str, Edit, str]] = {
    "an affinity worker of 2^70": (
        "b16_virtual_ttl.json",
        _set("steps", 1, "op", "dispatched", "worker", to=2**70),
        f"steps[1].op.dispatched.worker: {2**70} is outside 0..=",
    ),
    "a rank past u32": (
        "b16_virtual_ttl.json",
        _set("steps", 1, "op", "dispatched", "rank", to=2**32),
        f"steps[1].op.dispatched.rank: {2**32} is outside 0..={2**32 - 1}",
    ),
    "a negative handle": (
        "b16_virtual_ttl.json",
        _set("steps", 1, "op", "handle", to=-1),
        "steps[1].op.handle: -1 is outside 0..=",
    ),
    "a table larger than usize": (
        "b16_virtual_ttl.json",
        _set("config", "max_entries", to=2**64),
        f"config.max_entries: {2**64} is outside 0..=",
    ),
    "a saturated queue worker past u64": (
        "queue_a_pop_serves_beside_a_blocked_lane.json",
        _set("steps", 3, "op", "dispatch", "saturated", 0, "worker_id", to=2**64),
        "steps[3].op.dispatch.saturated[0].worker_id: ",
    ),
    "a queue quantum past usize": (
        "queue_c3_token_limits_reject_in_the_stated_order.json",
        _set("profile", "classes", 0, "quantum", to=2**64),
        "profile.classes[0].quantum: ",
    ),
    "a scheduler worker it does not have": (
        "scheduler/canary_cancelled_stays_counted.json",
        _set("steps", 0, "op", "worker", to=2),
        "steps[0].op.worker: 2 is not one of the 2 workers",
    ),
    "a scheduler clock past the binding's 600 years": (
        "scheduler/canary_due_off_by_one.json",
        _set("steps", 0, "op", "delta_ms", to=18_934_560_000_000),
        "steps[1].op.delta_ms: the clock reaches 18934560000003 ms",
    ),
    "a history writer past u64": (
        "histories/reaper_refuses_a_removed_session_at_capacity.json",
        _set("writer_id", to=2**64),
        f"writer_id: {2**64} is outside 0..=",
    ),
}
"""Each was replayed as a divergence (exit 1) or a traceback before the boundary."""


@pytest.mark.parametrize("case", sorted(BEYOND_THE_BINDING))
def test_a_value_beyond_the_binding_is_refused_on_reading(
    tmp_path: Path, case: str
) -> None:
    """Exit 2 and one line naming the field, never a verdict about the crate."""
    relative, edit, says = BEYOND_THE_BINDING[case]
    document = json.loads((CORPUS / relative).read_text(encoding="utf-8"))
    edit(document)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()

    with redirect_stdout(out), redirect_stderr(err):
        status = replay_main([str(path)])

    assert 2 == status
    assert "" == out.getvalue()
    assert 1 == len(err.getvalue().splitlines())
    assert err.getvalue().startswith(f"ci.replay: error: {path}: {says}")


# ---- the final write -------------------------------------------------------------


def test_results_are_written_whole(tmp_path: Path) -> None:
    """Each file is written, its folder made, no staging file left beside it."""
    first, second = tmp_path / "a" / "report.json", tmp_path / "a" / "report.md"

    write_results({first: "{}\n", second: b"# r\n"})

    assert "{}\n" == first.read_text(encoding="utf-8")
    assert b"# r\n" == second.read_bytes()
    assert [first, second] == sorted((tmp_path / "a").iterdir())


def _disk_full(path: Path, data: bytes) -> None:
    del data
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def test_a_write_that_fails_says_what_was_written_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk at the second file: the first written, the rest kept elsewhere."""
    written, failing = tmp_path / "report.json", tmp_path / "report.md"
    real = cli._write_whole

    def second_fails(path: Path, data: bytes) -> None:
        (real if path == written else _disk_full)(path, data)

    monkeypatch.setattr(cli, "_write_whole", second_fails)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))

    with pytest.raises(WriteFailed) as failed:
        write_results({written: "{}\n", failing: "# r\n"})

    message = str(failed.value)
    assert message.startswith(
        f"cannot write {failing}: No space left on device; written: {written}; "
        f"kept instead in {tmp_path}/{cli.KEPT_PREFIX}"
    )
    (kept,) = tmp_path.glob(f"{cli.KEPT_PREFIX}*/report.md")
    assert "# r\n" == kept.read_text(encoding="utf-8")
    assert not failing.exists()


def test_a_failed_replace_leaves_the_old_file_and_no_staging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole or not at all: the rename fails, the old content stays."""
    target = tmp_path / "out.json"
    target.write_text("old\n", encoding="utf-8")

    def refuse(self: Path, _target: Path) -> Path:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), str(self))

    monkeypatch.setattr(Path, "replace", refuse)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "kept"))
    (tmp_path / "kept").mkdir()

    with pytest.raises(WriteFailed):
        write_results({target: "new\n"})

    assert "old\n" == target.read_text(encoding="utf-8")
    assert [target] == sorted(path for path in tmp_path.iterdir() if path.is_file())


OUT_OF_RANGE = (-1, 2**64, 2**70)
"""Below every unsigned type, just past `u64` and `usize`, far past both."""


def _integer_fields(
    value: object, path: tuple[object, ...] = ()
) -> list[tuple[object, ...]]:
    """Paths to the integers of an operation, configuration or header."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [path]
    found: list[tuple[object, ...]] = []
    if isinstance(value, dict):
        for key in sorted(value):
            if len(path) == 2 and path[0] == "steps" and key != "op":
                continue  # recorded answers: a changed one is drift, not input
            found += _integer_fields(value[key], (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _integer_fields(item, (*path, index))
    return found


def _corpus_cases() -> list[tuple[Path, tuple[object, ...]]]:
    """Each corpus file's integer fields, one per subject and field name."""
    seen: set[tuple[object, ...]] = set()
    cases = []
    for path in sorted(CORPUS.rglob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for field in _integer_fields(document):
            if field in {("schema_version",), ("history_format",)}:
                continue
            names = tuple(part for part in field if isinstance(part, str))
            key = (document.get("subject"), *names)
            if key not in seen:
                seen.add(key)
                cases.append((path, field))
    return cases


def test_no_integer_out_of_range_in_the_corpus_replays_as_a_verdict(
    tmp_path: Path,
) -> None:
    """Each integer field of the corpus, out of range: refused (2) or modelled (0)."""
    target = tmp_path / "trace.json"
    cases = _corpus_cases()
    verdicts = []
    for source, field in cases:
        for value in OUT_OF_RANGE:
            document = json.loads(source.read_text(encoding="utf-8"))
            _set(*field, to=value)(document)
            target.write_text(json.dumps(document), encoding="utf-8")
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                status = replay_main([str(target)])
            if status not in {0, 2}:
                verdicts.append(f"{source.name} {field} = {value}: exit {status}")

    assert len(cases) > 40  # the scan reaches every subject's fields
    assert [] == verdicts
