"""Live events as they go on the wire: Server-Sent Events frames, each rendered once per API
process whatever the number of clients that receive it (docs/api.md#live)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Literal

import msgspec

Kind = Literal["points", "buckets", "prices"]
"""What a client may ask for with ``type`` (all of them when it names none); ``reload`` is
always sent: a client that missed events must know, whatever it asked for. ``prices`` is news,
not a repair: a client that names its types without it (a chart of points) is not woken by
it."""
KINDS: frozenset[str] = frozenset(("points", "buckets", "prices"))


class PointsData(msgspec.Struct, frozen=True):
    """``points`` and ``buckets``: one stream's points of one commit, oldest first. A bucket's
    value is null when the bucket no longer has one (its points were removed)."""

    stream: str
    points: list[tuple[int, float | None]]


class ReloadData(msgspec.Struct, frozen=True, omit_defaults=True):
    """``reload``: read again. ``expired``: the id is older than the platform keeps (or not one
    of its ids), read the range; ``revised``: a stream's points from ``time_from`` to
    ``time_to`` changed too much to be sent, read that stretch."""

    reason: Literal["expired", "revised"]
    stream: str | None = None
    time_from: int | None = None
    time_to: int | None = None


class PricesData(msgspec.Struct, frozen=True):
    """``prices``: the area's prices of the feed's next local day ``day`` are in (the moment
    the owner is told, notifications' ``prices_published``): read the prices again."""

    feed: str
    day: date


class Event(msgspec.Struct, frozen=True):
    """One row of the live log, ready to send; ``stream`` is None for the feed's own events
    (``prices``)."""

    pos: int
    stream: int | None
    kind: str
    frame: bytes


EVENT_POINTS = 1_000
"""Points in one event at most: cluster.live_stage splits a stream's points of a commit so."""
POINT_BYTES = 48
"""A point's most bytes in a frame: ``[``, a time of up to 20 characters, ``,``, a value of up
to 24 (a float's shortest form, ``-1.2345678901234567e-308``), ``],``."""
EVENT_BYTES = EVENT_POINTS * POINT_BYTES + 256
"""A frame's most bytes: its points, its id, name and stream."""

_encode = msgspec.json.Encoder().encode
KEEPALIVE = b": keepalive\n\n"


def frame(pos: int, kind: str, data: msgspec.Struct) -> bytes:
    """An SSE message: its id (the log position), event name and one line of JSON."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (pos, kind.encode(), _encode(data))


def position_frame(pos: int) -> bytes:
    """An id alone: no event, but the client's last id becomes ``pos`` (where it starts)."""
    return b"id: %d\n\n" % pos


def reload_frame(pos: int) -> bytes:
    """The ``reload`` of an id the log no longer reaches."""
    return frame(pos, "reload", ReloadData(reason="expired"))


def event_of(
    pos: int,
    stream: int | None,
    kind: str,
    times: Sequence[int],
    vals: Sequence[float],
    *,
    feed: int | None = None,
    day: date | None = None,
) -> Event:
    """The event of one log row (``cluster.live_log``); ``feed`` and ``day`` are a ``prices``
    event's."""
    data: msgspec.Struct
    if kind == "prices":
        # live_log_prices_check gives every prices row its day; the reader knows the feed.
        assert feed is not None  # noqa: S101
        assert day is not None  # noqa: S101
        data = PricesData(feed=str(feed), day=day)
    elif kind == "reload":
        data = ReloadData(
            reason="revised", stream=str(stream), time_from=times[0], time_to=times[-1]
        )
    else:
        data = PointsData(stream=str(stream), points=list(zip(times, vals, strict=True)))
    return Event(pos, stream, kind, frame(pos, kind, data))
