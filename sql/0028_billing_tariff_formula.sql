-- The tariff formula as contracts write it (docs/billing.md#tariffs): VAT on every part, a
-- floor and a cap, bands by kind of day with a country's public holidays as weekend days,
-- standing charges per month, gas priced per kWh; and heat meters (medium 9) processed and
-- billed like gas (docs/engine.md#what-is-processed). Existing tariffs keep their meaning:
-- VAT 0, no floor or cap, every band on every day, charges per day, gas per m³.
ALTER TABLE cluster.tariffs
    ADD COLUMN vat double precision NOT NULL DEFAULT 0 CHECK (vat >= 0 AND vat < 'Infinity'),
    ADD COLUMN floor double precision CHECK (floor > '-Infinity' AND floor < 'Infinity'),
    ADD COLUMN cap double precision CHECK (cap > '-Infinity' AND cap < 'Infinity'),
    ADD COLUMN standing_per text NOT NULL DEFAULT 'day' CHECK (standing_per IN ('day', 'month')),
    ADD COLUMN holidays text CHECK (holidays ~ '^[A-Z]{2}(-[A-Za-z0-9]{1,10})?$'),
    ADD COLUMN holiday_years int4range CHECK (NOT isempty(holiday_years)),
    ADD COLUMN kwh_per_m3 double precision CHECK (kwh_per_m3 > 0 AND kwh_per_m3 < 'Infinity'),
    ADD CONSTRAINT tariffs_floor_below_cap CHECK (floor <= cap),
    ADD CONSTRAINT tariffs_holidays_have_years CHECK ((holidays IS NULL) = (holiday_years IS NULL)),
    ADD CONSTRAINT tariffs_kwh_per_m3_is_gas CHECK (kwh_per_m3 IS NULL OR medium = 'gas');
COMMENT ON COLUMN cluster.tariffs.vat IS 'VAT in percent on every part of the price and on the standing charge: price = clamp((factor x area price + band price) x (1 + vat/100), floor, cap).';
COMMENT ON COLUMN cluster.tariffs.floor IS 'The lowest price per unit after VAT (0: nothing is paid or earned in negative hours, EEG §51); null: none.';
COMMENT ON COLUMN cluster.tariffs.cap IS 'The highest price per unit after VAT; null: none.';
COMMENT ON COLUMN cluster.tariffs.standing_per IS 'day: standing is charged once per local day; month: once per local calendar month, a part of a month by its days covered / the month''s days.';
COMMENT ON COLUMN cluster.tariffs.holidays IS 'The public holidays (country, or country-subdivision, as the holidays package names them: NL, DE-BY) that count as weekend days for the bands; null: none.';
COMMENT ON COLUMN cluster.tariffs.holiday_years IS 'The local years whose holidays are in cluster.tariff_holidays; a bucket outside them has no price until they are (a tariff set again fills them).';
COMMENT ON COLUMN cluster.tariffs.kwh_per_m3 IS 'Gas only: kWh per m³ (calorific value x volume correction factor); the bands and area prices are then per kWh and a m³ costs kwh_per_m3 x the price. Null: per m³.';

ALTER TABLE cluster.tariffs DROP CONSTRAINT tariffs_medium_check;
ALTER TABLE cluster.tariffs ADD CONSTRAINT tariffs_medium_check
    CHECK (medium IN ('power', 'gas', 'water', 'heat', 'export'));
COMMENT ON COLUMN cluster.tariffs.medium IS 'power or heat (price per kWh), gas (per m³, or per kWh with kwh_per_m3) or water (per m³): what consumption costs; export (per kWh): what energy fed in earns.';
COMMENT ON COLUMN cluster.tariffs.standing IS 'Charged per local day or per local month (standing_per) of the feed''s time zone, before VAT, in the cost streams'' currency; 0: none.';

-- A band holds on every day, or only on weekdays or weekend days (Saturday, Sunday and the
-- tariff's holidays) of the feed's local date.
ALTER TABLE cluster.tariff_bands
    ADD COLUMN days text NOT NULL DEFAULT 'all' CHECK (days IN ('all', 'weekday', 'weekend'));
ALTER TABLE cluster.tariff_bands DROP CONSTRAINT tariff_bands_pkey;
ALTER TABLE cluster.tariff_bands ADD PRIMARY KEY (tariff_id, days, starts);
COMMENT ON COLUMN cluster.tariff_bands.days IS 'all: every day; weekday or weekend: only on those local dates (weekend: Saturday, Sunday and the tariff''s public holidays). A tariff''s bands are either all of kind all, or cover 00:00 to 24:00 once for weekdays and once for weekends.';

CREATE TABLE cluster.tariff_holidays (
    tariff_id bigint NOT NULL REFERENCES cluster.tariffs (id) ON DELETE CASCADE,
    day       date NOT NULL,
    name      text NOT NULL,
    PRIMARY KEY (tariff_id, day)
);
COMMENT ON TABLE cluster.tariff_holidays IS 'The public holidays of a tariff period''s calendar (tariffs.holidays) in its years (tariffs.holiday_years), from the holidays package when the tariff was set: its bands count them as weekend days.';
COMMENT ON COLUMN cluster.tariff_holidays.tariff_id IS 'The tariff period.';
COMMENT ON COLUMN cluster.tariff_holidays.day IS 'A local date that is a public holiday.';
COMMENT ON COLUMN cluster.tariff_holidays.name IS 'The holiday''s name, as the holidays package gives it.';

-- Heat meters: a reading in kWh, processed like gas, priced by a tariff of medium heat.
ALTER TABLE cluster.processable_media DROP CONSTRAINT processable_media_medium_check;
ALTER TABLE cluster.processable_media ADD CONSTRAINT processable_media_medium_check
    CHECK (medium IN ('power', 'gas', 'water', 'heat', 'temperature'));
COMMENT ON COLUMN cluster.processable_media.medium IS 'Processed medium given to new processed streams: power, gas, water, heat or temperature.';
INSERT INTO cluster.processable_media (medium_id, medium, title, unit, method, quantity)
VALUES (9, 'heat', 'Heat', 'kWh', 'reading', 'consumption')
ON CONFLICT (medium_id) DO NOTHING;

ALTER TABLE cluster.stream_configs DROP CONSTRAINT stream_configs_medium_check;
ALTER TABLE cluster.stream_configs ADD CONSTRAINT stream_configs_medium_check
    CHECK (medium IN ('power', 'gas', 'water', 'heat', 'temperature'));
COMMENT ON COLUMN cluster.stream_configs.medium IS 'power, gas, water, heat or temperature; null: the engine does not process the stream in this period.';

-- set_tariff gains the formula's settings (defaults keep the old calls' meaning): the old
-- signature goes, or a call with its arguments would match both.
DROP FUNCTION IF EXISTS cluster.set_tariff(bigint, text, timestamptz, time[], double precision[], text, double precision, double precision);
-- Functions whose columns change (the bands' day kinds and holidays reach the engine's
-- periods; the bill gains VAT and kWh): sql/functions/ makes them again after this.
DROP FUNCTION IF EXISTS cluster.pricing(bigint, integer, integer, integer, boolean, text, text, tstzmultirange);
DROP FUNCTION IF EXISTS cluster.engine_periods(bigint[], integer[], timestamptz[], timestamptz[]);
DROP FUNCTION IF EXISTS cluster.feed_bill(bigint, date, date, timestamptz);
