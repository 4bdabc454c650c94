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
        *(f"0-{n}:24.{x}" for n in range(1, 5) for x in ("2.1", "2.3", "3.0", "1.0")),
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


# Issue 58: the forms readers across Europe write, and codes that cannot be read.
letters = st.sampled_from(sorted(obis.LETTERS))
letter_groups = group.map(str) | letters


@settings(max_examples=300, deadline=None)
@given(group, group, letter_groups, letter_groups, letter_groups, st.none() | group)
def test_letters_and_dotted_forms_are_the_numbered_code(
    a: int, b: int, c: str, d: str, e: str, f: int | None
) -> None:
    numbered = ".".join(obis.LETTERS.get(x, x) for x in (c, d, e))
    full = f"{a}-{b}:{numbered}" + ("" if f is None else f"*{f}")
    written = [f"{a}-{b}:{c}.{d}.{e}" + ("" if f is None else f"*{f}")]
    if f is not None:
        written += [f"{a}-{b}:{c}.{d}.{e}.{f}", f"{a}.{b}.{c}.{d}.{e}.{f}"]
    for code in written:
        assert obis.is_code(code)
        assert obis.normalise(code) == obis.normalise(full)
        assert obis.lookup(code) == obis.lookup(full)
        assert obis.mbus(code) == obis.mbus(full)
        assert obis.signed(code) == obis.signed(full)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=64), st.sampled_from([*obis.KNOWN, *obis.SIGNED]))
def test_electricitys_measurement_channels_read_like_channel_0(b: int, code: str) -> None:
    # Kamstrup's Norwegian meters: 1-1:1.8.0 (amshan's test data).
    c_d_e = code.partition(":")[2]
    if code.startswith("1-0:"):
        assert obis.lookup(f"1-{b}:{c_d_e}") == obis.lookup(code)
        assert obis.signed(f"1-{b}:{c_d_e}") == obis.signed(code)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted(obis.SIGNED)),
    st.floats(min_value=-1e9, max_value=1e9, allow_nan=False).filter(lambda v: abs(v) > 1e-6),
)
def test_signed_power_is_import_when_positive_and_export_when_negative(
    code: str, value: float
) -> None:
    record = {"f": 4, "t": NOW, "d": 7, "ch": 2, "uniq": 1, "o": {code: value}}
    series = decode_batch(msgspec.json.encode([record]), NOW).series
    by_medium = {s.medium: s.values for s in series}
    assert by_medium == {
        obis.IMPORT_POWER: [max(value, 0.0)],
        obis.EXPORT_POWER: [max(-value, 0.0)],
    }
    assert {s.index for s in series} == {obis.SIGNED[code]}


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40).filter(lambda t: not obis.is_code(t)))
def test_a_code_that_cannot_be_read_is_refused_alone(code: str) -> None:
    record = {"f": 4, "t": NOW, "d": 7, "ch": 2, "uniq": 1, "o": {"1.8.0": 5.0, code: 1.0}}
    decoded = decode_batch(msgspec.json.encode([record]), NOW)
    assert [(s.medium, s.values) for s in decoded.series] == [(22, [5.0])]
    assert [(r.cause, r.count) for r in decoded.refused] == [("unreadable_code", 1)]
