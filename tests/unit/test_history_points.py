"""The bodies of a history import: JSON pairs and CSV lines become microseconds and values, or
a 400 (413 past the limit) naming the fault; nothing else ever comes out of them."""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from energy_platform.core.errors import InvalidInput, PayloadTooLarge
from energy_platform.history.points import EARLIEST, LATEST, MAX_POINTS, from_csv, from_json

SECONDS = st.integers(min_value=EARLIEST, max_value=LATEST)
VALUES = st.floats(allow_nan=False, allow_infinity=False)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@given(st.lists(st.tuples(SECONDS, VALUES), max_size=50))
def test_json_pairs_come_back_as_whole_microseconds(pairs: list[tuple[int, float]]) -> None:
    points = from_json(json.dumps(pairs).encode())
    assert points.times == [t * 1_000_000 for t, _ in pairs]
    assert points.values == [v for _, v in pairs]


@given(st.lists(st.tuples(SECONDS, VALUES), max_size=50))
def test_csv_in_unix_seconds_or_iso_times_reads_the_same(pairs: list[tuple[int, float]]) -> None:
    unix = "time,value\n" + "".join(f"{t},{v!r}\n" for t, v in pairs)
    iso = "".join(
        f"{(EPOCH + timedelta(seconds=t)).astimezone(UTC).isoformat()},{v!r}\n" for t, v in pairs
    )
    assert from_csv(unix) == from_csv(iso) == from_json(json.dumps(pairs).encode())


@given(st.binary(max_size=300))
def test_any_bytes_are_points_or_a_400(body: bytes) -> None:
    with contextlib.suppress(InvalidInput):
        from_json(body)


@given(st.text(max_size=300))
def test_any_text_is_points_or_a_400_naming_its_line(text: str) -> None:
    try:
        from_csv(text)
    except InvalidInput as e:
        refused = e.detail
    else:
        return
    assert refused.startswith("line ")


def test_a_fraction_of_a_second_is_kept_to_the_microsecond() -> None:
    assert from_json(b"[[1767225600.123456, 1]]").times == [1_767_225_600_123_456]
    assert from_csv("2026-01-01T01:00:00.5+01:00,2\n").times == [1_767_225_600_500_000]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1767225600\n", "line 1: expected time,value"),
        ("1767225600,1\n1767225601,x\n", "line 2: 'x' is not a number"),
        ("1767225600,inf\n", "line 1: inf is not a finite number"),
        ("2026-01-01T00:00:00,1\n", "line 1: '2026-01-01T00:00:00' has no UTC offset"),
        ("yesterday,1\n", "neither Unix seconds nor an ISO 8601 time"),
        ("1e12,1\n", "outside the years 1 to 9999"),
    ],
)
def test_a_bad_line_is_refused_with_its_number(text: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        from_csv(text)


def test_more_than_the_limit_is_a_413_and_the_admin_command_has_none() -> None:
    lines = "".join(f"{k},1\n" for k in range(MAX_POINTS + 1))
    with pytest.raises(PayloadTooLarge):
        from_csv(lines)
    with pytest.raises(PayloadTooLarge):
        from_json(json.dumps([[k, 1] for k in range(MAX_POINTS + 1)]).encode())
    assert len(from_csv(lines, limit=None).times) == MAX_POINTS + 1
