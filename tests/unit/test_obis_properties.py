"""OBIS codes as meters write them, for any code of the pattern: ``*255`` is the code itself,
any other ``*F`` a past value that is never a measurement, and DSMR's M-Bus devices each get a
channel of their own that no other code or device of the reader shares."""

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from energy_platform.core.codec import obis
from energy_platform.core.codec.format_v4 import decode_batch

NOW = 1_790_000_000
group = st.integers(min_value=0, max_value=999)
short_codes = st.builds(lambda c, d, e: f"{c}.{d}.{e}", group, group, group)
full_codes = st.builds(lambda a, b, short: f"{a}-{b}:{short}", group, group, short_codes)
# Codes meters send, so that the known ones and M-Bus devices come up, not only noise.
real_codes = st.sampled_from(
    [
        *obis.KNOWN,
        "1.8.0",
        "2.8.1",
        *(f"0-{n}:24.{x}" for n in range(1, 5) for x in ("2.1", "2.3", "1.0")),
    ]
)
codes = real_codes | short_codes | full_codes
past_f = st.integers(min_value=0, max_value=999).filter(lambda f: f != obis.CURRENT)


@settings(max_examples=500, deadline=None)
@given(codes)
def test_star_255_is_the_code_itself(code: str) -> None:
    current = f"{code}*255"
    assert obis.is_code(current)
    assert obis.normalise(current) == obis.normalise(code)
    assert obis.lookup(current) == obis.lookup(code)
    assert obis.mbus(current) == obis.mbus(code)
    assert not obis.is_past(current)
    assert obis.normalise(obis.normalise(current)) == obis.normalise(current)


@settings(max_examples=500, deadline=None)
@given(codes, past_f)
def test_any_other_f_is_a_past_value_never_a_measurement(code: str, f: int) -> None:
    past = f"{code}*{f}"
    assert obis.is_code(past)
    assert obis.is_past(past)
    assert obis.lookup(past) is None
    assert obis.mbus(past) is None
    record = {"f": 4, "t": NOW, "d": 7, "ch": 5, "uniq": 1, "o": {past: 1.0}}
    (series,) = decode_batch(msgspec.json.encode([record]), NOW).series
    assert (series.channel, series.medium, series.source) == (5, None, f"obis:{series.obis}")


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=obis.MBUS_CHANNELS - 2),
    st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=4, unique=True),
    st.sampled_from([3, 7, 4, 12]),
    st.booleans(),
)
def test_each_m_bus_device_of_a_reader_is_a_channel_of_its_own(
    reader: int, devices: list[int], device_type: int, belgian: bool
) -> None:
    reading = "24.2.3" if belgian else "24.2.1"
    o: dict[str, float] = {"1-0:1.7.0": 500.0}
    for n in devices:
        o |= {f"0-{n}:24.1.0": device_type, f"0-{n}:{reading}": float(n)}
    record = {"f": 4, "t": NOW, "d": 7, "ch": reader, "uniq": 1, "o": o}
    raw = [s for s in decode_batch(msgspec.json.encode([record]), NOW).series if s.source is None]
    medium = obis.MBUS_MEDIA[device_type]
    assert sorted((s.channel, s.medium, s.values[0]) for s in raw) == sorted(
        [(reader, 12, 500.0)] + [(n * 1000 + reader, medium, float(n)) for n in devices]
    )
    # No M-Bus channel is a reader's channel, nor another reader's device's.
    channels = {obis.mbus_channel(c, n) for c in (reader, reader + 1) for n in devices}
    assert len(channels) == 2 * len(devices)
    assert all(c is not None and c >= obis.MBUS_CHANNELS for c in channels)
