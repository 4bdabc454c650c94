-- Provisioning: clusters, homebases and their pairing, firmware images, prepared upgrades and
-- CoAP devices. Written only by the provisioning service and its admin commands; a cluster
-- reaches these rows only through the provisioning HTTP API.

CREATE TABLE provisioning.clusters (
    id            integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    title         text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
    enabled       boolean NOT NULL DEFAULT true,
    http_address  inet NOT NULL,
    http_port     integer NOT NULL CHECK (http_port BETWEEN 1 AND 65535),
    mqtt_address  inet NOT NULL,
    mqtt_port     integer NOT NULL CHECK (mqtt_port BETWEEN 1 AND 65535),
    secret_sha256 bytea NOT NULL UNIQUE CHECK (length(secret_sha256) = 32),
    created_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE provisioning.clusters IS
    'Clusters (servers with the input API) that homebases are paired to; added by an administrator.';
COMMENT ON COLUMN provisioning.clusters.id IS 'Cluster id, as in the homebase details (cluster.id).';
COMMENT ON COLUMN provisioning.clusters.title IS 'Human-readable description of the cluster.';
COMMENT ON COLUMN provisioning.clusters.enabled IS
    'A disabled cluster is refused (403) by the cluster-facing API; its homebases still boot.';
COMMENT ON COLUMN provisioning.clusters.http_address IS 'IP address of the cluster''s HTTP server.';
COMMENT ON COLUMN provisioning.clusters.http_port IS 'Port of the cluster''s HTTP server.';
COMMENT ON COLUMN provisioning.clusters.mqtt_address IS
    'IP address of the cluster''s MQTT broker, where its homebases send data.';
COMMENT ON COLUMN provisioning.clusters.mqtt_port IS 'Port of the cluster''s MQTT broker.';
COMMENT ON COLUMN provisioning.clusters.secret_sha256 IS
    'SHA-256 of the cluster''s authorization secret (X-SvcClusterAuth); the secret itself is not stored.';
COMMENT ON COLUMN provisioning.clusters.created_at IS 'When the administrator added the cluster.';

CREATE TABLE provisioning.homebases (
    sn                text PRIMARY KEY CHECK (sn ~ '^[0-9A-F]{16}$'),
    partner           text NOT NULL CHECK (length(partner) BETWEEN 1 AND 100),
    type              text NOT NULL CHECK (length(type) BETWEEN 1 AND 100),
    generation        smallint NOT NULL CHECK (generation IN (0, 3, 6)),
    secret_encrypted  bytea NOT NULL,
    avr_version       text,
    avr_tags          text[] NOT NULL DEFAULT '{}',
    bl_version        text,
    msp_version       text,
    last_boot         timestamptz,
    last_boot_address inet,
    last_upgrade      timestamptz,
    cluster_id        integer REFERENCES provisioning.clusters (id),
    paired_at         timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((cluster_id IS NULL) = (paired_at IS NULL))
);
CREATE INDEX homebases_cluster_id ON provisioning.homebases (cluster_id);
COMMENT ON TABLE provisioning.homebases IS
    'Homebases (hub devices), each paired with at most one cluster.';
COMMENT ON COLUMN provisioning.homebases.sn IS 'Serial number, 16 characters [0-9A-F].';
COMMENT ON COLUMN provisioning.homebases.partner IS 'Partner (distributor) the homebase belongs to.';
COMMENT ON COLUMN provisioning.homebases.type IS 'Model code.';
COMMENT ON COLUMN provisioning.homebases.generation IS
    'Hardware generation: 0 and 3 fetch firmware over TFTP, 6 over HTTP.';
COMMENT ON COLUMN provisioning.homebases.secret_encrypted IS
    'The 256-byte homebase secret, AES-256-GCM encrypted with the provisioning key: '
    'version byte 1, 12-byte nonce, ciphertext and tag; the SN is the associated data.';
COMMENT ON COLUMN provisioning.homebases.avr_version IS 'AVR firmware version last reported at boot.';
COMMENT ON COLUMN provisioning.homebases.avr_tags IS
    'Tags of the uploaded AVR image whose version the homebase last reported.';
COMMENT ON COLUMN provisioning.homebases.bl_version IS 'Bootloader version last reported at boot.';
COMMENT ON COLUMN provisioning.homebases.msp_version IS 'MSP firmware version last reported at boot.';
COMMENT ON COLUMN provisioning.homebases.last_boot IS
    'Time of the last boot request (the two-hourly heartbeat); alive while within 2 h 15 min.';
COMMENT ON COLUMN provisioning.homebases.last_boot_address IS
    'Address the last boot request came from.';
COMMENT ON COLUMN provisioning.homebases.last_upgrade IS
    'When the homebase last reported the version of a prepared upgrade (upgrade completed).';
COMMENT ON COLUMN provisioning.homebases.cluster_id IS 'Cluster the homebase is paired to; null if unpaired.';
COMMENT ON COLUMN provisioning.homebases.paired_at IS 'When the current pairing was made.';
COMMENT ON COLUMN provisioning.homebases.created_at IS 'When the homebase was added.';

CREATE TABLE provisioning.firmware_images (
    id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    component   text NOT NULL CHECK (component IN ('avr', 'bl', 'msp')),
    version     text NOT NULL CHECK (version ~ '^[0-9A-Za-z._-]{1,32}$'),
    tags        text[] NOT NULL DEFAULT '{}',
    image       bytea NOT NULL CHECK (length(image) > 0),
    size        integer GENERATED ALWAYS AS (length(image)) STORED,
    sha256      bytea NOT NULL CHECK (length(sha256) = 32),
    uploaded_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (component, version)
);
COMMENT ON TABLE provisioning.firmware_images IS
    'Firmware images uploaded by an administrator, one per component and version.';
COMMENT ON COLUMN provisioning.firmware_images.id IS 'Image id.';
COMMENT ON COLUMN provisioning.firmware_images.component IS
    'Which chip the image is for: avr (main firmware), bl (bootloader) or msp.';
COMMENT ON COLUMN provisioning.firmware_images.version IS 'Version string the homebase reports once it runs the image.';
COMMENT ON COLUMN provisioning.firmware_images.tags IS 'Free tags (for example beta), shown for avr images.';
COMMENT ON COLUMN provisioning.firmware_images.image IS 'The image bytes, served as they are.';
COMMENT ON COLUMN provisioning.firmware_images.size IS 'Size of the image in bytes.';
COMMENT ON COLUMN provisioning.firmware_images.sha256 IS 'SHA-256 of the image bytes.';
COMMENT ON COLUMN provisioning.firmware_images.uploaded_at IS 'When the image was uploaded.';

CREATE TABLE provisioning.upgrades (
    sn          text PRIMARY KEY REFERENCES provisioning.homebases (sn) ON DELETE CASCADE,
    firmware_id integer NOT NULL REFERENCES provisioning.firmware_images (id),
    prepared_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE provisioning.upgrades IS
    'Prepared upgrades, at most one per homebase; a row is deleted when the homebase boots with '
    'the prepared version (completed) or when an administrator cancels it.';
COMMENT ON COLUMN provisioning.upgrades.sn IS 'Homebase to upgrade.';
COMMENT ON COLUMN provisioning.upgrades.firmware_id IS 'Image it is to fetch.';
COMMENT ON COLUMN provisioning.upgrades.prepared_at IS 'When the upgrade was prepared.';

CREATE TABLE provisioning.coap_devices (
    sn                  text PRIMARY KEY CHECK (sn ~ '^[0-9A-F]{16}$'),
    data_server_address inet NOT NULL,
    data_server_port    integer NOT NULL CHECK (data_server_port BETWEEN 1 AND 65535),
    last_config         timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE provisioning.coap_devices IS
    'CoAP devices and the data server each is assigned to (GET /config/{sn} answers it).';
COMMENT ON COLUMN provisioning.coap_devices.sn IS 'Serial number, 16 characters [0-9A-F].';
COMMENT ON COLUMN provisioning.coap_devices.data_server_address IS 'IP address of the assigned CoAP data server.';
COMMENT ON COLUMN provisioning.coap_devices.data_server_port IS 'UDP port of the assigned CoAP data server.';
COMMENT ON COLUMN provisioning.coap_devices.last_config IS
    'Time of the last configuration request, which is also the device''s heartbeat.';
COMMENT ON COLUMN provisioning.coap_devices.created_at IS 'When the device was added.';
