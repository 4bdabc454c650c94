"""cluster.json_number writes a double as the data API always did (msgspec), byte for byte."""

import math
import random
import struct

import msgspec
import psycopg

EDGES = [
    *(0.0, -0.0, 1.0, -71.0, 0.025, 0.1 + 0.2, 1e-4, 1e-5, 1.2345e-5, 9.99e-6, 1e-6, 1.5e-7),
    *(1e15, -1e15, 1234567890123456.8, 9999999999999998.0, 1e16, 1e22, 2.0**53 + 2, 2.0**63),
    *(2.0**64, 1e20, 5e-324, 2.5e-308, 1.7976931348623157e308, 123456789.125),
    # Integers that PostgreSQL's own float8 text writes with more digits than the shortest.
    *(5.486020414815598e16, -9.037629893459379e18, 7.99354789665792e20, 6.4e24),
    *(math.nextafter(1e15, 0), math.nextafter(1e-4, 0), math.nextafter(1e16, 0)),
    *(math.nextafter(1e-5, 0), math.nextafter(1e33, 0), 1e33),
]


def sample(count: int) -> list[float]:
    """Any bit pattern, any magnitude, integers near the layout thresholds, meter-like values."""
    rng = random.Random(15)  # noqa: S311 - a fixed sample, not a secret
    values: list[float] = []
    while len(values) < count:
        kind = rng.randrange(4)
        if kind == 0:
            value = struct.unpack("d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        elif kind == 1:
            value = rng.uniform(-1, 1) * 10 ** rng.uniform(-300, 300)
        elif kind == 2:
            value = float(rng.randint(1, 10**17)) * 10.0 ** rng.randint(-22, 12)
        else:
            value = round(rng.uniform(-5000, 5000), rng.randint(0, 6))
        if math.isfinite(value):
            values.append(value)
    return values


def test_every_double_is_written_as_msgspec_writes_it(database_url: str) -> None:
    values = EDGES + sample(40_000)
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT array_agg(cluster.json_number(v) ORDER BY i)"
            "  FROM unnest(%s::float8[]) WITH ORDINALITY AS u(v, i)",
            (values,),
        ).fetchone()
    assert row
    wrong = [
        (v, text)
        for v, text in zip(values, row[0], strict=True)
        if text != msgspec.json.encode(v).decode()
    ]
    assert wrong == []
