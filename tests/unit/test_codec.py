import time

import msgspec
import pytest

from energy_platform.core.codec.envelope import EnvelopeError, derive_key, seal, unseal
from energy_platform.core.codec.format_v4 import (
    EARLIEST,
    MAX_PAYLOAD_BYTES,
    MAX_RECORDS,
    RecordError,
    Series,
    decode_batch,
    decode_coap,
)
from energy_platform.devices.simulator.homebase import RAW_POINTS_PER_TIME, SimulatedHomebase

SN = "0123456789ABCDEF"
SECRET = bytes(range(256))
NOW = 1_790_000_000


def test_an_envelope_opens_only_with_its_key_and_serial_number() -> None:
    aead = derive_key(SECRET)
    payload = seal(aead, SN, b'[{"f": 4}]')
    assert payload[0] == 0x01
    assert unseal(aead, SN, payload) == b'[{"f": 4}]'
    with pytest.raises(EnvelopeError):
        unseal(aead, "0123456789ABCDEE", payload)  # replayed under another homebase
    with pytest.raises(EnvelopeError):
        unseal(derive_key(bytes(256)), SN, payload)
    tampered = payload[:-1] + bytes([payload[-1] ^ 1])
    with pytest.raises(EnvelopeError):
        unseal(aead, SN, tampered)
    with pytest.raises(EnvelopeError):
        unseal(aead, SN, b"\x02" + payload[1:])


def record(**fields: object) -> dict[str, object]:
    return {"f": 4, "t": NOW, "d": 3, "ch": 1, "uniq": 77, **fields}


def test_a_batch_becomes_readings_with_phases_system_media_and_obis_codes() -> None:
    payload = msgspec.json.encode(
        [record(s={"1": [100, 200.5, 300], "40": -70, "99": 1}, o={"1.8.0": 12345, "9.9.9": 2})]
    )
    readings = decode_batch(payload, NOW).series
    assert readings == [
        Series(1, 3, 1, 1, None, None, [NOW], [100.0]),
        Series(1, 3, 1, 2, None, None, [NOW], [200.5]),
        Series(1, 3, 1, 3, None, None, [NOW], [300.0]),
        Series(1, 3, None, None, "medium:40", None, [NOW], [-70.0]),
        Series(1, 3, None, None, "medium:99", None, [NOW], [1.0]),
        Series(1, 3, 22, None, None, "1-0:1.8.0", [NOW], [12345.0]),
        Series(1, 3, None, None, "obis:1-0:9.9.9", "1-0:9.9.9", [NOW], [2.0]),
    ]


def test_a_dsmr_telegram_maps_tariff_registers_and_export_phases() -> None:
    codes = {"1.8.1": 1, "1.8.2": 2, "1-0:1.8.4": 4, "2.8.1": 5, "2.8.2": 6, "2.8.3": 7}
    phases = {"22.7.0": 10, "42.7.0": 20, "62.7.0": 30}
    readings = decode_batch(msgspec.json.encode([record(o={**codes, **phases})]), NOW).series
    assert {(r.medium, r.index, r.obis): r.values for r in readings} == {
        (22, 1, "1-0:1.8.1"): [1.0],
        (22, 2, "1-0:1.8.2"): [2.0],
        (22, 4, "1-0:1.8.4"): [4.0],
        (23, 1, "1-0:2.8.1"): [5.0],
        (23, 2, "1-0:2.8.2"): [6.0],
        (23, 3, "1-0:2.8.3"): [7.0],
        (13, 1, "1-0:22.7.0"): [10.0],
        (13, 2, "1-0:42.7.0"): [20.0],
        (13, 3, "1-0:62.7.0"): [30.0],
    }
    # Tariff 5 is no register we know: a system stream, as every unknown code.
    (unknown,) = decode_batch(msgspec.json.encode([record(o={"1.8.5": 1})]), NOW).series
    assert (unknown.medium, unknown.source) == (None, "obis:1-0:1.8.5")


def test_records_of_one_stream_at_several_times_become_one_series() -> None:
    payload = msgspec.json.encode(
        [record(t=NOW - 10, s={"7": 1.0}), record(t=NOW - 5, s={"7": 1.5, "1": 9})]
    )
    series = decode_batch(payload, NOW).series
    assert series == [
        Series(1, 3, 7, None, None, None, [NOW - 10, NOW - 5], [1.0, 1.5]),
        Series(1, 3, 1, None, None, None, [NOW - 5], [9.0]),
    ]


@pytest.mark.parametrize(
    ("bad", "cause"),
    [
        ({"ch": None}, "invalid_record"),
        ({"s": {"1": "lots"}}, "invalid_record"),
        ({"s": {"1": True}}, "invalid_record"),
        ({"s": {"1": 1e400}}, "invalid_record"),
        ({"t": EARLIEST - 1}, "bad_timestamp"),
        ({"t": NOW + 601}, "bad_timestamp"),
        ({"t": 2**70}, "invalid_record"),
        ({"f": 3}, "unsupported_format"),
        ({"s": {"power": 1}}, "invalid_record"),
        ({"s": {"\u00b2": 5}}, "invalid_record"),  # "²": isdigit() but not int()
        ({"s": {"123456": 5}}, "invalid_record"),
        ({"s": {"1": []}}, "invalid_record"),
        ({"ch": -1}, "invalid_record"),
        ({"ch": 2**31}, "invalid_record"),
        ({"d": 2**31}, "invalid_record"),
        ({"uniq": 2**63}, "invalid_record"),
        ({"uniq": "a\u0000b"}, "invalid_record"),
        ({"uniq": "line\nbreak"}, "invalid_record"),
        ({"s": {"1": 1e308}}, "out_of_bounds"),  # W: the engine's integral would overflow
        ({"s": {"1": [5, -2e10]}}, "out_of_bounds"),
        ({"s": {"22": 5e-324}}, "out_of_bounds"),  # Wh: a product would underflow
        ({"o": {"1.8.0": 1e16}}, "out_of_bounds"),
        ({"o": {"9.9.9": -1e300}}, "out_of_bounds"),  # an unknown code: a system stream
    ],
)
def test_a_bad_record_is_refused_alone_with_its_cause_and_the_others_are_kept(
    bad: dict[str, object], cause: str
) -> None:
    # Issue 46 changed this: a bad record used to reject its whole message.
    broken = record(s={"1": 5}) | bad
    if bad.get("ch", 0) is None:
        del broken["ch"]
    good = [record(t=NOW - 1, s={"7": 1234.5}), record(t=NOW, s={"7": 1235.0})]
    payload = msgspec.json.encode([good[0], broken, good[1]])
    decoded = decode_batch(payload, NOW)
    assert decoded.series == [Series(1, 3, 7, None, None, None, [NOW - 1, NOW], [1234.5, 1235.0])]
    (refused,) = decoded.refused
    assert (refused.cause, refused.count) == (cause, 1)
    assert refused.detail.startswith("record 1: ")
    # The dead letter holds the record as sent, a batch of its own.
    assert refused.payload == msgspec.json.encode([broken])


@pytest.mark.parametrize(
    "code",
    [
        "1-0:1.8.0\u0000",
        "x" * 5000,
        "not obis",
        "1-0:1.8.\u0663",  # "٣": a digit, not an ASCII one
        "0-0:X.1.0",  # a letter IEC 62056-21 does not give a number
        "1.0.1.8.0",  # five dotted groups: which one is missing is anyone's guess
    ],
)
def test_a_code_that_cannot_be_read_costs_only_its_own_reading(code: str) -> None:
    # Issue 58: one such code refused the whole record, the registers beside it with it.
    broken = record(s={"1": 5}, o={"1.8.0": 1200.0, code: 3.0})
    decoded = decode_batch(msgspec.json.encode([broken]), NOW)
    assert sorted((s.medium, s.values[0]) for s in decoded.series) == [(1, 5.0), (22, 1200.0)]
    (refused,) = decoded.refused
    assert (refused.cause, refused.count) == ("unreadable_code", 1)
    assert refused.detail.startswith("record 0: OBIS code ")
    # The dead letter holds that reading alone, as a record of its own to replay.
    assert msgspec.json.decode(refused.payload) == [record(o={code: 3.0}, s={})]


def test_letter_and_dotted_forms_are_the_codes_they_stand_for() -> None:
    # dsmr_parser's Iskra IE and EasyMeter telegrams (0-0:C.1.0, 0-0:F.F.0: D0 letters), and
    # readers that print the six groups dotted (volkszaehler's and Tasmota's SML scripts).
    o = {
        "0-0:C.1.0*255": 12345678.0,
        "0-0:F.F.0*255": 0.0,
        "1.0.1.8.0.255": 1000.0,
        "1-0:2.8.0.255": 10.0,
    }
    decoded = decode_batch(msgspec.json.encode([record(o=o)]), NOW)
    assert decoded.refused == []
    assert sorted((s.medium or 0, s.source or "", s.obis) for s in decoded.series) == [
        (0, "obis:0-0:96.1.0", "0-0:96.1.0"),
        (0, "obis:0-0:97.97.0", "0-0:97.97.0"),
        (22, "", "1-0:1.8.0"),
        (23, "", "1-0:2.8.0"),
    ]


def test_refused_records_are_grouped_by_cause_and_a_batch_of_bad_records_keeps_nothing() -> None:
    payload = msgspec.json.encode(
        [record(s={"1": 1e308}), 7, record(s={"1": 2e10}), record(f=3), record(o={"1.7.0": 1e11})]
    )
    decoded = decode_batch(payload, NOW)
    assert decoded.series == []
    assert [(r.cause, r.count) for r in decoded.refused] == [
        ("out_of_bounds", 3),
        ("invalid_record", 1),
        ("unsupported_format", 1),
    ]
    bounded = decoded.refused[0]
    assert [r["s"] if "s" in r else r["o"] for r in msgspec.json.decode(bounded.payload)] == [
        {"1": 1e308},
        {"1": 2e10},
        {"1.7.0": 1e11},
    ]
    assert "record 0: medium 1: 1e+308 is out of bounds: power is at most 1e10 W" in bounded.detail
    assert "record 4: OBIS 1-0:1.7.0: 100000000000.0 is out of bounds" in bounded.detail


def test_unknown_properties_are_ignored_in_homebase_and_coap_records() -> None:
    # The spec: adding an object property is compatible. Newer firmware keeps its data.
    newer = record(s={"1": 5}) | {"q": 1, "extra": [[[1]]], "meta": {"fw": "7.1"}}
    assert (
        decode_batch(msgspec.json.encode([newer]), NOW).series
        == decode_batch(msgspec.json.encode([record(s={"1": 5})]), NOW).series
    )
    t = int(NOW)
    coap = {"f": 4, "t": t, "d": 9, "o": {"1.7.0": 1.5}, "q": 1, "fw": {"v": [1, 2]}}
    assert decode_coap(msgspec.json.encode(coap), NOW) == [
        Series(0, 9, 12, None, None, "1-0:1.7.0", [t], [1.5])
    ]


def test_star_255_is_the_current_value_and_any_other_f_a_past_one() -> None:
    # SML readers write F = 255 for the current value: the register itself. F = 101 is a past
    # billing period's reading: a system stream, never a register.
    codes = {"1-0:1.8.0*255": 7_000, "1-0:1.8.0*101": 5_000, "2.8.0*255": 3}
    readings = decode_batch(msgspec.json.encode([record(o=codes)]), NOW).series
    assert readings == [
        Series(1, 3, 22, None, None, "1-0:1.8.0", [NOW], [7000.0]),
        Series(1, 3, None, None, "obis:1-0:1.8.0*101", "1-0:1.8.0*101", [NOW], [5000.0]),
        Series(1, 3, 23, None, None, "1-0:2.8.0", [NOW], [3.0]),
    ]


def test_m_bus_devices_get_channels_of_their_own_and_their_type_decides_the_medium() -> None:
    # A DSMR reader on channel 5: gas on M-Bus 1, water on M-Bus 2 (its capture suffix *255),
    # a heat meter on M-Bus 3 (type 12), a device of type 2 on 4, and a Belgian 24.2.3.
    codes = {
        "0-1:24.1.0": 3, "0-1:24.2.1": 2300.5,
        "0-2:24.1.0": 7, "0-2:24.2.1*255": 120.25,
        "0-3:24.1.0": 12, "0-3:24.2.3": 8.0,
        "0-4:24.1.0": 2, "0-4:24.2.1": 1.0,
    }  # fmt: skip
    readings = decode_batch(msgspec.json.encode([record(ch=5, d=7, o=codes)]), NOW).series
    raw = {(r.channel, r.medium, r.obis): r.values for r in readings if r.source is None}
    assert raw == {
        (1005, 7, "0-1:24.2.1"): [2300.5],
        (2005, 8, "0-2:24.2.1"): [120.25],
        (3005, 9, "0-3:24.2.3"): [8.0],
    }
    system = {(r.channel, r.source) for r in readings if r.source is not None}
    assert system == {
        (1005, "obis:0-1:24.1.0"),
        (2005, "obis:0-2:24.1.0"),
        (3005, "obis:0-3:24.1.0"),
        (4005, "obis:0-4:24.1.0"),
        (4005, "obis:0-4:24.2.1"),  # type 2 (electricity) is no gas, water or heat meter
    }


def test_an_m_bus_reading_without_its_type_is_left_to_the_store() -> None:
    (gas,) = decode_coap(
        msgspec.json.encode({"f": 4, "t": NOW, "d": 9, "o": {"0-2:24.2.3": 10.5}}), NOW
    )
    assert gas == Series(2000, 9, None, None, None, "0-2:24.2.3", [NOW], [10.5])
    assert gas.pending
    # A past value of it is no reading; on a reader channel past 999 it has no channel.
    past, high = decode_batch(
        msgspec.json.encode(
            [record(o={"0-1:24.2.1*101": 1}), record(ch=1000, o={"0-1:24.2.1": 2})]
        ),
        NOW,
    ).series
    assert (past.channel, past.source) == (1, "obis:0-1:24.2.1*101")
    assert (high.channel, high.source) == (1000, "obis:0-1:24.2.1")


def test_a_record_ten_minutes_ahead_is_still_accepted() -> None:
    readings = decode_batch(msgspec.json.encode([record(t=NOW + 600, s={"1": 1})]), NOW).series
    assert len(readings) == 1


HOSTILE_PAYLOADS = [
    (b"not json", "invalid_json"),
    (b'[{"f": 4', "invalid_json"),
    (b'{"f": 4}', "invalid_record"),
    (b'[{"f":4,"t":1790000000,"d":1,"ch":1,"uniq":1,"s":{"1":Infinity}}]', "invalid_json"),
    (b'[{"f":4,"t":1790000000,"d":1,"ch":1,"uniq":1,"s":{"1":NaN}}]', "invalid_json"),
    (b"[" * 5000 + b"]" * 5000, "invalid_record"),
    (b'[{"f":4,"x":' + b"[" * 5000 + b"]" * 5000 + b"}]", "too_deep"),
    (b'[{"f":4,"t":1790000000,"d":1,"ch":1,"uniq":"\xff\xfe"}]', "not_utf8"),
    (b" " * (MAX_PAYLOAD_BYTES + 1), "too_large"),
    (
        b"[" + b",".join([msgspec.json.encode(record())] * (MAX_RECORDS + 1)) + b"]",
        "invalid_record",
    ),
]


@pytest.mark.parametrize(("payload", "cause"), HOSTILE_PAYLOADS)
def test_a_hostile_payload_is_refused_whole_with_its_cause(payload: bytes, cause: str) -> None:
    with pytest.raises(RecordError) as error:
        decode_batch(payload, NOW)
    assert error.value.cause == cause


def test_a_coap_record_carries_obis_codes_only() -> None:
    now = time.time()
    t = int(now)
    readings = decode_coap(msgspec.json.encode({"f": 4, "t": t, "d": 9, "o": {"1.7.0": 1.5}}), now)
    assert readings == [Series(0, 9, 12, None, None, "1-0:1.7.0", [t], [1.5])]
    for field in ("ch", "uniq", "s"):
        payload = msgspec.json.encode({"f": 4, "t": t, "d": 9, "o": {"1.7.0": 1}, field: 1})
        with pytest.raises(RecordError) as error:
            decode_coap(payload, now)
        assert error.value.cause == "forbidden_field"
    with pytest.raises(RecordError):
        decode_coap(msgspec.json.encode({"f": 4, "t": t, "d": 9}), now)
    with pytest.raises(RecordError):
        decode_coap(msgspec.json.encode({"f": 4, "t": t, "d": 9, "o": {}}), now)


def test_a_coap_record_with_a_value_beyond_its_bound_is_refused_whole() -> None:
    now = time.time()
    record = {"f": 4, "t": int(now), "d": 9, "o": {"1.7.0": 1.5, "1.8.0": 1e308}}
    with pytest.raises(RecordError) as error:
        decode_coap(msgspec.json.encode(record), now)
    assert error.value.cause == "out_of_bounds"
    assert "1e+308 is out of bounds: an energy register is at most 1e15 Wh" in str(error.value)


def test_the_simulators_raw_points_per_time_are_what_its_records_decode_to() -> None:
    records = SimulatedHomebase(SN, SECRET, seed=1).records(NOW)
    readings = decode_batch(msgspec.json.encode(records), NOW).series
    assert sum(len(r.values) for r in readings if r.source is None) == RAW_POINTS_PER_TIME
