"""A live client's subscription and frames (live/hub.py, live/events.py), without a server: the
bounded buffer, the filters, and the SSE text a browser's parser reads."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from energy_platform.core.errors import InvalidInput, TooManyRequests
from energy_platform.core.settings import DatabaseSettings, LiveSettings
from energy_platform.live.events import KINDS, event_of, position_frame, reload_frame
from energy_platform.live.http import parse_event_id
from energy_platform.live.hub import Ended, LiveHub, Subscription


def subscription(
    limit: int = 100, streams: set[int] | None = None, kinds: frozenset[str] = frozenset({"points"})
) -> Subscription:
    return Subscription(
        7, 1, b"d" * 32, None if streams is None else frozenset(streams), kinds, limit
    )


async def test_frames_wait_in_order_and_come_out_together() -> None:
    sub = subscription()
    sub.offer(1, b"a" * 40)
    sub.offer(2, b"b" * 40)
    assert await sub.take(1.0) == [(1, b"a" * 40), (2, b"b" * 40)]
    assert await sub.take(0.01) == []  # nothing more: a keepalive is due


async def test_a_full_buffer_ends_the_client_and_drops_what_waited() -> None:
    sub = subscription(limit=100)
    sub.offer(1, b"a" * 60)
    sub.offer(2, b"b" * 60)
    assert sub.ended == "slow"
    with pytest.raises(Ended, match="slow"):
        await sub.take(1.0)
    sub.offer(3, b"c")  # ignored once ended
    with pytest.raises(Ended):
        await sub.take(1.0)


async def test_an_empty_buffer_takes_one_frame_larger_than_its_bound() -> None:
    sub = subscription(limit=100)
    sub.offer(1, b"a" * 500)
    assert sub.ended is None
    assert await sub.take(1.0) == [(1, b"a" * 500)]


def test_filters_keep_the_streams_and_types_asked_for_and_every_reload() -> None:
    sub = subscription(streams={12})
    assert sub.wants(event_of(1, 12, "points", [10], [1.0]))
    assert not sub.wants(event_of(2, 13, "points", [10], [1.0]))
    assert not sub.wants(event_of(3, 12, "buckets", [90], [1.0]))
    assert sub.wants(event_of(4, 12, "reload", [90, 900], []))
    prices = event_of(5, None, "prices", [], [], feed=7, day=date(2026, 11, 30))
    assert not sub.wants(prices)  # the types asked for (points) hold it back
    # The feed's own event: no stream holds it back, and it comes whatever types are not named.
    assert subscription(streams={12}, kinds=KINDS).wants(prices)


def test_frames_are_server_sent_events_of_one_json_line() -> None:
    assert event_of(5, 12, "buckets", [90, 180], [25.0, None]).frame == (
        b'id: 5\nevent: buckets\ndata: {"stream":"12","points":[[90,25.0],[180,null]]}\n\n'
    )
    assert event_of(6, 12, "reload", [90, 900], []).frame == (
        b'id: 6\nevent: reload\ndata: {"reason":"revised","stream":"12","time_from":90,'
        b'"time_to":900}\n\n'
    )
    assert event_of(7, None, "prices", [], [], feed=3, day=date(2026, 11, 30)).frame == (
        b'id: 7\nevent: prices\ndata: {"feed":"3","day":"2026-11-30"}\n\n'
    )
    assert reload_frame(9) == b'id: 9\nevent: reload\ndata: {"reason":"expired"}\n\n'
    assert position_frame(9) == b"id: 9\n\n"


def test_a_user_holds_at_most_their_share_of_streams() -> None:
    hub = LiveHub(DatabaseSettings(), LiveSettings(streams_per_user=2))
    first = hub.subscribe(7, (1, b"a" * 32), None, KINDS)
    hub.subscribe(8, (1, b"b" * 32), None, KINDS)  # another token of theirs counts too
    with pytest.raises(TooManyRequests):
        hub.subscribe(9, (1, b"a" * 32), None, KINDS)
    hub.subscribe(9, (2, b"c" * 32), None, KINDS)  # another user's are their own
    hub.unsubscribe(first)
    hub.unsubscribe(first)  # twice (a finished body, then its finalizer): once counted
    hub.subscribe(9, (1, b"a" * 32), None, KINDS)
    with pytest.raises(TooManyRequests):
        hub.subscribe(10, (1, b"a" * 32), None, KINDS)


@given(st.text(max_size=30))
def test_any_last_event_id_is_a_position_or_a_400(value: str) -> None:
    try:
        position = parse_event_id(value)
    except InvalidInput:
        assert not (value.isascii() and value.isdigit() and int(value) <= 2**63 - 1)
        return
    assert position is None if value == "" else position == int(value)
