"""Distributed fuzzing with a real Redis: two workers find a canary, a third replays it.

The server is the system's `redis-server` (`.ci/run` installs the Debian
package), started on a free loopback port for each test. If there is none, or
it does not start, the tests skip and say why; they never pass without one.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from ci.determinism.command import main as determinism_main
from ci.fuzz.command import main as fuzz_main
from ci.replay.artifacts import folder_of_replay_line
from ci.soak.command import main as soak_main
from ci.soak.merge import main as soak_merge_main
from ci.trust.database import KEY_PREFIX, SharedDatabase, open_database

REPO_ROOT = Path(__file__).resolve().parent.parent
READY_MARK = "Ready to accept connections"
LOG_LINES_MAX = 500
START_ATTEMPTS_MAX = 3
STOP_TIMEOUT_S = 30
RUN_TIMEOUT_S = 900
CANARY = "canary-late-expiry"
_FAILURE = re.compile(rf"^FAILURE {CANARY} \(worker \d+, seed \d+\): (?P<what>.+)$")
_REPLAY = re.compile(r"^  replay: (?P<command>python -m ci\.fuzz --replay .+)$")
_TRACE = re.compile(r"^  trace: +(?:cd \S+ && )?python -m ci\.replay (?P<folder>\S+)")
"""A trace line; a gate run on a source tree prefixes `cd TREE && `."""


@dataclass
class RedisServer:
    """A redis-server this test started."""

    process: subprocess.Popen[str]
    port: int
    drain: threading.Thread  # keeps reading its log so that the pipe never fills

    @property
    def url(self) -> str:
        """Its URL, database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        """Stop it (idempotent)."""
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=STOP_TIMEOUT_S)
        self.drain.join(timeout=STOP_TIMEOUT_S)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start(binary: str, folder: Path) -> tuple[RedisServer | None, str]:
    """Start a server; wait for its ready line (no sleeping: read its log)."""
    port = _free_port()
    process = subprocess.Popen(  # noqa: S603 - the system's redis-server
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    log = []
    for _ in range(LOG_LINES_MAX):
        line = process.stdout.readline()
        if not line:  # the server exited
            break
        log.append(line)
        if READY_MARK in line:
            drain = threading.Thread(target=process.stdout.read, daemon=True)
            drain.start()
            return RedisServer(process, port, drain), "".join(log)
    process.kill()
    process.wait()
    process.stdout.close()
    return None, "".join(log)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh redis-server on a free port, stopped afterwards."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no redis-server on PATH (.ci/run installs the Debian package)")
    log = ""
    for _ in range(START_ATTEMPTS_MAX):
        server, log = _start(binary, tmp_path)
        if server is not None:
            break
    else:
        last = log.strip().splitlines()[-1:] or ["no output"]
        pytest.skip(
            f"redis-server did not start ({START_ATTEMPTS_MAX} tries): {last[0]}"
        )
    try:
        yield server
    finally:
        server.stop()


def _python_m(*arguments: str, hash_seed: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and modules
        [sys.executable, "-m", *arguments],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


@pytest.mark.slow
@pytest.mark.crate
def test_two_workers_find_the_canary_and_a_fresh_process_replays_it_from_redis(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """The failure lands in Redis; a fresh process replays it with nothing local."""
    fuzz = _python_m(
        "ci.fuzz", "--workers", "2", "--redis", redis_server.url,
        "--db", str(tmp_path / "workers-db"), "--artifacts", str(tmp_path / "fuzz"),
        "--tests", CANARY, "--batches", "1", "--examples", "100",
        "--runs", "12", "--seed", "1", "--progress-every", "600",
        hash_seed="1",
    )  # fmt: skip
    print(fuzz.stdout)
    lines = fuzz.stdout.splitlines()
    found = {m.group("what") for line in lines if (m := _FAILURE.match(line))}
    replays = {m.group("command") for line in lines if (m := _REPLAY.match(line))}
    stored = redis.Redis.from_url(redis_server.url).keys(KEY_PREFIX + b"*")

    assert 1 == fuzz.returncode, fuzz.stderr
    assert found
    assert {
        f"python -m ci.fuzz --replay {CANARY} --redis {redis_server.url}"
    } == replays
    assert stored

    # A third process, another hash seed, an empty local database: Redis only.
    replay = _python_m(
        *replays.pop().removeprefix("python -m ").split(),
        "--db", str(tmp_path / "empty-db"), "--artifacts", str(tmp_path / "replay"),
        hash_seed="2",
    )  # fmt: skip
    print(replay.stdout)
    reproduced = replay.stdout.splitlines()[0].removeprefix(f"REPRODUCED {CANARY}: ")
    replayed_traces = [
        (REPO_ROOT / folder_of_replay_line(line.strip()) / "trace.json").read_bytes()
        for line in replay.stdout.splitlines()
        if _TRACE.match(line)
    ]
    fuzzed_traces = [
        (REPO_ROOT / folder_of_replay_line(line.strip()) / "trace.json").read_bytes()
        for line in lines
        if _TRACE.match(line)
    ]

    assert 1 == replay.returncode, replay.stdout + replay.stderr
    assert reproduced in found
    assert 1 == len(replayed_traces)
    assert replayed_traces[0] in fuzzed_traces


def test_a_lost_redis_leaves_every_example_in_the_local_directory(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """Saving after Redis went away switches to the directory, which has both."""
    database = open_database(redis_server.url, tmp_path / "local")
    assert isinstance(database, SharedDatabase)
    database.save(b"key", b"before")
    redis_server.stop()

    database.save(b"key", b"after")

    assert database.fallback_reason is not None
    assert [b"after", b"before"] == sorted(database.local.fetch(b"key"))
    assert [b"after", b"before"] == sorted(database.fetch(b"key"))


def test_an_unreachable_redis_is_one_line_and_exit_2() -> None:
    """Nothing listens on port 1: the fuzzer says so in one line."""
    result = _python_m(
        "ci.fuzz", "--workers", "1", "--redis", "redis://127.0.0.1:1/0", hash_seed="0"
    )

    assert 2 == result.returncode
    assert "" == result.stdout
    assert 1 == len(result.stderr.splitlines())
    assert result.stderr.startswith(
        "ci.fuzz: error: cannot reach Redis at redis://127.0.0.1:1/0"
    )


@pytest.mark.parametrize(
    "arguments",
    [
        ["ci.fuzz", "--workers", "2", "--for", "soon"],
        ["ci.soak", "--seeds", "-3"],
        ["ci.soak", "merge", "no/such/soak"],
        ["ci.determinism", "--tests", "nope"],
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(arguments: list[str]) -> None:
    """Every trust command refuses bad arguments with one line, never a traceback."""
    result = _python_m(*arguments, hash_seed="0")

    assert 2 == result.returncode
    assert 1 == len(result.stderr.splitlines()), result.stderr
    command = " ".join(arguments[:2]) if arguments[1:2] == ["merge"] else arguments[0]
    assert result.stderr.startswith(f"{command}: error: ")


@pytest.mark.parametrize(
    ("main", "arguments"),
    [
        (fuzz_main, []),
        (fuzz_main, ["--workers", "0"]),
        (fuzz_main, ["--workers", "2", "--tests", "nope"]),
        (fuzz_main, ["--replay", "affinity,queue"]),
        (fuzz_main, ["--workers", "2", "--examples", "many"]),
        (soak_main, []),
        (soak_main, ["--seeds", "2", "--settings", "weekly"]),
        (soak_main, ["--seeds", "2", "--jobs", "1000"]),
        (soak_merge_main, []),
        (soak_merge_main, ["no/such/soak", "--out"]),
        (determinism_main, ["--examples", "x"]),
        (determinism_main, ["--hash-seeds", "1"]),
        (determinism_main, ["--tests", "", "--failing", ""]),
    ],
)
def test_more_bad_arguments_are_one_line_and_exit_2(
    main: Callable[[list[str]], int],
    arguments: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The same refusals, in process: one line on stderr, exit 2, nothing on stdout."""
    status = main(arguments)
    captured = capsys.readouterr()

    assert 2 == status
    assert "" == captured.out
    assert 1 == len(captured.err.splitlines()), captured.err
