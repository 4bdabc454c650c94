"""Whatever a price file holds, the parser answers with slots or the CLI's InvalidInput naming
what is wrong, never anything else; and a valid file, however its times are written, gives back
exactly the slots it was written from."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from energy_platform.core.errors import InvalidInput
from energy_platform.engine.prices import Slot, parse_csv

T0 = datetime(2026, 3, 29, tzinfo=UTC)

# Pieces of valid and nearly valid rows, so that the checks past the row's shape are reached.
fragments = st.sampled_from(
    [
        "2026-03-29T00:00:00Z",
        "2026-03-29T00:15:00+01:00",
        "2026-03-29T00:01:00Z",
        "2026-03-29T00:00",
        "0001-01-01T00:00+01:00",
        "9999-12-31T23:59:59Z",
        "1.5",
        "-0.2",
        "nan",
        "inf",
        "1e999",
        "1_000",
        ",",
        "\n",
        "\r\n",
        " ",
        "start,price",
        "\ufeff",
    ]
)
near_files = st.lists(fragments | st.text(max_size=8), max_size=30).map("".join)


def assert_slots_or_input_error(text: str) -> None:
    try:
        slots = parse_csv(text)
    except InvalidInput as e:
        detail = e.detail
        assert detail, "every refusal says what is wrong"
        return
    assert slots
    assert all(s.start < s.end for s in slots)
    assert all(a.end == b.start for a, b in itertools.pairwise(slots))


@settings(max_examples=300)
@given(st.text())
def test_any_text_gives_slots_or_an_input_error(text: str) -> None:
    assert_slots_or_input_error(text)


@settings(max_examples=500)
@given(near_files)
def test_nearly_valid_files_give_slots_or_an_input_error(text: str) -> None:
    assert_slots_or_input_error(text)


# Offsets as exchanges and spreadsheets write them: whole quarter hours within a day.
offsets = st.integers(min_value=-14 * 4, max_value=14 * 4).map(
    lambda q: timezone(timedelta(minutes=15 * q))
)
prices = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def price_files(draw: st.DrawFn) -> tuple[str, list[Slot]]:
    """A file and the slots it means: slot lengths in whole 90 s steps, the last one as long as
    the one before it, every row's time in an offset of its own, blank lines anywhere."""
    lengths = draw(st.lists(st.integers(min_value=1, max_value=960), min_size=1, max_size=40))
    lengths.append(lengths[-1])
    start = T0 + timedelta(seconds=90 * draw(st.integers(min_value=-(10**6), max_value=10**6)))
    slots: list[Slot] = []
    lines = ["start,price"] if draw(st.booleans()) else []
    for steps in lengths:
        end = start + timedelta(seconds=90 * steps)
        price = draw(prices)
        slots.append(Slot(start, end, price))
        written = start.astimezone(draw(offsets)).isoformat()
        lines.append(f"{written},{price!r}")
        lines.extend([""] * draw(st.integers(min_value=0, max_value=1)))
        start = end
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines), slots


@settings(max_examples=200)
@given(price_files())
def test_a_valid_file_gives_back_the_slots_it_was_written_from(
    file: tuple[str, list[Slot]],
) -> None:
    text, slots = file
    assert parse_csv(text) == slots


@settings(max_examples=100)
@given(price_files())
def test_prices_per_mwh_are_divided_by_a_thousand(file: tuple[str, list[Slot]]) -> None:
    text, slots = file
    parsed = parse_csv(text, per="MWh")
    assert [p.price for p in parsed] == [s.price / 1000 for s in slots]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("start,price\n2026-03-29T00:00Z,1\nyesterday,2\n", "line 3: 'yesterday' is not an ISO"),
        ("2026-03-29T00:00Z,1\n2026-03-29T00:15Z,cheap\n", "line 2: 'cheap' is not a price"),
        ("2026-03-29T00:00Z,1\n2026-03-29T01:15,2\n", "line 2: '2026-03-29T01:15' has no UTC"),
        ("2026-03-29T00:00Z,NaN\n2026-03-29T00:15Z,1\n", "line 1: 'NaN' is not a finite price"),
        ("2026-03-29T00:00Z,1\n\n2026-03-29T00:15Z,-inf\n", "line 3: '-inf' is not a finite"),
        (
            "2026-03-29T00:00Z,1\n2026-03-29T00:15Z,1\n2026-03-29T00:15Z,1\n",
            "line 3: 2026-03-29T00:15Z is not after the previous row's start",
        ),
        (
            "2026-03-29T00:00Z,1\n2026-03-29T00:01Z,1\n2026-03-29T00:15Z,1\n",
            "line 1: its slot is 60 s long, not a multiple of 90 s",
        ),
        ("2026-03-29T00:00Z,1\n", "line 1: a single row says nothing of its slot's length"),
        ("2026-03-29T00:00Z;1\n", "line 1: '2026-03-29T00:00Z;1' is not start,price"),
        ("start,price\n\n", "the file holds no prices"),
    ],
)
def test_a_bad_file_is_refused_with_the_line_and_the_fault(text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_csv(text)
    assert message in refused.value.detail


def test_the_last_slot_of_a_single_row_is_as_long_as_given() -> None:
    assert parse_csv("2026-03-29T00:00Z,0.25\n", slot_minutes=60) == [
        Slot(T0, T0 + timedelta(hours=1), 0.25)
    ]
