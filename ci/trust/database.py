"""The shared example database: Redis, with a local directory as the fallback.

`open_database(None, local)` is a plain directory database. With a Redis URL,
every example goes to Redis *and* to the local directory; reads merge both.
If Redis cannot be reached at the start, that is an error the command reports
in one line. If it goes away later, the run carries on with the local directory
alone and says so (`SharedDatabase.fallback_reason`): nothing found is lost,
and `--db DIR` replays it from there.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Final

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

if TYPE_CHECKING:
    import redis

KEY_PREFIX: Final[bytes] = b"dynamo-verify:"
"""Our keys in a Redis that may be shared with other projects."""
EXPIRE_AFTER: Final[timedelta] = timedelta(days=30)
"""Redis forgets an example nobody read or wrote for this long."""
CONNECT_TIMEOUT_S: Final[float] = 5.0
SOCKET_TIMEOUT_S: Final[float] = 30.0


def redis_errors() -> tuple[type[Exception], ...]:
    """What a lost Redis raises (the client is imported only when used)."""
    from redis import exceptions  # noqa: PLC0415 - the project imports without redis

    return (exceptions.ConnectionError, exceptions.TimeoutError)


class DatabaseUnavailableError(Exception):
    """The named Redis cannot be reached; the message is one line."""


class SharedDatabase(ExampleDatabase):
    """Redis first, a local directory always; Redis errors switch to the directory."""

    def __init__(self, primary: ExampleDatabase, local: ExampleDatabase) -> None:
        """Write to both, read from both."""
        super().__init__()
        self.primary = primary
        self.local = local
        self.fallback_reason: str | None = None
        self._errors = redis_errors()

    def __repr__(self) -> str:
        return f"SharedDatabase({self.primary!r}, fallback={self.local!r})"

    def _on_primary(self, action: str, *args: bytes) -> Iterable[bytes]:
        if self.fallback_reason is not None:
            return ()
        try:
            found = getattr(self.primary, action)(*args)
            return list(found) if found is not None else ()
        except self._errors as error:
            self.fallback_reason = f"{type(error).__name__}: {error}"
            return ()

    def fetch(self, key: bytes) -> Iterable[bytes]:
        """Every value under `key` in Redis or in the local directory, once each."""
        seen: set[bytes] = set()
        for value in [*self._on_primary("fetch", key), *self.local.fetch(key)]:
            if value not in seen:
                seen.add(value)
                yield value

    def save(self, key: bytes, value: bytes) -> None:
        """Keep `value` locally and in Redis (while Redis answers)."""
        self.local.save(key, value)
        self._on_primary("save", key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        """Forget `value` in both."""
        self.local.delete(key, value)
        self._on_primary("delete", key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        """Move `value` from `src` to `dest` in both."""
        self.local.move(src, dest, value)
        self._on_primary("move", src, dest, value)


def connect(url: str) -> redis.Redis:
    """A client for `url`, checked with a PING; unreachable is one-line error."""
    import redis  # noqa: PLC0415 - the project imports without redis

    unreachable: tuple[type[Exception], ...] = (
        *redis_errors(),
        redis.exceptions.ResponseError,
    )
    try:
        client = redis.Redis.from_url(
            url,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            socket_timeout=SOCKET_TIMEOUT_S,
        )
        client.ping()
    except ValueError as error:
        raise DatabaseUnavailableError(f"bad Redis URL {url!r}: {error}") from None
    except unreachable as error:
        raise DatabaseUnavailableError(
            f"cannot reach Redis at {url}: {error}"
        ) from None
    return client


def open_database(redis_url: str | None, local_dir: Path) -> ExampleDatabase:
    """The database a run shares: the directory alone, or Redis beside it."""
    local = DirectoryBasedExampleDatabase(str(local_dir))
    if redis_url is None:
        return local
    from hypothesis.extra.redis import RedisExampleDatabase  # noqa: PLC0415 - idem

    primary = RedisExampleDatabase(
        connect(redis_url), expire_after=EXPIRE_AFTER, key_prefix=KEY_PREFIX
    )
    return SharedDatabase(primary, local)
