-- The bill (docs/data-api.md#the-bill): a tariff period's daily charge, and streams their owner
-- marks as sub-meters (listed in a bill, never added to its total), from an instant on like
-- the rest of a stream's configuration.
ALTER TABLE cluster.tariffs
    ADD COLUMN standing double precision NOT NULL DEFAULT 0
        CHECK (standing > '-Infinity' AND standing < 'Infinity');
COMMENT ON COLUMN cluster.tariffs.standing IS 'Charged once per local day of the feed''s time zone whose start (local midnight) lies in the period, in the cost streams'' currency; 0: none.';

ALTER TABLE cluster.stream_configs ADD COLUMN submeter boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN cluster.stream_configs.submeter IS 'A consumption stream that meters part of another (a heat pump behind the main meter): a bill lists it apart and does not add it to its total.';

-- Both setters gain a parameter with a default (the old calls keep their meaning): the old
-- signatures go, or a call with the old arguments would match two functions (IF EXISTS: a new
-- database makes the current ones only after the numbered migrations).
DROP FUNCTION IF EXISTS cluster.set_tariff(bigint, text, timestamptz, time[], double precision[], text, double precision);
DROP FUNCTION IF EXISTS cluster.set_stream_config(bigint, timestamptz, text, text, text);
