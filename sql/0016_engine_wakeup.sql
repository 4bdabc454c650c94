-- The engine hears of ingest's work when it is committed, not at its next poll
-- (src/energy_platform/engine/wakeup.py): every statement that queues raw ranges notifies the
-- channel ep_engine_work. PostgreSQL sends the notification when the transaction commits and
-- folds a transaction's identical notifications into one.
CREATE FUNCTION cluster.notify_engine() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ep_engine_work', '');
    RETURN NULL;
END $$;
COMMENT ON FUNCTION cluster.notify_engine() IS
    'Trigger: tell the engine (LISTEN ep_engine_work) that work was queued, at commit.';

CREATE TRIGGER dirty_ranges_notify AFTER INSERT ON cluster.dirty_ranges
    FOR EACH STATEMENT EXECUTE FUNCTION cluster.notify_engine();
