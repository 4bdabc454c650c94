-- The engine's side of billing's record of changed prices (sql/0053_billing_repriced_periods.sql):
-- billing's setters insert the periods of a feed whose money changed into
-- cluster.repriced_periods, and this trigger queues the recomputation of every processed channel
-- of the feed over each period as the row arrives, in the setter's transaction, as the setters
-- once did by calling cluster.engine_invalidate_feed. The row is not stored (a BEFORE trigger
-- returning NULL): the queue is cluster.engine_work, as for every other change.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

CREATE OR REPLACE FUNCTION cluster.engine_repriced() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM cluster.engine_invalidate_feed(NEW.feed_id, NEW.period);
    RETURN NULL;
END $$;
COMMENT ON FUNCTION cluster.engine_repriced() IS
    'Trigger of cluster.repriced_periods: queue the recomputation of the feed''s processed channels over the period billing records; the row is not stored.';

CREATE OR REPLACE TRIGGER repriced_periods_queue BEFORE INSERT ON cluster.repriced_periods
    FOR EACH ROW EXECUTE FUNCTION cluster.engine_repriced();
