"""Whatever a device sends, the decoder answers with points or its own RecordError, never
anything else (an exception of any other kind would stop a consumer); a value beyond its
quantity's bound is refused as a record, one within it is kept, and a batch's other records
are kept beside a refused one."""

import math

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from energy_platform.core import bounds
from energy_platform.core.codec import obis
from energy_platform.core.codec.format_v4 import (
    Decoded,
    RecordError,
    Series,
    decode_batch,
    decode_coap,
)

NOW = 1_790_000_000

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)
# Records close to valid, so that the checks past the JSON shape are reached too.
near_records = st.fixed_dictionaries(
    {
        "f": st.sampled_from([4, 3, 2**40]),
        "t": st.integers(min_value=NOW - 10**9, max_value=NOW + 10**4) | st.just(NOW),
        "d": st.integers(min_value=-5, max_value=2**33),
        "ch": st.integers(min_value=-5, max_value=2**33),
        "uniq": st.integers() | st.text(max_size=70),
        "s": st.dictionaries(
            st.text(max_size=6),
            st.floats() | st.lists(st.floats(), max_size=70) | json_values,
            max_size=4,
        ),
        "o": st.dictionaries(st.text(max_size=40), st.floats() | json_values, max_size=4),
    }
)


def assert_points_or_record_error(decode: object, payload: bytes) -> None:
    assert callable(decode)
    try:
        decoded = decode(payload, NOW)
    except RecordError as e:
        cause = e.cause
        assert cause, "every refusal names its cause"
        return
    series: list[Series] = decoded.series if isinstance(decoded, Decoded) else decoded
    for s in series:
        assert len(s.times) == len(s.values) > 0
        assert all(math.isfinite(v) for v in s.values)
        assert all(0 <= x < 2**31 for x in (s.channel, s.device))
    for refused in decoded.refused if isinstance(decoded, Decoded) else []:
        assert refused.cause, "every refusal names its cause"
        assert refused.count > 0
        assert len(msgspec.json.decode(refused.payload)) == refused.count


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_give_points_or_the_decoders_error(payload: bytes) -> None:
    assert_points_or_record_error(decode_batch, payload)
    assert_points_or_record_error(decode_coap, payload)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_arbitrary_json_gives_points_or_the_decoders_error(value: object) -> None:
    payload = msgspec.json.encode(value)
    assert_points_or_record_error(decode_batch, payload)
    assert_points_or_record_error(decode_coap, payload)


@settings(max_examples=300, deadline=None)
@given(st.lists(near_records, min_size=1, max_size=4))
def test_nearly_valid_batches_give_points_or_the_decoders_error(records: list[object]) -> None:
    try:
        payload = msgspec.json.encode(records)
    except (OverflowError, TypeError):
        return  # an integer JSON cannot carry: no device could send it either
    assert_points_or_record_error(decode_batch, payload)
    assert_points_or_record_error(decode_coap, msgspec.json.encode(records[0]))


# Every medium and OBIS code with a bound of its own, and one of each we do not know.
MEDIA = st.sampled_from([*bounds.MEDIA, 99])
CODES = st.sampled_from([*obis.KNOWN, "1-0:1.8.0*255", "0-1:24.2.1", "0-4:24.2.3", "1-0:99.9.9"])


def within(bound: bounds.Bound) -> st.SearchStrategy[float]:
    magnitudes = st.floats(min_value=bounds.SMALLEST, max_value=bound.limit) | st.just(0.0)
    return st.builds(lambda m, negative: -m if negative else m, magnitudes, st.booleans())


def beyond(bound: bounds.Bound) -> st.SearchStrategy[float]:
    large = st.floats(min_value=bound.limit, exclude_min=True, allow_infinity=False)
    tiny = st.floats(min_value=0.0, max_value=bounds.SMALLEST, exclude_min=True, exclude_max=True)
    return st.builds(lambda m, negative: -m if negative else m, large | tiny, st.booleans())


def homebase_record(t: int, s: dict[str, float] | None = None, o: dict[str, float] | None = None):
    return {"f": 4, "t": t, "d": 3, "ch": 1, "uniq": 7, "s": s or {}, "o": o or {}}


@st.composite
def one_bad_record_among_good_ones(draw: st.DrawFn) -> tuple[list[object], int, list[float]]:
    """A batch of good records (medium 1, distinct times) with one beyond its bound among them
    (a medium or an OBIS code): the records, the bad one's position, the good values in order."""
    good = draw(st.lists(within(bounds.POWER), min_size=1, max_size=6))
    records: list[object] = [homebase_record(NOW - n, s={"1": v}) for n, v in enumerate(good)]
    if draw(st.booleans()):
        medium = draw(MEDIA)
        bad = homebase_record(NOW, s={str(medium): draw(beyond(bounds.of_medium(medium)))})
    else:
        code = draw(CODES)
        bad = homebase_record(NOW, o={code: draw(beyond(bounds.of_obis(code)))})
    at = draw(st.integers(min_value=0, max_value=len(records)))
    records.insert(at, bad)
    return records, at, good


@settings(max_examples=300, deadline=None)
@given(one_bad_record_among_good_ones())
def test_a_value_beyond_its_bound_is_refused_alone_and_the_other_records_are_kept(
    batch: tuple[list[object], int, list[float]],
) -> None:
    records, at, good = batch
    decoded = decode_batch(msgspec.json.encode(records), NOW)
    assert decoded.series == [
        Series(1, 3, 1, None, None, None, [NOW - n for n in range(len(good))], good)
    ]
    (refused,) = decoded.refused
    assert (refused.cause, refused.count) == ("out_of_bounds", 1)
    assert refused.detail.startswith(f"record {at}: ")
    assert msgspec.json.decode(refused.payload) == [records[at]]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_value_within_its_bound_is_kept_whatever_its_medium_or_code(data: st.DataObject) -> None:
    medium, code = data.draw(MEDIA), data.draw(CODES)
    v = data.draw(within(bounds.of_medium(medium)))
    w = data.draw(within(bounds.of_obis(code)))
    decoded = decode_batch(
        msgspec.json.encode([homebase_record(NOW, {str(medium): v}, {code: w})]), NOW
    )
    assert decoded.refused == []
    assert sorted(s.values[0] for s in decoded.series) == sorted([v, w])
    coap = {"f": 4, "t": NOW, "d": 9, "o": {code: w}}
    assert [s.values for s in decode_coap(msgspec.json.encode(coap), NOW)] == [[w]]


@settings(max_examples=200, deadline=None)
@given(CODES, st.data())
def test_a_coap_value_beyond_its_bound_refuses_the_record(code: str, data: st.DataObject) -> None:
    value = data.draw(beyond(bounds.of_obis(code)))
    coap = {"f": 4, "t": NOW, "d": 9, "o": {"1.7.0": 1.0, code: value}}
    with pytest.raises(RecordError) as refused:
        decode_coap(msgspec.json.encode(coap), NOW)
    assert refused.value.cause == "out_of_bounds"
    assert repr(value) in str(refused.value)
