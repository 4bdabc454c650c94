"""Whatever a device sends, the decoder answers with points or its own RecordError, never
anything else (an exception of any other kind would stop a consumer)."""

import math

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from energy_platform.core.codec.format_v4 import RecordError, decode_batch, decode_coap

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
        series = decode(payload, NOW)
    except RecordError as e:
        cause = e.cause
        assert cause, "every refusal names its cause"
        return
    for s in series:
        assert len(s.times) == len(s.values) > 0
        assert all(math.isfinite(v) for v in s.values)
        assert all(0 <= x < 2**31 for x in (s.channel, s.device))


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
