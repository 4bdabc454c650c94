-- The forwarder's delivery promise, independent of the points' timestamps (docs/forwarder.md):
-- points are delivered in the order they were stored, tracked by the id of the transaction that
-- stored each one and by database snapshots as cursors; a homebase's points belong to the
-- customer it was registered to when they were stored; customers register only homebases an
-- administrator granted them.

-- 1. Storage order. Each point remembers the transaction that stored it. A snapshot taken by the
-- delivery loop tells exactly which of those transactions had committed: the points of a batch
-- are those visible in the batch's snapshot and not in the previous batch's. Unlike a sequence
-- or a time, this never skips a transaction that commits after a later one.
ALTER TABLE forwarder.points ADD COLUMN stored_by xid8;
COMMENT ON COLUMN forwarder.points.stored_by IS 'Transaction that stored the point (storage order; null for points stored before migration 0008 and already delivered).';
-- Points that may not be delivered yet count as stored now: at least once, never lost.
UPDATE forwarder.points SET stored_by = pg_current_xact_id()
 WHERE received_at >= coalesce((SELECT min(delivered_to) FROM forwarder.delivery_state), now());
ALTER TABLE forwarder.points ALTER COLUMN stored_by SET DEFAULT pg_current_xact_id();
CREATE INDEX forwarder_points_stored_by ON forwarder.points (stream_id, stored_by);

-- 2. Cursors. `seen`: every point visible in it was delivered (or dropped). A pending batch
-- holds the points visible in `batch_seen` and not in `seen`.
ALTER TABLE forwarder.delivery_state DROP COLUMN batch_cutoff;
ALTER TABLE forwarder.delivery_state ADD COLUMN seen pg_snapshot;
ALTER TABLE forwarder.delivery_state ADD COLUMN batch_seen pg_snapshot;
-- Pending batches are made again under the new rules (a new id; their points are still new).
UPDATE forwarder.delivery_state
   SET batch_id = NULL, batch_from = NULL, batch_to = NULL, batch_mode = NULL, batch_body = NULL,
       attempts = 0, next_attempt_at = NULL, seen = pg_current_snapshot();
ALTER TABLE forwarder.delivery_state ADD CONSTRAINT delivery_state_batch_complete CHECK (
    (batch_id IS NULL) = (batch_from IS NULL) AND (batch_id IS NULL) = (batch_to IS NULL)
    AND (batch_id IS NULL) = (batch_mode IS NULL) AND (batch_id IS NULL) = (batch_seen IS NULL));
COMMENT ON COLUMN forwarder.delivery_state.seen IS 'Storage cursor: every point visible in this snapshot was delivered or dropped; null before the first delivery (every point is new).';
COMMENT ON COLUMN forwarder.delivery_state.batch_seen IS 'Snapshot of the pending batch: it holds the points visible in it and not in seen, so a rebuilt body is the same.';

-- 3. Grants: the homebases an administrator gave each customer (admin customers grant|revoke).
CREATE TABLE forwarder.grants (
    customer_id bigint NOT NULL REFERENCES forwarder.customers (id) ON DELETE CASCADE,
    homebase_sn text NOT NULL CHECK (homebase_sn ~ '^[0-9A-F]{16}$'),
    granted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (customer_id, homebase_sn)
);
COMMENT ON TABLE forwarder.grants IS 'Homebases each customer may register (POST /register/{sn} answers 403 for others).';
COMMENT ON COLUMN forwarder.grants.customer_id IS 'The customer.';
COMMENT ON COLUMN forwarder.grants.homebase_sn IS 'Serial number of a homebase the customer may register.';
COMMENT ON COLUMN forwarder.grants.granted_at IS 'When the administrator granted it.';
-- Registrations made before grants existed stay valid.
INSERT INTO forwarder.grants (customer_id, homebase_sn)
SELECT r.customer_id, r.homebase_sn FROM forwarder.registrations r
  JOIN forwarder.customers c ON c.id = r.customer_id
ON CONFLICT DO NOTHING;

-- 4. The time-window batch functions of 0006 give way to the storage-order ones.
DROP FUNCTION forwarder.batch_aggregates(bigint[], timestamptz[], timestamptz[], timestamptz[]);
DROP FUNCTION forwarder.batch_points(bigint[], timestamptz[], timestamptz[], timestamptz[]);
DROP FUNCTION forwarder.batch_streams(bigint[], timestamptz[], timestamptz[], timestamptz[]);
-- Their replacements (storage order) are defined in sql/functions/30_forwarder.sql.
