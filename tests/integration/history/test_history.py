"""History in and spikes out: points added to, replaced in and removed from a raw stream over
the data API and the admin commands enter as late data does (processed points, costs and day
totals follow), and every replaced or removed point is in the audit trail until it expires."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx
import pytest

from energy_platform import seeding
from energy_platform.core.settings import RetentionSettings, Settings
from energy_platform.engine.retention import enforce
from tests.support.admin import admin_refusal, run_admin
from tests.support.data import T0
from tests.support.engine import Feed, NewFeed, api_buckets, process
from tests.support.history import auth, points_json, send
from tests.support.services import eventually

DAY = 86_400
JAN_2 = T0 + DAY  # 2026-01-02T00:00Z, a UTC day of its own (Europe/Prague: 01:00 local)
POWER = "Electricity, channel 1"
COST = "Electricity cost, channel 1"


async def clamp(feed: Feed) -> int:
    stream = await feed.raw_stream(channel=1, medium=1)
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[0.5])",
        feed.id,
    )
    return stream


async def day_total(api: httpx.AsyncClient, feed: Feed, title: str, day_start: int) -> float:
    days = await api_buckets(
        api, feed, await feed.stream_id(title), "day", time_from=day_start - DAY, time_to=day_start
    )
    return sum(v for t, v in days if t > day_start - DAY)


async def test_history_sent_over_http_becomes_processed_points_costs_and_day_totals(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    stream = await clamp(feed)
    day = [(float(t), 1000.0) for t in range(JAN_2, JAN_2 + DAY + 1, 60)]  # 1 kW, 24 h

    first = await send(api, feed, stream, points_json(day), "application/json")
    assert first.status_code == 200, first.text
    assert first.json() == {
        "inserted": len(day),
        "replaced": 0,
        "unchanged": 0,
        "correction": first.json()["correction"],
    }
    assert first.json()["correction"] is not None
    await process(feed.db)
    assert await day_total(api, feed, POWER, JAN_2) == pytest.approx(24_000.0)
    assert await day_total(api, feed, COST, JAN_2) == pytest.approx(12.0)

    # Sent again: nothing changes. A reading corrected in CSV, with an ISO time: replaced.
    again = await send(api, feed, stream, points_json(day), "application/json")
    assert again.json() == {"inserted": 0, "replaced": 0, "unchanged": len(day), "correction": None}
    csv = "time,value\n2026-01-02T12:00:00+00:00,1000\n2026-01-02T12:01:00Z,4600\n"
    fixed = await send(api, feed, stream, csv.encode(), "text/csv")
    assert (fixed.json()["inserted"], fixed.json()["replaced"], fixed.json()["unchanged"]) == (
        0,
        1,
        1,
    )
    await process(feed.db)
    # 3600 W more around 12:01 for a minute either side (the trapezoids): 60 Wh more.
    assert await day_total(api, feed, POWER, JAN_2) == pytest.approx(24_060.0)
    assert await day_total(api, feed, COST, JAN_2) == pytest.approx(12.03)


async def test_a_spike_is_removed_the_day_corrected_and_the_removal_undone(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings
) -> None:
    feed = await new_feed("UTC")
    stream = await clamp(feed)
    spike = JAN_2 + 43_200
    await feed.ingest(
        stream, [(t, 10e6 if t == spike else 1000.0) for t in range(JAN_2, JAN_2 + DAY + 1, 30)]
    )
    await process(feed.db)
    spiked = await day_total(api, feed, POWER, JAN_2)
    assert spiked == pytest.approx(24_000.0 + (10e6 - 1000.0) * 30 / 3600)

    removed = await api.delete(
        f"/feeds/{feed.id}/streams/{stream}/data",
        params={"time_from": spike - 1, "time_to": spike + 1},
        headers=auth(feed),
    )
    assert removed.status_code == 200, removed.text
    assert removed.json()["deleted"] == 1
    await process(feed.db)
    assert await day_total(api, feed, POWER, JAN_2) == pytest.approx(24_000.0)

    (entry,) = await run_admin(settings, "corrections", "list", str(feed.id))
    assert entry["actor"].startswith("user ")
    assert (entry["stream"], entry["removed"], entry["replaced"]) == (str(stream), 1, 0)
    audit = await feed.db.fetch(
        "SELECT ts, old_value, new_value FROM cluster.corrections WHERE correction = $1",
        int(entry["id"]),
    )
    assert [tuple(r) for r in audit] == [(datetime.fromtimestamp(spike, UTC), 10e6, None)]

    assert entry["id"] == removed.json()["correction"]
    undone = await run_admin(settings, "corrections", "undo", entry["id"])
    assert undone["restored"] == 1
    await process(feed.db)
    assert await day_total(api, feed, POWER, JAN_2) == pytest.approx(spiked)
    # Undone once, the removal cannot be undone again: the spike is back where it left none.
    refused = await admin_refusal(settings, "corrections", "undo", entry["id"])
    assert f"correction {undone['correction']} undid it" in refused
    # Undoing the undo removes the spike again.
    await run_admin(settings, "corrections", "undo", undone["correction"])
    await process(feed.db)
    assert await day_total(api, feed, POWER, JAN_2) == pytest.approx(24_000.0)


async def test_a_point_replaced_in_a_compacted_day_is_handled_as_ingest_handles_late_data(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    stream = await clamp(feed)
    await feed.ingest(stream, [(t, 1000.0) for t in range(JAN_2, JAN_2 + DAY + 1, 60)])
    await process(feed.db)
    day = datetime.fromtimestamp(JAN_2, UTC).date()
    assert await feed.db.fetchval("SELECT cluster.compact_day($1, $2)", stream, day) == 1440

    answer_ = await send(
        api, feed, stream, points_json([(JAN_2 + 600, 2000.0)]), "application/json"
    )

    assert (answer_.json()["inserted"], answer_.json()["replaced"]) == (0, 1)
    # The day went back to the row tier, whole, with the new value.
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.point_days WHERE stream_id = $1", stream
        )
        == 0
    )
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.raw_points WHERE stream_id = $1", stream
        )
        == 1441
    )
    await process(feed.db)
    assert await day_total(api, feed, POWER, JAN_2) == pytest.approx(24_000.0 + 1000 * 60 / 3600)


async def test_only_raw_streams_take_points_and_bad_bodies_change_nothing(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed, other = await new_feed("UTC"), await new_feed("UTC")
    stream = await clamp(feed)
    await feed.ingest(stream, [(JAN_2, 1000.0), (JAN_2 + 60, 1000.0)])
    await process(feed.db)
    processed = await feed.stream_id(POWER)
    one = points_json([(JAN_2 + 30, 5.0)])

    into_processed = await send(api, feed, processed, one, "application/json")
    assert into_processed.status_code == 409, into_processed.text
    assert "only raw streams" in into_processed.json()["detail"]
    too_many = points_json([(JAN_2 + k, 1.0) for k in range(100_001)])
    assert (await send(api, feed, stream, too_many, "application/json")).status_code == 413
    too_big = b"[" + b" " * (100_000 * 64) + b"]"
    assert (await send(api, feed, stream, too_big, "application/json")).status_code == 413
    bad_csv = f"{JAN_2 + 30},1\n{JAN_2 + 40},nan\n".encode()
    refused = await send(api, feed, stream, bad_csv, "text/csv")
    assert refused.status_code == 400
    assert "line 2" in refused.json()["detail"]
    for body, kind in (
        (b"[[1, 2, 3]]", "application/json"),
        (b"[[1e300, 2]]", "application/json"),
        (b"2026-01-02T00:00:00,1\n", "text/csv"),
        (b"x", "application/xml"),
    ):
        bad = await send(api, feed, stream, body, kind)
        assert bad.status_code == 400, (body, bad.text)
        assert bad.headers["content-type"].startswith("application/problem+json")
    # An empty body is a request of no points: nothing to do, nothing refused.
    empty = await send(api, feed, stream, b"[]", "application/json")
    assert empty.json() == {"inserted": 0, "replaced": 0, "unchanged": 0, "correction": None}
    assert (await send(api, feed, stream, b"", "text/csv")).json()["inserted"] == 0
    # Another user's stream is not there; a reversed range is a 400.
    assert (await send(api, other, stream, one, "application/json")).status_code == 404
    reversed_ = await api.delete(
        f"/feeds/{feed.id}/streams/{stream}/data",
        params={"time_from": JAN_2 + 1, "time_to": JAN_2},
        headers=auth(feed),
    )
    assert reversed_.status_code == 400
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.raw_points WHERE stream_id = $1", stream
        )
        == 2
    )
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.corrections WHERE stream_id = $1", stream
        )
        == 0
    )


async def test_admin_import_reads_a_file_of_any_size_into_a_new_stream(
    new_feed: NewFeed, settings: Settings, tmp_path: Path
) -> None:
    feed = await new_feed("UTC")
    history = tmp_path / "history.csv"
    lines = [f"{JAN_2 + 10 * k},{k % 7}" for k in range(150_000)]
    history.write_text("time,value\n" + "\n".join(lines) + "\n")

    done = await run_admin(settings, "import", str(feed.id), "--channel", "4", "--device", "2",
                           "--medium", "1", "--file", str(history))  # fmt: skip

    assert {k: done[k] for k in ("inserted", "replaced", "unchanged")} == {
        "inserted": 150_000,
        "replaced": 0,
        "unchanged": 0,
    }
    stream = int(done["stream"])
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.raw_points WHERE stream_id = $1", stream
        )
        == 150_000
    )
    # One correction for the whole file, its chunks included.
    log = await feed.db.fetch(
        "SELECT correction, added FROM cluster.correction_log WHERE stream_id = $1", stream
    )
    assert [tuple(r) for r in log] == [(int(done["correction"]), 150_000)]
    # A bad line at the end refuses the whole file: nothing of it is written.
    history.write_text(f"{JAN_2 - 10},1\n" + "\n".join(lines[:5]) + "\n12:00,1\n")
    refused = await admin_refusal(settings, "import", str(feed.id), "--channel", "4",
                                  "--device", "2", "--medium", "1", "--file", str(history),
    )  # fmt: skip
    assert "line 7" in refused
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.raw_points WHERE stream_id = $1", stream
        )
        == 150_000
    )


async def test_corrections_expire_after_their_days(new_feed: NewFeed, database_url: str) -> None:
    feed = await new_feed("UTC")
    stream = await clamp(feed)
    await feed.ingest(stream, [(JAN_2, 1.0), (JAN_2 + 60, 2.0)])
    removals = [
        await feed.db.fetchrow(
            "SELECT * FROM cluster.delete_points($1, to_timestamp($2), to_timestamp($2),"
            " 'test', 10)",
            stream,
            t,
        )
        for t in (JAN_2, JAN_2 + 60)
    ]
    old, kept = (r["correction"] for r in removals if r is not None)
    # The first was made 31 days ago.
    await feed.db.execute(
        "UPDATE cluster.correction_log SET made_at = now() - interval '31 days'"
        " WHERE correction = $1",
        old,
    )
    only_corrections = RetentionSettings(forwarder_points_days=0, delivery_log_days=0)
    async with asyncpg.create_pool(database_url, min_size=1, max_size=1) as pool:
        done = await enforce(pool, only_corrections, corrections_days=30)

    assert done["corrections"] >= 1
    left = await feed.db.fetch(
        "SELECT correction, ts FROM cluster.corrections WHERE stream_id = $1", stream
    )
    assert [tuple(r) for r in left] == [(kept, datetime.fromtimestamp(JAN_2 + 60, UTC))]
    # What the expired one removed went with it, not only its log row.
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.correction_points WHERE correction = $1", old
        )
        == 0
    )


async def test_the_example_history_of_the_operations_guide_imports_as_it_says(
    new_feed: NewFeed, settings: Settings
) -> None:
    feed = await new_feed("Europe/Prague")
    example = Path(__file__).parents[3] / "docs" / "examples" / "history.csv"
    args = ("import", str(feed.id), "--channel", "1", "--device", "3", "--medium", "1")

    done = await run_admin(settings, *args, "--file", str(example))

    assert (done["inserted"], done["replaced"], done["unchanged"]) == (37, 0, 0)
    again = await run_admin(settings, *args, "--file", str(example))
    assert (again["inserted"], again["unchanged"], again["stream"]) == (0, 37, done["stream"])


async def test_an_import_meeting_a_devices_point_written_meanwhile_compares_it(
    new_feed: NewFeed, database_url: str
) -> None:
    feed = await new_feed("UTC")
    stream = await clamp(feed)
    device = await asyncpg.connect(database_url)
    importer = await asyncpg.connect(database_url)
    try:
        # The device's point is written but not committed when the import looks.
        writing = device.transaction()
        await writing.start()
        await seeding.write_points(device, stream, [(JAN_2, 7)])
        pid = importer.get_server_pid()
        importing = asyncio.create_task(
            importer.fetchrow(
                "SELECT * FROM cluster.write_points($1, ARRAY[to_timestamp($2), to_timestamp($3)],"
                " ARRAY[8.0, 9.0], 'test')",
                stream,
                JAN_2,
                JAN_2 + 60,
            )
        )
        await eventually(
            lambda: feed.db.fetchval(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid
            )
        )
        await writing.commit()
        row = await importing
    finally:
        await device.close()
        await importer.close()

    assert row is not None
    assert (row["inserted"], row["replaced"], row["unchanged"]) == (1, 1, 0)
    values = await feed.db.fetch(
        "SELECT value FROM cluster.raw_points WHERE stream_id = $1 ORDER BY ts", stream
    )
    assert [r["value"] for r in values] == [8.0, 9.0]
