"""Admin commands of the data API's feeds and streams and their configurations.

They print feeds and streams exactly as the API shows them, so they reuse the API's rendering
(``json_shapes``) and therefore talk to the database through asyncpg, like the API.
"""

from __future__ import annotations

import zoneinfo
from datetime import timedelta
from typing import Any

import asyncpg
import click

from energy_platform.api.json_shapes import render_feeds, render_streams
from energy_platform.core import bounds
from energy_platform.core.console import CommandGroup, emit, parse_instant, run_in_transaction
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.inputs import checked_text, parse_id
from energy_platform.core.settings import Settings
from energy_platform.pairing.pairings import Pairings

INSERT_FEED = """
INSERT INTO cluster.feeds (owner_id, homebase_sn, subscription_from, subscription_to)
VALUES ($1, $2, $3, $4)
RETURNING id, subscription_from, subscription_to"""
INSERT_FIRST_FEED_CONFIG = """
INSERT INTO cluster.feed_configs (feed_id, title, timezone, validity)
VALUES ($1, $2, $3, tstzrange(NULL, NULL))"""
SET_FEED_CONFIG = "SELECT cluster.set_feed_config($1, $2, $3, $4)"
FEED_CONFIG_AT = """
SELECT title, timezone FROM cluster.feed_configs
 WHERE feed_id = $1 AND validity @> $2::timestamptz"""
FEED_BY_ID = "SELECT id, subscription_from, subscription_to FROM cluster.feeds WHERE id = $1"
SET_SUBSCRIPTION = """
UPDATE cluster.feeds SET subscription_from = coalesce($2, subscription_from),
                         subscription_to = coalesce($3, subscription_to)
 WHERE id = $1
RETURNING id, subscription_from, subscription_to"""
LIST_FEEDS = """
SELECT id, subscription_from, subscription_to FROM cluster.feeds
 WHERE $1::bigint IS NULL OR owner_id = $1 ORDER BY id"""
# Points carry no foreign key (COPY speed): they go explicitly, before their streams.
DELETE_FEED = """
WITH gone AS (SELECT id FROM cluster.streams WHERE feed_id = $1),
raw AS (DELETE FROM cluster.raw_points WHERE stream_id IN (SELECT id FROM gone)),
processed AS (DELETE FROM cluster.processed_points WHERE stream_id IN (SELECT id FROM gone)),
system AS (DELETE FROM cluster.system_points WHERE stream_id IN (SELECT id FROM gone)),
compact AS (DELETE FROM cluster.point_days WHERE stream_id IN (SELECT id FROM gone)),
dirty AS (DELETE FROM cluster.dirty_ranges WHERE stream_id IN (SELECT id FROM gone))
DELETE FROM cluster.feeds WHERE id = $1
RETURNING homebase_sn"""
STREAMS_OF_FEED = """
SELECT id, type, channel, device, medium, idx, register, combined, quantity
  FROM cluster.streams
 WHERE feed_id = $1 ORDER BY id"""
STREAM_BY_ID = """
SELECT id, type, channel, device, medium, idx, register, combined, quantity
  FROM cluster.streams
 WHERE id = $1"""
SET_STREAM_CONFIG = "SELECT cluster.set_stream_config($1, $2, $3, $4, $5, $6, $7, $8, $9)"
CHANNEL_TOTAL = "SELECT true FROM cluster.channel_totals WHERE stream_id = $1"
STREAM_CONFIG_AT = """
SELECT title, medium, unit, submeter, max_rate, main, sent_unit FROM cluster.stream_configs
 WHERE stream_id = $1 AND validity @> $2::timestamptz"""
# Whether a register or a meter reading counts in this stream (its own, not a combined one):
# then --unit is the unit its readers send.
COUNTS_METER = """
SELECT EXISTS (
    SELECT FROM cluster.streams ps
      JOIN cluster.streams r ON r.feed_id = ps.feed_id AND r.channel = ps.channel AND r.type = 'raw'
      JOIN cluster.processable_media m
        ON m.medium_id = r.medium AND m.quantity = ps.quantity
       AND m.method IN ('register', 'reading')
     CROSS JOIN LATERAL cluster.processed_target(m.method, r.idx) t
     WHERE ps.id = $1 AND NOT ps.combined
       AND ps.idx IS NOT DISTINCT FROM t.idx AND ps.register IS NOT DISTINCT FROM t.register)"""
UNIT_FACTOR = "SELECT cluster.unit_factor($1, $2)"
SENT_UNITS = {
    "power": "Wh, kWh or MWh",
    "gas": "m3 or l",
    "water": "m3 or l",
    "heat": "kWh, MWh or GJ",
}

MEDIA = ("power", "gas", "water", "heat", "temperature", "none")


def _max_rate(text: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        raise InvalidInput(f"--max-rate: {text!r} is neither a number nor 'default'") from None
    if not rate > 0:
        raise InvalidInput(f"--max-rate: {text} is not a rise: give a number above 0")
    return bounds.check(bounds.MAX_RATE, rate, "--max-rate")


def _time_zone(name: str) -> str:
    if checked_text(name, "--timezone") not in zoneinfo.available_timezones():
        raise InvalidInput(f"{name!r} is not an IANA time zone (e.g. Europe/Prague)")
    return name


@click.group("feeds", cls=CommandGroup)
def feeds() -> None:
    """Feeds: one per homebase, owned by a user."""


@feeds.command("add")
@click.option("--owner", required=True, help="User id of the owner.")
@click.option("--homebase", "sn", required=True, help="Homebase serial number, [0-9A-F]{16}.")
@click.option("--title", required=True)
@click.option("--timezone", "tz", required=True, help="IANA time zone, e.g. Europe/Prague.")
@click.option("--subscription-from", "sub_from", default="now", help="ISO 8601; default now.")
@click.option("--subscription-to", "sub_to", help="ISO 8601; default a year after the start.")
@click.option(
    "--pair/--no-pair",
    default=True,
    help=(
        "Pair the homebase with this cluster via provisioning"
        " (when EP_PAIRING_CLUSTER_SECRET is set)."
    ),
)
@click.pass_obj
def add_feed(
    settings: Settings,
    owner: str,
    sn: str,
    title: str,
    tz: str,
    sub_from: str,
    sub_to: str | None,
    pair: bool,
) -> None:
    """Add the feed of a homebase (a customer registering its serial number).

    With this cluster's secret configured, the homebase is paired with the cluster through
    the provisioning API in the same step: the feed exists only if the pairing holds. Its first
    configuration is unbounded in time.
    """
    start = parse_instant(sub_from, "--subscription-from")
    end = parse_instant(sub_to, "--subscription-to") if sub_to else start + timedelta(days=365)
    owner_id, zone = parse_id(owner, "user"), _time_zone(tz)
    title = checked_text(title, "--title")
    # Checked before anything changes, here or at provisioning.
    pairings = Pairings(settings.pairing, settings.mqtt, enabled=pair)

    async def work(conn: asyncpg.Connection) -> Any:
        try:
            (row,) = await conn.fetch(INSERT_FEED, owner_id, sn, start, end)
        except asyncpg.ForeignKeyViolationError:
            raise NotFound(f"no user {owner!r}") from None
        except asyncpg.UniqueViolationError:
            raise InvalidInput(f"homebase {sn} already has a feed") from None
        except asyncpg.CheckViolationError as e:
            raise InvalidInput(_check_message(e.constraint_name, sn)) from None
        await conn.execute(INSERT_FIRST_FEED_CONFIG, row["id"], title, zone)
        # Inside the transaction: a refused pairing leaves no feed behind.
        async with pairings:
            await pairings.hold(conn, sn)
        return (await render_feeds(conn, [row]))[0]

    emit(run_in_transaction(settings.database, work))


def _check_message(constraint: str | None, sn: str) -> str:
    if constraint and "homebase_sn" in constraint:
        return f"{sn!r} is not a serial number ([0-9A-F]{{16}})"
    return "the subscription must end after it starts"


@feeds.command("list")
@click.option("--owner", help="Only this user's feeds.")
@click.pass_obj
def list_feeds(settings: Settings, owner: str | None) -> None:
    """List feeds with their configurations."""
    owner_id = None if owner is None else parse_id(owner, "user")

    async def work(conn: asyncpg.Connection) -> Any:
        return await render_feeds(conn, await conn.fetch(LIST_FEEDS, owner_id))

    emit(run_in_transaction(settings.database, work))


@feeds.command("configure")
@click.argument("feed_id")
@click.option("--from", "since", required=True, help="ISO 8601 instant (or 'now').")
@click.option("--title", help="Default: the title valid at that instant.")
@click.option("--timezone", "tz", help="Default: the time zone valid at that instant.")
@click.pass_obj
def configure_feed(
    settings: Settings, feed_id: str, since: str, title: str | None, tz: str | None
) -> None:
    """Set the feed's configuration from an instant on; prints the feed."""
    instant, fid = parse_instant(since, "--from"), parse_id(feed_id, "feed")
    zone = None if tz is None else _time_zone(tz)
    title = None if title is None else checked_text(title, "--title")

    async def work(conn: asyncpg.Connection) -> Any:
        feed = await conn.fetchrow(FEED_BY_ID, fid)
        if feed is None:
            raise NotFound(f"no feed {feed_id!r}")
        before = await conn.fetchrow(FEED_CONFIG_AT, fid, instant)
        new_title = title or (before and before["title"])
        new_zone = zone or (before and before["timezone"])
        if not new_title or not new_zone:
            raise InvalidInput("no configuration at that instant: give --title and --timezone")
        await conn.execute(SET_FEED_CONFIG, fid, instant, new_title, new_zone)
        return (await render_feeds(conn, [feed]))[0]

    emit(run_in_transaction(settings.database, work))


@feeds.command("subscription")
@click.argument("feed_id")
@click.option("--to", "sub_to", help="ISO 8601: the new end (an extension, or a shortening).")
@click.option("--from", "sub_from", help="ISO 8601: the new start.")
@click.pass_obj
def set_subscription(
    settings: Settings, feed_id: str, sub_to: str | None, sub_from: str | None
) -> None:
    """Change a feed's subscription period; prints the feed. The subscription-ending rule
    follows the new end: an extended subscription's notice closes, and a new one comes within
    7 days of the new end."""
    if sub_to is None and sub_from is None:
        raise InvalidInput("give --to, --from or both")
    fid = parse_id(feed_id, "feed")
    start = None if sub_from is None else parse_instant(sub_from, "--from")
    end = None if sub_to is None else parse_instant(sub_to, "--to")

    async def work(conn: asyncpg.Connection) -> Any:
        try:
            row = await conn.fetchrow(SET_SUBSCRIPTION, fid, start, end)
        except asyncpg.CheckViolationError:
            raise InvalidInput("the subscription must end after it starts") from None
        if row is None:
            raise NotFound(f"no feed {feed_id!r}")
        return (await render_feeds(conn, [row]))[0]

    emit(run_in_transaction(settings.database, work))


@feeds.command("delete")
@click.argument("feed_id")
@click.option(
    "--unpair/--no-unpair",
    default=True,
    help=(
        "Unpair the homebase from this cluster via provisioning"
        " (when EP_PAIRING_CLUSTER_SECRET is set) unless a forwarder registration still holds it."
    ),
)
@click.pass_obj
def delete_feed(settings: Settings, feed_id: str, unpair: bool) -> None:
    """Delete a feed with its streams, configurations, points and notifications."""
    fid = parse_id(feed_id, "feed")
    pairings = Pairings(settings.pairing, settings.mqtt, enabled=unpair)

    async def work(conn: asyncpg.Connection) -> dict[str, Any]:
        sn = await conn.fetchval(DELETE_FEED, fid)
        if sn is None:
            raise NotFound(f"no feed {feed_id!r}")
        # Inside the transaction: the feed stays if provisioning cannot be told. A homebase
        # registered with the forwarder stays paired (docs/provisioning.md#pairing).
        async with pairings:
            unpaired = await pairings.release(conn, sn)
        return {"deleted": feed_id, "homebase": sn, "unpaired": unpaired}

    emit(run_in_transaction(settings.database, work))


@click.group("streams", cls=CommandGroup)
def streams() -> None:
    """Streams of a feed and the configurations of processed streams."""


@streams.command("list")
@click.argument("feed_id")
@click.pass_obj
def list_streams(settings: Settings, feed_id: str) -> None:
    """List a feed's streams as the API shows them."""
    fid = parse_id(feed_id, "feed")

    async def work(conn: asyncpg.Connection) -> Any:
        if await conn.fetchrow(FEED_BY_ID, fid) is None:
            raise NotFound(f"no feed {feed_id!r}")
        return await render_streams(conn, await conn.fetch(STREAMS_OF_FEED, fid))

    emit(run_in_transaction(settings.database, work))


@streams.command("configure")
@click.argument("stream_id")
@click.option("--from", "since", required=True, help="ISO 8601 instant (or 'now').")
@click.option("--title", help="Default: the title valid at that instant.")
@click.option("--medium", type=click.Choice(MEDIA), help="'none': not processed from then on.")
@click.option(
    "--unit",
    help="On a register's or meter's own stream: the unit its reader sends (power Wh, kWh or "
    "MWh; gas and water m3 or l; heat kWh, MWh or GJ), converted by the engine. Elsewhere: the "
    "unit shown. Default: as at that instant.",
)
@click.option(
    "--submeter/--no-submeter",
    default=None,
    help="A consumption stream metering part of another (a heat pump behind the main meter): "
    "bills list it apart, not in the total. Default: as at that instant.",
)
@click.option(
    "--max-rate",
    help="The fastest rise of the meter counters (registers, readings) counting in this "
    "consumption or export stream, per hour: W for power, m³/h for gas and water, kW for heat; "
    "a faster one is a replaced meter and adds 0. 'default': EP_ENGINE_MAX_RATE_<MEDIUM>. "
    "Default: as at that instant.",
)
@click.option(
    "--main/--no-main",
    default=None,
    help="A consumption total that is its medium's main meter (the utility's): bills add only "
    "main meters and list the medium's other totals as sub-meters. Default: as at that instant.",
)
@click.pass_obj
def configure_stream(
    settings: Settings,
    stream_id: str,
    since: str,
    title: str | None,
    medium: str | None,
    unit: str | None,
    submeter: bool | None,
    max_rate: str | None,
    main: bool | None,
) -> None:
    """Set a processed stream's configuration from an instant on; prints the stream."""
    if submeter and main:
        raise InvalidInput("--main and --submeter: a main meter is no sub-meter, give one")
    instant, sid = parse_instant(since, "--from"), parse_id(stream_id, "stream")
    rate = None if max_rate in (None, "default") else _max_rate(max_rate)
    title = None if title is None else checked_text(title, "--title")
    unit = None if unit is None else checked_text(unit, "--unit")

    async def work(conn: asyncpg.Connection) -> Any:
        stream = await conn.fetchrow(STREAM_BY_ID, sid)
        if stream is None or stream["type"] != "processed":
            raise NotFound(f"no processed stream {stream_id!r}")
        if submeter and stream["quantity"] != "consumption":
            raise InvalidInput(
                f"stream {stream_id} is a {stream['quantity']} stream: only a consumption "
                "stream can be a sub-meter"
            )
        if main and (
            stream["quantity"] != "consumption" or not await conn.fetchval(CHANNEL_TOTAL, sid)
        ):
            raise InvalidInput(
                f"stream {stream_id} is not a channel's consumption total: only one can be a "
                "main meter (admin streams list shows the totals: combined, or no index or "
                "register)"
            )
        before = await conn.fetchrow(STREAM_CONFIG_AT, sid, instant)
        new_title = title or (before and before["title"])
        if medium is None:
            new_medium = before["medium"] if before else None
        else:
            new_medium = None if medium == "none" else medium
        sent_unit = before["sent_unit"] if before else None
        shown = unit
        if unit is not None and await conn.fetchval(COUNTS_METER, sid):
            sent_unit = await _sent_unit(conn, stream_id, new_medium, unit)
            shown = None  # the medium's unit stays shown: the engine converts to it
        new_unit = shown if shown is not None else (before and before["unit"])
        if not new_title or new_unit is None:
            raise InvalidInput("no configuration at that instant: give --title and --unit")
        if max_rate is not None and (
            stream["quantity"] not in ("consumption", "export") or stream["combined"]
        ):
            raise InvalidInput(
                f"stream {stream_id} is not a meter's own consumption or export stream: set "
                "--max-rate on the stream of each register or meter"
            )
        new_rate = rate if max_rate is not None else (before and before["max_rate"])
        # Marking one ends the other: a stream is a main meter, a sub-meter, or neither.
        new_submeter = _flag(submeter, main, before, "submeter")
        new_main = _flag(main, submeter, before, "main")
        await conn.execute(
            SET_STREAM_CONFIG,
            sid,
            instant,
            new_title,
            new_medium,
            new_unit,
            new_submeter,
            new_rate,
            new_main,
            sent_unit,
        )
        return (await render_streams(conn, [stream]))[0]

    emit(run_in_transaction(settings.database, work))


async def _sent_unit(
    conn: asyncpg.Connection, stream_id: str, medium: str | None, unit: str
) -> str | None:
    """``unit`` as a meter's stream of ``medium`` takes it (None: the medium's own)."""
    if await conn.fetchval(UNIT_FACTOR, medium, unit) is None:
        units = SENT_UNITS.get(medium or "", "none")
        raise InvalidInput(
            f"--unit: stream {stream_id} counts a {medium} meter, whose reader may send {units}, "
            f"not {unit!r}"
        )
    return unit


def _flag(given: bool | None, other: bool | None, before: asyncpg.Record | None, name: str) -> bool:
    if given is not None:
        return given
    return not other and bool(before and before[name])


GROUPS = [feeds, streams]
