-- Weekday bands priced nothing in the engine on a tariff without public holidays: the day-kind
-- rule (cluster.band_holds) compared a weekday with `day = ANY (NULL)`, which is NULL, so no
-- weekday band held and weekday buckets got no cost or credit point (sql/functions/
-- 18_billing_pricing.sql now has one NULL-proof rule, cluster.is_weekend_day). This migration
-- queues the engine to recompute, over those tariffs' periods, every feed that had such a
-- tariff, and records what it queued in cluster.repairs (docs/operations.md#repairs).

-- The bill's row gains the first bucket without money (cluster.feed_bill, re-created by
-- sql/functions/95_billing_bills.sql right after the migrations).
DROP FUNCTION IF EXISTS cluster.feed_bill(bigint, date, date, timestamptz);

CREATE TABLE cluster.repairs (
    migration integer NOT NULL,
    feed_id   bigint NOT NULL REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    period    tstzmultirange NOT NULL,
    queued_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (migration, feed_id)
);
COMMENT ON TABLE cluster.repairs IS
    'What a migration that repairs stored results queued for the engine: one row per feed it touched (docs/operations.md#repairs).';
COMMENT ON COLUMN cluster.repairs.migration IS 'The migration''s number (schema_migrations.version).';
COMMENT ON COLUMN cluster.repairs.feed_id IS 'The feed whose processed points were queued for recomputation.';
COMMENT ON COLUMN cluster.repairs.period IS 'The periods queued (cut by the engine to the feed''s data).';
COMMENT ON COLUMN cluster.repairs.queued_at IS 'When the migration queued them.';

-- The periods of tariffs with weekday bands and no holidays, per feed. The engine's functions
-- are called only when such a tariff exists: a new database runs this before they are defined,
-- and PL/pgSQL resolves a call when it first runs it.
DO $$
DECLARE
    affected record;
BEGIN
    FOR affected IN
        SELECT t.feed_id, range_agg(t.validity) AS period
          FROM cluster.tariffs t
         WHERE t.holidays IS NULL
           AND EXISTS (SELECT FROM cluster.tariff_bands b
                        WHERE b.tariff_id = t.id AND b.days = 'weekday')
         GROUP BY t.feed_id
    LOOP
        PERFORM cluster.engine_invalidate_feed(affected.feed_id, affected.period);
        INSERT INTO cluster.repairs (migration, feed_id, period)
        VALUES (34, affected.feed_id, affected.period);
    END LOOP;
END
$$;
