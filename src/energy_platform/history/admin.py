"""Admin commands: a history file into a raw stream (``import``), and the audit trail of
corrections (``corrections list``, ``corrections undo``)."""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import asyncpg
import click
import msgspec

from energy_platform.core import bounds
from energy_platform.core.codec.format_v4 import Series
from energy_platform.core.console import CommandGroup, emit, run_in_transaction
from energy_platform.core.errors import Conflict, InvalidInput, NotFound
from energy_platform.core.inputs import INT4_MAX, parse_id
from energy_platform.core.settings import Settings
from energy_platform.devices.ingest.store import cluster_streams, forwarder_key, forwarder_streams
from energy_platform.history import intervals, queries
from energy_platform.history.corrections import Undone
from energy_platform.history.corrections import undo as undo_correction
from energy_platform.history.points import MAX_POINTS, Points, from_csv

IMPORT_TARGET = """
SELECT f.id, f.homebase_sn,
       EXISTS (SELECT FROM forwarder.registrations r WHERE r.homebase_sn = f.homebase_sn)
           AS forwarded
  FROM cluster.feeds f WHERE f.id = $1"""
Natural = click.IntRange(0, INT4_MAX)


class Imported(msgspec.Struct):
    feed: str
    stream: str
    """The raw stream; while the homebase is registered with the forwarder, its forwarder
    stream (the points go to the customer, as the device's live data does)."""
    forwarded: bool
    inserted: int
    replaced: int
    unchanged: int
    correction: str | None
    """The one correction of the whole file (``corrections undo`` takes it back); null when
    nothing changed (the file sent again) and for forwarded points."""


class Correction(msgspec.Struct):
    id: str
    stream: str
    actor: str
    made_at: str
    time_from: str
    time_to: str
    added: int
    """Points written where there were none."""
    replaced: int
    removed: int
    undoes: str | None
    """For an undo: the correction it undid."""


def operator() -> str:
    """Who a correction from the command line is recorded as."""
    try:
        return f"admin ({getpass.getuser()})"
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return "admin"


def _chunks(path: Path) -> Iterator[tuple[str, int]]:
    """The file's lines MAX_POINTS at a time, with the number of each chunk's first line."""
    with path.open(encoding="utf-8", newline="") as file:
        first = 1
        while lines := list(islice(file, MAX_POINTS)):
            yield "".join(lines), first
            first += len(lines)


def _parsed(path: Path, bound: bounds.Bound) -> Iterator[Points]:
    try:
        for text, first in _chunks(path):
            yield from_csv(text, bound=bound, first_line=first, limit=None)
    except UnicodeDecodeError as e:
        raise InvalidInput(f"{path}: not UTF-8 text (byte {e.start} of a chunk)") from None
    except OSError as e:
        raise InvalidInput(f"{path}: {e.strerror or e}") from None


@click.command("import")
@click.argument("feed_id")
@click.option("--channel", type=Natural, required=True)
@click.option("--device", type=Natural, required=True)
@click.option("--medium", type=Natural, required=True, help="Medium ID (docs/devices.md).")
@click.option("--index", "idx", type=Natural, help="For phases 1..3 or a tariff register's n.")
@click.option(
    "--interval",
    type=click.IntRange(1, int(bounds.INTERVAL.limit)),
    help="Seconds: each value is the Wh used in the interval starting at its time (a portal's"
    " export), made an energy register's readings (media 22, 23; docs/api.md).",
)
@click.option(
    "--file",
    "path",
    required=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="CSV of time,value lines (Unix seconds or ISO 8601 with an offset), any size.",
)
@click.pass_obj
def import_history(
    settings: Settings,
    feed_id: str,
    channel: int,
    device: int,
    medium: int,
    idx: int | None,
    interval: int | None,
    path: Path,
) -> None:
    """Add a history file's points to the feed's raw stream of this channel, device, medium and
    index (made when missing), as late data enters; a point at a time the stream holds replaces
    it. While the homebase is registered with the forwarder the points go to the forwarder, as
    its live data does (new times only). The whole file is one transaction and one correction:
    a bad line anywhere changes nothing, and the file sent again changes nothing. With
    --interval the file is intervals' energy (history/intervals.py), held in memory whole."""
    fid = parse_id(feed_id, "feed")
    bound = bounds.of_medium(medium)
    if interval is not None:
        intervals.check_medium(medium)
    series = Series(channel, device, medium, idx, None, None)
    who = operator()

    async def work(conn: asyncpg.Connection) -> Imported:
        feed = await conn.fetchrow(IMPORT_TARGET, fid)
        if feed is None:
            raise NotFound(f"no feed {feed_id!r}")
        if feed["forwarded"]:
            if interval is not None:
                raise Conflict(
                    f"feed {feed_id}'s homebase is registered with the forwarder: its history"
                    " goes to the customer as readings; import them without --interval"
                )
            return await _forward(conn, fid, feed["homebase_sn"], series, path, bound)
        key = (fid, "raw", channel, device, medium, idx, None)
        stream = (await cluster_streams(conn, [key]))[key]
        totals = Imported(str(fid), str(stream), False, 0, 0, 0, None)
        # A chunk a call, every call adding to one correction: a file of any size, memory
        # bounded by the chunk, and the engine sees it all or nothing at the commit.
        correction = await conn.fetchval(queries.NEW_CORRECTION)
        chunks = _parsed(path, bound)
        if interval is not None:
            chunks = _chunked(
                await intervals.as_readings(
                    conn, stream, _whole(chunks), intervals.check_interval(interval)
                )
            )
        for points in chunks:
            if not points.times:
                continue
            row = await conn.fetchrow(
                queries.WRITE_POINTS, stream, points.times, points.values, who, correction
            )
            assert row is not None  # noqa: S101 - the function answers one row
            totals.inserted += row["inserted"]
            totals.replaced += row["replaced"]
            totals.unchanged += row["unchanged"]
            if row["correction"] is not None:
                totals.correction = str(row["correction"])
        return totals

    emit(run_in_transaction(settings.database, work))


def _whole(chunks: Iterator[Points]) -> Points:
    times: list[int] = []
    values: list[float] = []
    for points in chunks:
        times += points.times
        values += points.values
    if not times:
        raise InvalidInput("the file holds no intervals")
    return Points(times, values)


def _chunked(points: Points) -> Iterator[Points]:
    for first in range(0, len(points.times), MAX_POINTS):
        yield Points(
            points.times[first : first + MAX_POINTS], points.values[first : first + MAX_POINTS]
        )


async def _forward(
    conn: asyncpg.Connection, feed: int, sn: str, series: Series, path: Path, bound: bounds.Bound
) -> Imported:
    """A registered homebase's history into its forwarder stream, new times only."""
    key = forwarder_key(sn, series)
    stream = (await forwarder_streams(conn, [key]))[key]
    totals = Imported(str(feed), str(stream), True, 0, 0, 0, None)
    for points in _parsed(path, bound):
        if points.times:
            added = await conn.fetchval(queries.FORWARD_POINTS, stream, points.times, points.values)
            totals.inserted += added
            totals.unchanged += len(set(points.times)) - added
    return totals


@click.group("corrections", cls=CommandGroup)
def corrections() -> None:
    """Imports, removals and undos of raw points, kept EP_HISTORY_CORRECTIONS_DAYS."""


@corrections.command("list")
@click.argument("feed_id")
@click.pass_obj
def list_corrections(settings: Settings, feed_id: str) -> None:
    """The feed's corrections, newest first."""
    fid = parse_id(feed_id, "feed")

    async def work(conn: asyncpg.Connection) -> list[Correction]:
        if await conn.fetchval(queries.CORRECTED_FEED, fid) is None:
            raise NotFound(f"no feed {feed_id!r}")
        return [
            Correction(
                str(r["correction"]),
                str(r["stream_id"]),
                r["actor"],
                r["made_at"].isoformat(),
                r["time_from"].isoformat(),
                r["time_to"].isoformat(),
                r["added"],
                r["replaced"],
                r["removed"],
                None if r["undoes"] is None else str(r["undoes"]),
            )
            for r in await conn.fetch(queries.CORRECTIONS_OF_FEED, fid)
        ]

    emit(run_in_transaction(settings.database, work))


@corrections.command("undo")
@click.argument("correction_id")
@click.pass_obj
def undo_command(settings: Settings, correction_id: str) -> None:
    """Put back the state before a correction, if each of its points still holds what it left
    (else refused, naming them, and nothing changes); the undo is a correction of its own."""
    number = parse_id(correction_id, "correction")

    async def work(conn: asyncpg.Connection) -> Undone:
        return await undo_correction(conn, number, operator())

    emit(run_in_transaction(settings.database, work))


GROUPS: list[click.Command] = [import_history, corrections]
