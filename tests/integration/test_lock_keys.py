"""The advisory-lock keys have one name each and the same number in Python and in SQL, so that
Python's and SQL's takers of one lock (processing and compaction, a writer and the compaction)
exclude each other."""

from __future__ import annotations

import re
from pathlib import Path

import asyncpg
import pytest

import energy_platform
from energy_platform.core.db.locks import LockKey
from energy_platform.core.paths import migrations_dir

# A lock call whose first argument is a number: a key that bypasses LockKey and lock_key.
BARE_KEY = re.compile(r"pg_(?:try_)?advisory_\w*lock\w*\(\s*-?(?:0x)?\d")


async def test_sql_knows_every_key_by_the_python_name_and_no_other(
    db: asyncpg.Connection,
) -> None:
    rows = await db.fetch("SELECT name, key FROM cluster.lock_keys()")

    assert sorted((r["name"], r["key"]) for r in rows) == sorted(
        (key.sql_name, int(key)) for key in LockKey
    )
    for key in LockKey:
        assert await db.fetchval("SELECT cluster.lock_key($1)", key.sql_name) == key


def test_keys_are_distinct() -> None:
    # __members__ holds aliases too: an IntEnum member with a taken value would be one.
    numbers = [int(key) for key in LockKey.__members__.values()]
    assert len(set(numbers)) == len(numbers)


async def test_sql_keys_are_distinct(db: asyncpg.Connection) -> None:
    assert await db.fetchval(
        "SELECT count(DISTINCT key) = count(*) AND count(DISTINCT name) = count(*)"
        " FROM cluster.lock_keys()"
    )


async def test_an_unknown_name_is_an_error_not_a_lock_on_null(db: asyncpg.Connection) -> None:
    with pytest.raises(asyncpg.InvalidParameterValueError, match="no advisory lock is named"):
        await db.fetchval("SELECT cluster.lock_key('engine_feeds')")


def test_no_lock_is_taken_with_a_bare_number() -> None:
    sources = [
        *Path(energy_platform.__file__).parent.rglob("*.py"),
        *migrations_dir().joinpath("functions").glob("*.sql"),
    ]
    bare = [
        f"{path.name}: {match.group(0)}"
        for path in sources
        for match in BARE_KEY.finditer(path.read_text())
    ]
    assert bare == []
