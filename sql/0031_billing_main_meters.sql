-- Issue 49 (one supply counted once): a consumption total marked as its medium's main meter,
-- from an instant on like the rest of a stream's configuration. Where a medium has a main
-- meter, a bill adds only main meters and lists its other totals as sub-meters
-- (docs/billing.md#the-bill). Existing configurations mark none: their bills are as before.
ALTER TABLE cluster.stream_configs
    ADD COLUMN main boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT stream_configs_main_or_submeter CHECK (NOT (main AND submeter));
COMMENT ON COLUMN cluster.stream_configs.main IS 'A consumption total that is its medium''s main meter (the utility''s meter): where a medium has one, a bill adds only main meters and lists the feed''s other totals of that medium as sub-meters. Never also a sub-meter.';

-- The setter gains a parameter with a default (the old calls keep their meaning): the old
-- signature goes, or a call with the old arguments would match two functions (IF EXISTS: a new
-- database makes the current one only after the numbered migrations).
DROP FUNCTION IF EXISTS cluster.set_stream_config(bigint, timestamptz, text, text, text, boolean);
DROP FUNCTION IF EXISTS cluster.set_stream_config(bigint, timestamptz, text, text, text, boolean,
                                                  double precision);

-- The bill names the totals it adds together without a main meter (its warnings): its result
-- gains columns, which CREATE OR REPLACE cannot do; 95_billing_bills.sql makes it again.
DROP FUNCTION IF EXISTS cluster.feed_bill(bigint, date, date, timestamptz);
