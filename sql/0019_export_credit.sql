-- Feed-in credit (docs/engine.md#credit): a tariff of medium `export` prices each export
-- stream's energy into a credit stream beside it.
ALTER TABLE cluster.tariffs DROP CONSTRAINT tariffs_medium_check;
ALTER TABLE cluster.tariffs ADD CONSTRAINT tariffs_medium_check
    CHECK (medium IN ('power', 'gas', 'water', 'export'));
COMMENT ON COLUMN cluster.tariffs.medium IS 'power (price per kWh), gas or water (price per m³): what consumption costs; export (per kWh): what energy fed in earns.';
