"""One homebase's hostile or broken messages against a real ``serve all``: each is dropped alone
into the dead letters with its cause, another homebase's data is stored, and every service
still answers."""

import asyncio
import re
import secrets
import subprocess
import time
from collections.abc import AsyncIterator, Iterator

import asyncpg
import msgspec
import pytest

from energy_platform.core.codec.envelope import derive_key, seal
from energy_platform.core.settings import Settings
from energy_platform.devices.simulator.homebase import SimulatedHomebase
from tests.support.admin import run_admin
from tests.support.http import http_client
from tests.support.platform import (
    Platform,
    paired_homebase,
    platform_settings,
    publish_as,
    start_serve,
    with_cluster,
)
from tests.support.services import eventually, wait_for_http


class ServeAll(msgspec.Struct, frozen=True):
    platform: Platform
    process: subprocess.Popen[bytes]

    def urls(self) -> list[str]:
        http = self.platform.settings.http
        ports = (http.api_port, http.provisioning_port, http.forwarder_port)
        return [f"http://127.0.0.1:{port}" for port in ports]


@pytest.fixture(scope="module")
async def serve_all(settings: Settings, mqtt_url: str) -> AsyncIterator[ServeAll]:
    s = await with_cluster(platform_settings(settings, mqtt_url))
    user = await run_admin(s, "users", "add", f"hostile-{secrets.token_hex(3)}")
    process = start_serve(s, "all")
    drain = asyncio.create_task(asyncio.to_thread(_drain, process))
    try:
        served = ServeAll(
            Platform(
                s,
                f"http://127.0.0.1:{s.http.api_port}",
                s.pairing.provisioning_url,
                user["token"],
                user["id"],
            ),
            process,
        )
        # A guard against a hang, not a verdict on speed: a whole `serve all` starting on a
        # loaded 2-core machine took over 20 s (twice in full runs beside other work).
        async with asyncio.timeout(120):
            for url in served.urls():
                await wait_for_http(url + "/readyz")
        yield served
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 15)
        await drain


def _drain(process: subprocess.Popen[bytes]) -> None:
    # The JSON log must be read, or a full pipe would stall the platform.
    assert process.stderr is not None
    for _ in iter(process.stderr.readline, b""):
        pass


def dropped(metrics: str) -> dict[str, float]:
    return {
        m["cause"]: float(m["value"])
        for m in re.finditer(
            r'ep_ingest_dropped_total\{cause="(?P<cause>[a-z0-9_]+)"\} (?P<value>\S+)', metrics
        )
    }


def hostile_payloads(now: int) -> Iterator[tuple[bytes, str, bool]]:
    """(plaintext or raw payload, expected cause, whether to seal it with the right key)."""

    def record(**fields: object) -> dict[str, object]:
        return {"f": 4, "t": now, "d": 1, "ch": 1, "uniq": 1, "s": {"1": 5}, **fields}

    def batch(**fields: object) -> bytes:
        return msgspec.json.encode([record(**fields)])

    # The message of the report: "²" passes str.isdigit() but not int().
    yield batch(s={"\u00b2": 5}), "invalid_record", True
    yield batch(ch=2**31), "invalid_record", True
    yield batch(d=2**40), "invalid_record", True
    yield batch(uniq=2**64), "invalid_record", True
    yield batch(s={"1" * 12: 5}), "invalid_record", True  # a medium beyond the column
    yield batch(s={"1": 1e308}), "out_of_bounds", True  # issue 46: the engine's integral overflowed
    yield batch(t=now + 10**9), "bad_timestamp", True
    yield batch(t=-(2**62)), "bad_timestamp", True
    yield batch(o={"1-0:1.8.0\u0000": 1}), "unreadable_code", True  # that reading alone
    yield batch(o={"1-0:1.8.0\u0007": 1}), "unreadable_code", True
    yield batch(o={"9" * 5000: 1}), "unreadable_code", True
    yield batch(uniq="a\u0000b"), "invalid_record", True
    yield b'[{"f":4,"t":%d,"d":1,"ch":1,"uniq":1,"s":{"1":Infinity}}]' % now, "invalid_json", True
    yield b"[" * 5000 + b"]" * 5000, "invalid_record", True
    yield b'[{"f":4,"x":' + b"[" * 5000 + b"]" * 5000 + b"}]", "too_deep", True
    yield b'[{"f":4,"t":%d,"d":1,"ch":1,"uniq":"\xff\xfe"}]' % now, "not_utf8", True
    yield msgspec.json.encode(record()), "invalid_record", True  # an object, not a list
    yield b"[{not json", "invalid_json", True
    # Not sealed at all, or sealed with a made-up key.
    yield b"garbage", "undecryptable", False
    yield b"\x01" + bytes(40), "undecryptable", False
    yield b"", "undecryptable", False


async def test_hostile_messages_become_dead_letters_and_nothing_else_stops(
    serve_all: ServeAll, database_url: str
) -> None:
    platform = serve_all.platform
    sn, secret, _ = await paired_homebase(platform)
    good_sn, good_secret, good_feed = await paired_homebase(platform)
    aead = derive_key(secret)
    hostile = list(hostile_payloads(int(time.time())))
    async with http_client() as http:
        before = dropped((await http.get(platform.api + "/metrics")).text)
        for payload, _, sealed in hostile:
            await publish_as(platform, sn, secret, seal(aead, sn, payload) if sealed else payload)
        good = SimulatedHomebase(good_sn, good_secret)
        await publish_as(platform, good_sn, good_secret, good.batch([int(time.time()) - 5]))

        conn = await asyncpg.connect(database_url)
        try:

            async def all_judged() -> bool:
                letters = await conn.fetchval(
                    "SELECT count(*) FROM cluster.dead_letters WHERE sn = $1", sn
                )
                points = await conn.fetchval(
                    "SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s"
                    " ON s.id = p.stream_id WHERE s.feed_id = $1",
                    int(good_feed or 0),
                )
                return bool(letters == len(hostile) and points)

            await eventually(all_judged, within=30)
            letters = await conn.fetch(
                "SELECT cause, sealed, size, octet_length(payload) AS kept"
                " FROM cluster.dead_letters WHERE sn = $1 ORDER BY id",
                sn,
            )
        finally:
            await conn.close()
        after = dropped((await http.get(platform.api + "/metrics")).text)
        ready = [(await http.get(url + "/readyz")).status_code for url in serve_all.urls()]

    assert serve_all.process.poll() is None, "serve all exited"
    assert ready == [200, 200, 200]
    assert [r["cause"] for r in letters] == [cause for _, cause, _ in hostile]
    # Sealed ones are kept decrypted (what an analyst needs), unsealed ones as received.
    assert [r["sealed"] for r in letters] == [not sealed for _, _, sealed in hostile]
    assert all(r["kept"] == min(r["size"], 65_536) for r in letters)
    for cause in {cause for _, cause, _ in hostile}:
        expected = sum(1 for _, c, _ in hostile if c == cause)
        assert after.get(cause, 0) - before.get(cause, 0) >= expected, cause
