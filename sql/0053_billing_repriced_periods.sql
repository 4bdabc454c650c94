-- Billing's record of what its setters changed, which the engine reads (docs/architecture.md#sql):
-- cluster.set_tariff and cluster.set_prices (sql/functions/19_billing_tariffs_and_prices.sql)
-- insert the periods of a feed whose money changed, and the engine's trigger on this table
-- (sql/functions/23_engine_repricing.sql) queues their recomputation in the same transaction and
-- keeps nothing: billing calls no engine function, so the engine (which prices buckets with
-- billing's functions) and billing do not call each other.
CREATE TABLE cluster.repriced_periods (
    feed_id bigint NOT NULL REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    period  tstzmultirange NOT NULL
);
COMMENT ON TABLE cluster.repriced_periods IS
    'Periods of a feed whose price changed (a tariff or an area''s prices set), written by billing''s setters; the engine''s trigger queues their recomputation as they are inserted and stores no row, so the table stays empty.';
