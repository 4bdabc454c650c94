-- Market prices (docs/engine.md#prices): a price area's prices per slot (15, 30 or 60 minutes,
-- or any multiple of 90 s), and tariffs that add a factor times the area's price to their bands:
-- price = factor x area price + band price. Existing tariffs name no area: their bands alone, as
-- before.
CREATE TABLE cluster.price_areas (
    area       text PRIMARY KEY CHECK (area ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE cluster.price_areas IS 'Market price areas (a bidding zone such as DE-LU): tariffs name one to follow its prices.';
COMMENT ON COLUMN cluster.price_areas.area IS 'The area''s name: letters, digits, _ . - (at most 32).';
COMMENT ON COLUMN cluster.price_areas.created_at IS 'When its first prices were set.';

CREATE TABLE cluster.prices (
    area  text NOT NULL REFERENCES cluster.price_areas (area) ON DELETE CASCADE,
    slot  tstzrange NOT NULL CHECK (
              NOT isempty(slot) AND NOT lower_inf(slot) AND NOT upper_inf(slot)
              AND lower_inc(slot) AND NOT upper_inc(slot)
              AND (date_part('epoch', upper(slot)) - date_part('epoch', lower(slot)))::numeric % 90 = 0),
    price double precision NOT NULL CHECK (price > '-Infinity' AND price < 'Infinity'),
    EXCLUDE USING gist (area WITH =, slot WITH &&)
);
COMMENT ON TABLE cluster.prices IS 'Prices of an area per slot; slots never overlap. A slot prices every 90 s bucket whose start lies in it. Set them with cluster.set_prices, which reprices the buckets they cover.';
COMMENT ON COLUMN cluster.prices.area IS 'The price area.';
COMMENT ON COLUMN cluster.prices.slot IS 'The slot [start, end): a multiple of 90 s long.';
COMMENT ON COLUMN cluster.prices.price IS 'Price per kWh in the cost streams'' currency (imports convert per-MWh prices); may be negative.';

ALTER TABLE cluster.tariffs
    ADD COLUMN area text REFERENCES cluster.price_areas (area),
    ADD COLUMN factor double precision NOT NULL DEFAULT 1 CHECK (factor > '-Infinity' AND factor < 'Infinity');
COMMENT ON COLUMN cluster.tariffs.area IS 'A dynamic tariff''s price area: price = factor x area price + band price; null: the bands alone (fixed or time-of-use).';
COMMENT ON COLUMN cluster.tariffs.factor IS 'What the area''s price is multiplied by (VAT: 1.19); 1 without an area.';

-- set_tariff gains the area and the factor (defaults keep the old calls' meaning): the old
-- signature goes, or a call with five arguments would match both.
DROP FUNCTION cluster.set_tariff(bigint, text, timestamptz, time[], double precision[]);
