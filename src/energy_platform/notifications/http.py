"""Notifications of a user: ``/users/{user_id}/notifications`` and ``/notification_count``.

``since`` (ISO 8601; without a UTC offset it is UTC) keeps notifications created at or after
it; the bulk PATCH changes every notification that the same query (``since``, repeated ``id``)
selects. The PATCHes need a write token (``require_write``: 403 for a read token).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import asyncpg
import msgspec
from litestar import Controller, Request, Response, get, patch
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter
from litestar.status_codes import HTTP_205_RESET_CONTENT

from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.http.database import Database, Reads
from energy_platform.core.http.openapi import problems
from energy_platform.core.inputs import MAX_REPEATED, Ids, parse_id, parse_instant
from energy_platform.users.auth import Caller, authenticate, require_write, visible_user

COLUMNS = """
SELECT n.id, n.title, n.content, coalesce(fc.title, '') AS feed_title, n.created_at, n.read,
       n.archived
  FROM cluster.notifications n
  LEFT JOIN cluster.feed_configs fc ON fc.feed_id = n.feed_id AND upper_inf(fc.validity)"""
LIST = (
    COLUMNS
    + """
 WHERE n.user_id = $1 AND ($2::timestamptz IS NULL OR n.created_at >= $2)
 ORDER BY n.created_at DESC, n.id DESC"""
)
ONE = COLUMNS + "\n WHERE n.user_id = $1 AND n.id = $2"
UPDATE_ONE = """
UPDATE cluster.notifications SET read = coalesce($3, read), archived = coalesce($4, archived)
 WHERE user_id = $1 AND id = $2
RETURNING id"""
UPDATE_SELECTION = """
UPDATE cluster.notifications SET read = coalesce($4, read), archived = coalesce($5, archived)
 WHERE user_id = $1 AND ($2::timestamptz IS NULL OR created_at >= $2)
   AND ($3::bigint[] IS NULL OR id = ANY($3))"""
COUNT = """
SELECT count(*) FILTER (WHERE read) AS read, count(*) FILTER (WHERE NOT read) AS unread,
       count(*) FILTER (WHERE archived) AS archived,
       count(*) FILTER (WHERE NOT archived) AS unarchived, count(*) AS total
  FROM cluster.notifications WHERE user_id = $1"""


class Notification(msgspec.Struct):
    id: int
    title: str
    content: str
    feed_title: str
    created_at: str
    read: bool
    archived: bool


class NotificationCount(msgspec.Struct):
    read: int
    unread: int
    archived: int
    unarchived: int
    total: int


class Flags(msgspec.Struct, forbid_unknown_fields=True):
    read: bool | msgspec.UnsetType = msgspec.UNSET
    archived: bool | msgspec.UnsetType = msgspec.UNSET


_flags = msgspec.json.Decoder(Flags)
Authenticated = NamedDependency[Caller]
Since = Annotated[
    str | None,
    QueryParameter(
        description="ISO 8601, UTC unless it has an offset: created at or after",
        max_length=64,
    ),
]


async def _flags_of(request: Request[object, object, State]) -> tuple[bool | None, bool | None]:
    try:
        flags = _flags.decode(await request.body())
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise InvalidInput(f"body: {e}", field="body") from None
    read = None if flags.read is msgspec.UNSET else flags.read
    archived = None if flags.archived is msgspec.UNSET else flags.archived
    if read is None and archived is None:
        raise InvalidInput("body: give read and/or archived (booleans)", field="body")
    return read, archived


def _since(value: str | None) -> datetime | None:
    return None if value is None else parse_instant(value, "since")


def _notification(row: asyncpg.Record) -> Notification:
    return Notification(
        row["id"],
        row["title"],
        row["content"],
        row["feed_title"],
        row["created_at"].isoformat(),
        row["read"],
        row["archived"],
    )


class NotificationsController(Controller):
    path = "/users/{user_id:str}"
    dependencies = {"caller": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ("notifications",)

    @get("/notifications", summary="A user's notifications, newest first")
    async def list_notifications(
        self, user_id: FromPath[str], caller: Authenticated, reads: Reads, since: Since = None
    ) -> list[Notification]:
        owner = await visible_user(reads, user_id, caller)
        return [_notification(r) for r in await reads.fetch(LIST, owner, _since(since))]

    @patch(
        "/notifications",
        status_code=HTTP_205_RESET_CONTENT,
        summary="Set read/archived of every notification the query (since, id) selects",
        opt=problems(403),
    )
    async def update_selection(
        self,
        user_id: FromPath[str],
        caller: Authenticated,
        pool: Database,
        request: Request[object, object, State],
        since: Since = None,
        ids: Annotated[Ids | None, QueryParameter(name="id", max_items=MAX_REPEATED)] = None,
    ) -> Response[bytes]:
        require_write(caller)
        owner = await visible_user(pool, user_id, caller)
        start = _since(since)
        read, archived = await _flags_of(request)
        await pool.execute(UPDATE_SELECTION, owner, start, ids, read, archived)
        # 205 Reset Content carries no body at all (not even JSON null).
        return Response(b"", status_code=HTTP_205_RESET_CONTENT)

    @get("/notifications/{notification_id:str}", summary="One notification")
    async def one(
        self,
        user_id: FromPath[str],
        notification_id: FromPath[str],
        caller: Authenticated,
        reads: Reads,
    ) -> Notification:
        owner = await visible_user(reads, user_id, caller)
        return await _one(reads, owner, notification_id)

    @patch(
        "/notifications/{notification_id:str}",
        summary="Set read/archived; the updated object",
        opt=problems(403),
    )
    async def update_one(
        self,
        user_id: FromPath[str],
        notification_id: FromPath[str],
        caller: Authenticated,
        pool: Database,
        request: Request[object, object, State],
    ) -> Notification:
        require_write(caller)
        owner = await visible_user(pool, user_id, caller)
        read, archived = await _flags_of(request)
        number = parse_id(notification_id, "notification")
        if await pool.fetchval(UPDATE_ONE, owner, number, read, archived) is None:
            raise NotFound(f"no notification {notification_id!r}")
        return await _one(pool, owner, notification_id)

    @get("/notification_count", summary="Counts: read + unread = total = archived + unarchived")
    async def count(
        self, user_id: FromPath[str], caller: Authenticated, reads: Reads
    ) -> NotificationCount:
        owner = await visible_user(reads, user_id, caller)
        row = await reads.fetchrow(COUNT, owner)
        return NotificationCount(**dict(row)) if row else NotificationCount(0, 0, 0, 0, 0)


async def _one(pool: asyncpg.Pool, owner: int, notification_id: str) -> Notification:
    row = await pool.fetchrow(ONE, owner, parse_id(notification_id, "notification"))
    if row is None:
        raise NotFound(f"no notification {notification_id!r}")
    return _notification(row)
