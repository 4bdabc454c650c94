"""Admin commands of the notification rules: the (rule, feed) pairs a data error parked, and
putting them back once the data is repaired (docs/operations.md#epnotificationrulesparked)."""

from __future__ import annotations

import asyncpg
import click
import msgspec

from energy_platform.core.console import CommandGroup, emit, run_in_transaction
from energy_platform.core.errors import NotFound
from energy_platform.core.inputs import parse_id
from energy_platform.core.settings import Settings
from energy_platform.notifications.rules import RULES

LIST_PARKED = """
SELECT rule, feed_id, sqlstate, error, since
  FROM cluster.parked_notification_rules ORDER BY since, rule, feed_id"""
RETRY = """
DELETE FROM cluster.parked_notification_rules
 WHERE feed_id = $1 AND ($2::text IS NULL OR rule = $2)
RETURNING rule"""


class ParkedRule(msgspec.Struct):
    rule: str
    feed: str
    sqlstate: str
    error: str
    since: str


class Retried(msgspec.Struct):
    feed: str
    retried: list[str]
    """The rules that judge the feed again from the next round."""


@click.group("notifications", cls=CommandGroup)
def notifications() -> None:
    """The notification rules' parked feeds."""


@notifications.command("parked")
@click.pass_obj
def parked(settings: Settings) -> None:
    """List the rules parked for a feed whose data they failed on, oldest first."""

    async def work(conn: asyncpg.Connection) -> list[ParkedRule]:
        return [
            ParkedRule(
                r["rule"], str(r["feed_id"]), r["sqlstate"], r["error"], r["since"].isoformat()
            )
            for r in await conn.fetch(LIST_PARKED)
        ]

    emit(run_in_transaction(settings.database, work))


@notifications.command("retry")
@click.argument("feed")
@click.option("--rule", type=click.Choice(RULES), help="Only this rule (default: every one).")
@click.pass_obj
def retry(settings: Settings, feed: str, rule: str | None) -> None:
    """Judge FEED again by the rules parked for it (after repairing its data); a rule that fails
    on it again is parked again, with the new error."""
    feed_id = parse_id(feed, "feed")

    async def work(conn: asyncpg.Connection) -> Retried:
        rules = sorted(r["rule"] for r in await conn.fetch(RETRY, feed_id, rule))
        if not rules:
            raise NotFound(f"no rule is parked for feed {feed!r}")
        return Retried(str(feed_id), rules)

    emit(run_in_transaction(settings.database, work))


GROUPS = [notifications]
