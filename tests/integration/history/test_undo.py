"""Every write to a raw stream can be taken back: an import (into an empty stretch too), a
removal and an undo are each one correction, and undo puts back exactly the state before it
where its points still hold what it left, or refuses, naming the points, and changes nothing
(docs/api.md#undo). Removals are bounded and thaw under the lock they delete under; an
import body is bounded before it is decoded; the admin import is all or nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx
import pytest

from energy_platform.core.settings import Settings
from energy_platform.history import http as history_http
from energy_platform.history.points import MAX_BODY_BYTES
from tests.support.admin import admin_refusal, run_admin
from tests.support.data import T0
from tests.support.engine import Feed, NewFeed
from tests.support.history import points_json, points_of, remove, send, undo
from tests.support.services import eventually

JSON = "application/json"
JAN_2 = T0 + 86_400  # 2026-01-02T00:00Z
T = [JAN_2 + 60 * k for k in range(8)]
"""Eight times a minute apart in one UTC day."""


async def log_size(db: asyncpg.Connection, feed: Feed) -> int:
    return await db.fetchval(
        "SELECT count(*) FROM cluster.correction_log l JOIN cluster.streams s"
        " ON s.id = l.stream_id WHERE s.feed_id = $1",
        feed.id,
    )


async def test_an_import_into_an_empty_stretch_is_undone(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    stream = await feed.raw_stream(channel=1, medium=1)
    written = await send(api, feed, stream, points_json([(t, 1000.0) for t in T]), JSON)
    assert written.json()["inserted"] == 8

    undone = await undo(api, feed, written.json()["correction"])

    assert undone.status_code == 200, undone.text
    assert undone.json()["restored"] == 8
    assert await points_of(feed.db, stream) == {}
    # The engine recomputes the stretch: its day is queued.
    assert await feed.db.fetchval(
        "SELECT count(*) > 0 FROM cluster.dirty_ranges WHERE stream_id = $1", stream
    )


async def overlapping(feed: Feed, api: httpx.AsyncClient) -> tuple[int, str, str]:
    """A stream holding 9 at T2 and 7 at T7 (a device's), then A writes 1 at T1..T4 (adds T1,
    T3, T4, replaces T2) and B writes 2 at T3..T6 (replaces A's T3 and T4, adds T5, T6)."""
    stream = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(stream, [(T[2], 9.0), (T[7], 7.0)])
    a = await send(api, feed, stream, points_json([(t, 1.0) for t in T[1:5]]), JSON)
    b = await send(api, feed, stream, points_json([(t, 2.0) for t in T[3:7]]), JSON)
    assert (a.json()["inserted"], a.json()["replaced"]) == (3, 1)
    assert (b.json()["inserted"], b.json()["replaced"]) == (2, 2)
    return stream, a.json()["correction"], b.json()["correction"]


async def test_undoing_b_then_a_restores_the_original(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    stream, a, b = await overlapping(feed, api)

    undone_b = await undo(api, feed, b)
    assert undone_b.json()["restored"] == 4, undone_b.text
    assert await points_of(feed.db, stream) == {T[1]: 1, T[2]: 1, T[3]: 1, T[4]: 1, T[7]: 7}
    undone_a = await undo(api, feed, a)
    assert undone_a.json()["restored"] == 4, undone_a.text

    assert await points_of(feed.db, stream) == {T[2]: 9, T[7]: 7}


async def test_undoing_a_first_is_refused_where_b_overwrote_its_points_and_changes_nothing(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed = await new_feed("UTC")
    stream, a, _ = await overlapping(feed, api)
    before, corrections = await points_of(feed.db, stream), await log_size(feed.db, feed)

    refused = await undo(api, feed, a)

    assert refused.status_code == 409
    assert refused.headers["content-type"].startswith("application/problem+json")
    detail = refused.json()["detail"]
    assert "2 of its points" in detail
    assert f"at {T[3]} " in detail
    assert f"at {T[4]} " in detail
    assert f"at {T[1]} " not in detail
    # The admin command refuses the same way: a non-zero exit naming the points.
    by_operator = await admin_refusal(settings, "corrections", "undo", a)
    assert f"at {T[3]} " in by_operator
    assert await points_of(feed.db, stream) == before
    assert await log_size(feed.db, feed) == corrections


async def test_undoing_a_first_works_where_b_left_its_points_alone(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    stream = await feed.raw_stream(channel=1, medium=1)
    # Overlapping stretches, interleaved times: B touches none of A's points.
    a = await send(api, feed, stream, points_json([(t, 1.0) for t in T[0:6:2]]), JSON)
    b = await send(api, feed, stream, points_json([(t, 2.0) for t in T[1:7:2]]), JSON)

    undone_a = await undo(api, feed, a.json()["correction"])
    assert undone_a.status_code == 200, undone_a.text
    assert await points_of(feed.db, stream) == {T[1]: 2, T[3]: 2, T[5]: 2}
    undone_b = await undo(api, feed, b.json()["correction"])
    assert undone_b.status_code == 200, undone_b.text
    assert await points_of(feed.db, stream) == {}


async def test_a_removal_is_not_undone_over_a_point_written_into_its_gap(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed = await new_feed("UTC")
    stream = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(stream, [(t, 5.0) for t in T[:5]])
    removed = await remove(api, feed, stream, T[1], T[3])
    assert removed.json()["deleted"] == 3
    await feed.ingest(stream, [(T[2], 42.0)])  # the device's point into the gap

    refused = await undo(api, feed, removed.json()["correction"])

    assert refused.status_code == 409
    assert f"at {T[2]} " in refused.json()["detail"]
    assert "now 42" in refused.json()["detail"]
    by_operator = await admin_refusal(settings, "corrections", "undo", removed.json()["correction"])
    assert "1 of its points" in by_operator
    # Nothing half-restored: T1 and T3 stay removed, the device's point stays.
    assert await points_of(feed.db, stream) == {T[0]: 5, T[2]: 42, T[4]: 5}


async def test_an_admin_import_is_all_or_nothing_and_a_resent_file_changes_nothing(
    new_feed: NewFeed, settings: Settings, tmp_path: Path
) -> None:
    feed = await new_feed("UTC")
    good = [f"{JAN_2 + 10 * k},{k % 7}" for k in range(100_010)]  # more than one chunk
    history = tmp_path / "history.csv"
    history.write_text("\n".join([*good, "12:00,1", *good[:5]]) + "\n")
    args = ("import", str(feed.id), "--channel", "4", "--device", "2", "--medium", "1")

    refused = await admin_refusal(settings, *args, "--file", str(history))
    assert "line 100011" in refused
    # Not a point, nor the stream it would have made, nor a correction.
    assert await feed.db.fetchval(
        "SELECT count(*) FROM cluster.streams WHERE feed_id = $1", feed.id
    ) == 0  # fmt: skip
    assert await log_size(feed.db, feed) == 0

    history.write_text("\n".join(good[:1000]) + "\n")
    done = await run_admin(settings, *args, "--file", str(history))
    assert (done["inserted"], done["replaced"], done["unchanged"]) == (1000, 0, 0)
    stream = int(done["stream"])
    again = await run_admin(settings, *args, "--file", str(history))
    assert (again["inserted"], again["unchanged"], again["correction"]) == (0, 1000, None)
    # One correction, and nothing recorded for the resent one.
    log = await feed.db.fetch(
        "SELECT correction, added FROM cluster.correction_log WHERE stream_id = $1", stream
    )
    assert [tuple(r) for r in log] == [(int(done["correction"]), 1000)]

    undone = await run_admin(settings, "corrections", "undo", done["correction"])
    assert undone["restored"] == 1000
    assert await points_of(feed.db, stream) == {}


async def test_a_removal_past_its_bounds_is_413_naming_the_bound(
    new_feed: NewFeed, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    feed = await new_feed("UTC")
    stream = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(stream, [(t, 5.0) for t in T[:5]])
    day = datetime.fromtimestamp(JAN_2, UTC).date()
    assert await feed.db.fetchval("SELECT cluster.compact_day($1, $2)", stream, day) == 5

    too_long = await remove(api, feed, stream, JAN_2, JAN_2 + 367 * 86_400)
    assert too_long.status_code == 413
    assert "366 days" in too_long.json()["detail"]
    # The points bound counts the compact tier's points too (the day above is compacted).
    monkeypatch.setattr(history_http, "MAX_REMOVED_POINTS", 4)
    too_many = await remove(api, feed, stream, T[0], T[4])
    assert too_many.status_code == 413
    assert "at most 4 points" in too_many.json()["detail"]
    assert await feed.db.fetchval(
        "SELECT points FROM cluster.point_days WHERE stream_id = $1", stream
    ) == 5  # fmt: skip

    within = await remove(api, feed, stream, T[1], T[4])
    assert within.json()["deleted"] == 4
    assert await points_of(feed.db, stream) == {T[0]: 5}


async def test_a_removal_waiting_for_a_compaction_of_its_day_removes_the_compacted_points(
    new_feed: NewFeed, database_url: str
) -> None:
    feed = await new_feed("UTC")
    stream = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(stream, [(t, 5.0) for t in T[:5]])
    day = datetime.fromtimestamp(JAN_2, UTC).date()
    compactor = await asyncpg.connect(database_url)
    remover = await asyncpg.connect(database_url)
    try:
        # The compaction has moved the day but not committed when the removal starts.
        compacting = compactor.transaction()
        await compacting.start()
        await compactor.fetchval("SELECT cluster.compact_day($1, $2)", stream, day)
        pid = remover.get_server_pid()
        removing = asyncio.create_task(
            remover.fetchrow(
                "SELECT * FROM cluster.delete_points($1, to_timestamp($2), to_timestamp($3),"
                " 'test', 100)",
                stream,
                T[0],
                T[4],
            )
        )
        await eventually(
            lambda: feed.db.fetchval(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid
            )
        )
        await compacting.commit()
        row = await removing
    finally:
        await compactor.close()
        await remover.close()

    assert row is not None
    assert row["deleted"] == 5
    assert await points_of(feed.db, stream) == {}
    assert await feed.db.fetchval(
        "SELECT count(*) FROM cluster.point_days WHERE stream_id = $1", stream
    ) == 0  # fmt: skip


async def test_an_import_body_is_bounded_before_it_is_decoded(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    stream = await feed.raw_stream(channel=1, medium=1)
    # 100,001 pairs, then what no decoder accepts: counted first, so 413 and not 400.
    many = b"[" + b"[0,0]," * 100_001 + b"not JSON"
    too_many = await send(api, feed, stream, many, JSON)
    assert too_many.status_code == 413
    assert "100,000 points" in too_many.json()["detail"]
    too_big = await send(api, feed, stream, b"[" + b" " * MAX_BODY_BYTES + b"]", JSON)
    assert too_big.status_code == 413
    assert f"{MAX_BODY_BYTES:,} bytes" in too_big.json()["detail"]
    lines = await send(api, feed, stream, b"0,0\n" * 100_001, "text/csv")
    assert lines.status_code == 413
    assert await points_of(feed.db, stream) == {}
