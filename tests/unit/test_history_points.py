"""The bodies of a history import: JSON pairs and CSV lines become microseconds and values, or
a 400 (413 past the limit) naming the fault (a value beyond its quantity's bound included);
nothing else ever comes out of them."""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from energy_platform.core import bounds
from energy_platform.core.errors import InvalidInput, OutOfBounds, PayloadTooLarge
from energy_platform.history import points
from energy_platform.history.points import EARLIEST, LATEST, MAX_POINTS, Points

SECONDS = st.integers(min_value=EARLIEST, max_value=LATEST)
# Values of the quantity with the widest bound; each test's own bound is that one's.
WIDEST = bounds.UNKNOWN
VALUES = st.floats(min_value=-WIDEST.limit, max_value=WIDEST.limit).filter(
    lambda v: v == 0 or abs(v) >= bounds.SMALLEST
)


def from_json(body: bytes, bound: bounds.Bound = WIDEST) -> Points:
    return points.from_json(body, bound=bound)


def from_csv(text: str, bound: bounds.Bound = WIDEST, limit: int | None = MAX_POINTS) -> Points:
    return points.from_csv(text, bound=bound, limit=limit)


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
        ("1e12,1\n", "outside the calendar, 1970-01-01 to 9000-01-01"),
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


@given(
    st.sampled_from([*bounds.MEDIA, 99]),
    st.floats(min_value=1.0, max_value=1e200) | st.floats(min_value=1e-280, max_value=0.9),
    st.booleans(),
)
def test_a_value_beyond_its_quantitys_bound_is_a_400_naming_it(
    medium: int, scale: float, negative: bool
) -> None:
    bound = bounds.of_medium(medium)
    # Past the bound by the factor, or under the smallest magnitude by it.
    value = bound.limit * (1 + scale) if scale >= 1 else bounds.SMALLEST * scale
    value = -value if negative else value
    with pytest.raises(OutOfBounds) as json_refused:
        from_json(json.dumps([[1767225600, 1], [1767225605, value]]).encode(), bound)
    assert json_refused.value.detail.startswith(f"point 1: {value!r} is ")
    with pytest.raises(OutOfBounds) as csv_refused:
        from_csv(f"time,value\n1767225600,1\n1767225605,{value!r}\n", bound)
    assert csv_refused.value.detail.startswith(f"line 3: {value!r} is ")
    named = f"at most {bounds._shown(bound.limit)}" if scale >= 1 else "at least 1e-30"
    assert named in json_refused.value.detail
    assert named in csv_refused.value.detail


def test_the_issues_1e308_watts_is_refused_naming_the_bound() -> None:
    with pytest.raises(
        OutOfBounds, match="point 0: 1e\\+308 is out of bounds: power is at most 1e10 W"
    ):
        from_json(b"[[1767225600,1e308],[1767225605,1e308]]", bounds.of_medium(1))
