"""Named SQL of the provisioning service's hot paths (asyncpg, ``$n`` parameters)."""

from __future__ import annotations

# --- clusters -------------------------------------------------------------------------------

CALLING_CLUSTER = """
SELECT id, enabled, secret_sha256 FROM provisioning.clusters WHERE secret_sha256 = $1
"""

# --- cluster-facing homebase requests -------------------------------------------------------

HOMEBASE_DETAILS = """
SELECT h.sn, h.partner, h.type, h.cluster_id,
       h.last_boot, coalesce(h.last_boot > now() - interval '2 hours 15 minutes', false) AS alive,
       h.last_upgrade, h.avr_version, h.avr_tags, h.bl_version, h.msp_version,
       c.title, c.enabled, host(c.http_address) AS http_address, c.http_port,
       host(c.mqtt_address) AS mqtt_address, c.mqtt_port
FROM provisioning.homebases AS h
LEFT JOIN provisioning.clusters AS c ON c.id = h.cluster_id
WHERE h.sn = $1
"""

HOMEBASE_PAIRING = "SELECT cluster_id FROM provisioning.homebases WHERE sn = $1"

PAIRED_TO = "SELECT sn FROM provisioning.homebases WHERE cluster_id = $1 ORDER BY sn"

PAIRED_CIPHERTEXT = "SELECT cluster_id, secret_encrypted FROM provisioning.homebases WHERE sn = $1"

# Pairs only an unpaired homebase: a second cluster cannot take over a pairing.
PAIR = """
UPDATE provisioning.homebases SET cluster_id = $2, paired_at = now()
WHERE sn = $1 AND cluster_id IS NULL
RETURNING sn
"""

# Unpairs only a homebase paired to the calling cluster.
UNPAIR = """
UPDATE provisioning.homebases SET cluster_id = NULL, paired_at = NULL
WHERE sn = $1 AND cluster_id = $2
RETURNING sn
"""

# --- homebase-facing requests ---------------------------------------------------------------

# $3..$5: the avr, bl and msp versions reported by this boot (null: not reported, kept).
RECORD_BOOT = """
UPDATE provisioning.homebases AS h
SET last_boot = now(),
    last_boot_address = $2,
    avr_version = coalesce($3, h.avr_version),
    avr_tags = CASE WHEN $3::text IS NULL THEN h.avr_tags ELSE coalesce(
        (SELECT f.tags FROM provisioning.firmware_images AS f
         WHERE f.component = 'avr' AND f.version = $3), '{}') END,
    bl_version = coalesce($4, h.bl_version),
    msp_version = coalesce($5, h.msp_version)
WHERE h.sn = $1
RETURNING h.sn
"""

# A boot that reports the prepared version of the prepared component completes the upgrade.
COMPLETE_UPGRADE = """
WITH done AS (
    DELETE FROM provisioning.upgrades AS u
    USING provisioning.firmware_images AS f
    WHERE u.sn = $1 AND f.id = u.firmware_id
      AND f.version = CASE f.component WHEN 'avr' THEN $2 WHEN 'bl' THEN $3 ELSE $4 END
    RETURNING u.sn
)
UPDATE provisioning.homebases SET last_upgrade = now() WHERE sn IN (SELECT sn FROM done)
"""

BOOT_ANSWER = """
SELECT h.generation, h.cluster_id,
       host(c.http_address) AS http_address, c.http_port,
       host(c.mqtt_address) AS mqtt_address, c.mqtt_port,
       f.component, f.version, f.size, f.sha256
FROM provisioning.homebases AS h
LEFT JOIN provisioning.clusters AS c ON c.id = h.cluster_id
LEFT JOIN provisioning.upgrades AS u ON u.sn = h.sn
LEFT JOIN provisioning.firmware_images AS f ON f.id = u.firmware_id
WHERE h.sn = $1
"""

PREPARED_IMAGE = """
SELECT h.generation, f.component, f.version, f.sha256, f.image
FROM provisioning.homebases AS h
LEFT JOIN provisioning.upgrades AS u ON u.sn = h.sn
LEFT JOIN provisioning.firmware_images AS f ON f.id = u.firmware_id
WHERE h.sn = $1
"""

# --- CoAP devices ---------------------------------------------------------------------------

COAP_DATA_SERVER = """
SELECT host(data_server_address) AS address, data_server_port AS port
  FROM provisioning.coap_devices WHERE sn = $1"""

COAP_CONFIG = """
UPDATE provisioning.coap_devices SET last_config = now()
WHERE sn = $1
RETURNING host(data_server_address) AS address, data_server_port AS port
"""
