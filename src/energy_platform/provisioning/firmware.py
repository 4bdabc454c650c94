"""Where a prepared firmware image is found: over HTTP (every generation; offered to 6) or TFTP
(offered to 0 and 3)."""

from __future__ import annotations

import asyncpg
import msgspec

from energy_platform.core.errors import NotFound
from energy_platform.core.serials import SERIAL_NUMBER
from energy_platform.provisioning import queries

TFTP_GENERATIONS = frozenset({0, 3})


class PreparedImage(msgspec.Struct, frozen=True):
    generation: int
    component: str
    version: str
    sha256: bytes
    image: bytes


def tftp_file_name(sn: str, component: str, version: str) -> str:
    """The TFTP file name of a prepared image: ``{SN}/{component}-{version}.bin``."""
    return f"{sn}/{component}-{version}.bin"


async def prepared_image(pool: asyncpg.Pool, sn: str) -> PreparedImage:
    """The image prepared for ``sn``; :class:`NotFound` for an unknown SN or no upgrade."""
    row = await pool.fetchrow(queries.PREPARED_IMAGE, sn)
    if row is None:
        raise NotFound(f"no homebase has serial number {sn}")
    if row["component"] is None:
        raise NotFound(f"no upgrade is prepared for {sn}")
    return PreparedImage(
        row["generation"], row["component"], row["version"], row["sha256"], row["image"]
    )


async def tftp_image(pool: asyncpg.Pool, name: str) -> bytes | None:
    """The bytes behind TFTP file ``{SN}/{component}-{version}.bin``, if it is prepared.

    Only the current prepared upgrade of a generation 0 or 3 homebase is served; any other
    name is "file not found", with no hint whether the SN exists.
    """
    name = name.lstrip("/")
    sn = name.partition("/")[0]
    if SERIAL_NUMBER.fullmatch(sn) is None:
        return None
    try:
        prepared = await prepared_image(pool, sn)
    except NotFound:
        return None
    expected = tftp_file_name(sn, prepared.component, prepared.version)
    if prepared.generation not in TFTP_GENERATIONS or name != expected:
        return None
    return prepared.image
