"""docs/devices.md states the unit the platform takes for every OBIS code it knows, and the
simulator's meter reader sends exactly that: W for power (a DSMR telegram's kW times 1000) and Wh
for registers (its kWh times 1000)."""

import re
from pathlib import Path

from energy_platform.core.codec import obis
from energy_platform.devices.simulator.homebase import SimulatedHomebase

DOCS = Path(__file__).resolve().parents[2] / "docs" / "devices.md"
UNITS = {12: "W", 13: "W", 22: "Wh", 23: "Wh", 2: "V", 3: "A", 4: "Hz", 7: "m³", 8: "m³"}


def documented_units() -> dict[str, str]:
    """{code: unit} of the OBIS table, its short forms and ranges spelled out."""
    text = DOCS.read_text(encoding="utf-8")
    table = text[text.index("### OBIS codes") : text.index("#### `*F`")]
    units: dict[str, str] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("`"):
            continue
        codes = re.findall(r"`([0-9.:-]+)`", cells[0])
        if len(codes) == 2 and "` … `" in cells[0]:  # `1-0:1.8.1` … `1-0:1.8.4`
            first, last = codes
            stem = first.rsplit(".", 1)[0]
            codes = [f"{stem}.{n}" for n in range(int(first[-1]), int(last[-1]) + 1)]
        for code in codes:
            units[obis.normalise(code)] = cells[3]
    return units


def test_every_known_code_has_its_mediums_unit_in_the_docs() -> None:
    documented = documented_units()
    assert {code: documented.get(code) for code in obis.KNOWN} == {
        code: UNITS[medium] for code, (medium, _) in obis.KNOWN.items()
    }


def test_the_simulated_meter_reader_sends_watts_and_watt_hours() -> None:
    homebase = SimulatedHomebase("0123456789ABCDEF", bytes(256), seed=1)
    noon = 1_790_000_000 // 86_400 * 86_400 + 12 * 3600
    homebase.records(noon - 3600)
    (reader,) = [r for r in homebase.records(noon) if r.o]
    documented = documented_units()
    assert {documented[obis.normalise(code)] for code in reader.o} == {"W", "Wh"}
    for code, value in reader.o.items():
        medium, _ = obis.KNOWN[obis.normalise(code)]
        if UNITS[medium] == "Wh":
            assert value >= 1e6, code  # its registers start at 1 to 5 MWh: in kWh, 1000 to 5000
        else:
            assert 0 <= value <= 20_000, code  # a house's power: in kW it would be below 20
    # An hour at noon: the house took or fed in some power, in watts, not kilowatts.
    assert max(reader.o["1.7.0"], reader.o["2.7.0"]) > 100
