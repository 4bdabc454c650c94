-- Messages ingest refused for a reason inside them (envelope, JSON, a field, a range, text,
-- size): kept for operators and analysts, then deleted after EP_INGEST_DEAD_LETTER_DAYS by
-- ingest itself (docs/ingest.md).

CREATE TABLE cluster.dead_letters (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    received_at timestamptz NOT NULL DEFAULT now(),
    transport   text NOT NULL CHECK (transport IN ('mqtt', 'coap')),
    sn          text,
    topic       text NOT NULL,
    cause       text NOT NULL,
    detail      text NOT NULL,
    sealed      boolean NOT NULL,
    size        integer NOT NULL,
    payload     bytea NOT NULL CHECK (octet_length(payload) <= 65536)
);
COMMENT ON TABLE cluster.dead_letters IS 'Messages ingest dropped for a reason inside them, one row each; acknowledged, never retried. Rows older than EP_INGEST_DEAD_LETTER_DAYS are deleted by ingest.';
COMMENT ON COLUMN cluster.dead_letters.id IS 'Row id, increasing in arrival order.';
COMMENT ON COLUMN cluster.dead_letters.received_at IS 'When ingest judged the message.';
COMMENT ON COLUMN cluster.dead_letters.transport IS 'mqtt (homebase batch) or coap (device record).';
COMMENT ON COLUMN cluster.dead_letters.sn IS 'Serial number from the topic or CoAP path; null when the topic named none.';
COMMENT ON COLUMN cluster.dead_letters.topic IS 'MQTT topic (without the test prefix) or CoAP path.';
COMMENT ON COLUMN cluster.dead_letters.cause IS 'Why it was dropped, as counted in ep_ingest_dropped_total{cause}: undecryptable, invalid_json, invalid_record, bad_timestamp, not_finite, not_utf8, too_large, too_deep, unsupported_format, forbidden_field, unknown_sn, bad_topic.';
COMMENT ON COLUMN cluster.dead_letters.detail IS 'The decoder''s message: what was wrong and where (a JSON path).';
COMMENT ON COLUMN cluster.dead_letters.sealed IS 'true: payload is the envelope as received (it did not decrypt); false: the decrypted JSON.';
COMMENT ON COLUMN cluster.dead_letters.size IS 'Size of the whole payload in bytes (payload keeps the first 64 KiB).';
COMMENT ON COLUMN cluster.dead_letters.payload IS 'The first 64 KiB of the payload; convert_from(payload, ''UTF8'') shows JSON when sealed is false.';
CREATE INDEX dead_letters_received ON cluster.dead_letters (received_at);
CREATE INDEX dead_letters_sn ON cluster.dead_letters (sn, received_at);
-- The view cluster.dead_letter_causes is defined in sql/functions/90_views.sql.
