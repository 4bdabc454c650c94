-- The cluster's catalogue of contracts (billing/contracts.py, docs/billing.md#contracts): the
-- terms of `admin tariffs set` as one JSON object, as a supplier publishes its offers, for
-- households to compare with their own (issue 61). Checked by the application before it is
-- stored; read by any user (GET /contracts).
CREATE TABLE cluster.contracts (
    name     text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    contract jsonb NOT NULL CHECK (jsonb_typeof(contract) = 'object'),
    added_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE cluster.contracts IS
    'Contracts a supplier offers, by name: the terms of admin tariffs set as JSON (price or bands, area and factor, standing charge, VAT, floor, cap, holidays, kWh per m³, an export part). docs/billing.md#contracts.';
COMMENT ON COLUMN cluster.contracts.name IS 'The contract''s name in the catalogue: letters, digits, . _ -.';
COMMENT ON COLUMN cluster.contracts.contract IS 'Its terms, as billing/contracts.py::Contract encodes them.';
COMMENT ON COLUMN cluster.contracts.added_at IS 'When it was added (or last replaced).';
