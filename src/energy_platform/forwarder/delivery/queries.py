"""Named SQL of the delivery loop; the selection and aggregation live in sql/0006_forwarder.sql.

The loop works on many customers per statement: it claims the due ones, builds their batches
with one query, and records many outcomes in one transaction.
"""

# Due customers: a pending batch whose retry time has come, or no pending batch and the next
# interval ended (plus the settle time). Locked while their batches are made. A batch in flight
# is leased (next_attempt_at in the future), so it is not due; a parked customer never is.
# `upto`, the snapshot a new batch reaches to, is taken by this statement: every transaction
# visible in it has committed, so the queries after it see all the points it covers.
CLAIM = """
SELECT s.customer_id, s.delivered_to, s.batch_id, s.batch_from, s.batch_to, s.batch_mode,
       s.batch_body, s.attempts, s.seen::text AS seen, s.batch_seen::text AS batch_seen,
       forwarder.interval_end(s.delivered_to, c.interval_minutes) AS next_end,
       pg_current_snapshot()::text AS upto,
       c.interval_minutes, c.url, c.username, c.password, c.mode
  FROM forwarder.delivery_state s
  JOIN forwarder.configs c USING (customer_id)
 WHERE CASE WHEN s.batch_id IS NOT NULL
            THEN s.next_attempt_at IS NULL OR s.next_attempt_at <= clock_timestamp()
            ELSE forwarder.interval_end(s.delivered_to, c.interval_minutes)
                 + make_interval(secs => $1) <= clock_timestamp() END
   AND NOT EXISTS (SELECT 1 FROM forwarder.parked_deliveries p WHERE p.customer_id = s.customer_id)
 ORDER BY coalesce(s.batch_to, forwarder.interval_end(s.delivered_to, c.interval_minutes)),
          s.customer_id
 LIMIT $2
   FOR UPDATE OF s SKIP LOCKED"""

# The points of many batches at once, each batch's values as parallel arrays. `all`: (customer,
# seen, upto), the points stored since the previous batch, in storage order. `aggregated`:
# (customer, from, to, interval seconds, seen, upto).
ALL_POINTS = """
SELECT p.customer_id, s.homebase_sn, s.channel, s.device, s.medium, s.idx, s.obis,
       NULL::text AS method, floor(extract(epoch FROM p.ts))::bigint AS t, p.value
  FROM forwarder.new_points($1, $2, $3) p
  JOIN forwarder.streams s ON s.id = p.stream_id
 ORDER BY p.customer_id, p.stored_by, p.ts, s.homebase_sn, s.channel, s.device, s.medium, s.idx,
          s.obis"""

AGGREGATED_POINTS = """
SELECT a.customer_id, s.homebase_sn, s.channel, s.device, a.medium, s.idx, s.obis, a.method,
       floor(extract(epoch FROM a.ts))::bigint AS t, a.value
  FROM forwarder.batch_aggregates($1, $2, $3, $4, $5, $6) a
  JOIN forwarder.streams s ON s.id = a.stream_id
 ORDER BY a.customer_id, a.ts, s.homebase_sn, s.channel, s.device, s.medium, s.idx, s.obis"""

# Customers whose points fail on data (forwarder.parked_deliveries). One deleted meanwhile (its
# outcome failed the log's foreign key) has nothing left to park.
PARK = """
INSERT INTO forwarder.parked_deliveries (customer_id, sqlstate, error)
SELECT d.customer_id, d.sqlstate, d.error
  FROM unnest($1::bigint[], $2::text[], $3::text[]) AS d(customer_id, sqlstate, error)
 WHERE EXISTS (SELECT 1 FROM forwarder.customers c WHERE c.id = d.customer_id)
ON CONFLICT (customer_id) DO NOTHING"""

# Persisted (durably) before the first attempt: a restart sends the same id and points.
START_BATCHES = """
UPDATE forwarder.delivery_state s
   SET batch_id = d.batch_id, batch_from = s.delivered_to, batch_to = d.ts_to,
       batch_mode = d.mode, batch_seen = d.upto::pg_snapshot, batch_body = NULL, attempts = 0,
       next_attempt_at = clock_timestamp() + make_interval(secs => $6)
  FROM unnest($1::bigint[], $2::uuid[], $3::timestamptz[], $4::text[], $5::text[])
       AS d(customer_id, batch_id, ts_to, mode, upto)
 WHERE s.customer_id = d.customer_id AND s.batch_id IS NULL"""

# A claimed batch is leased: no other claim takes it until its attempt must have ended (it is
# recorded earlier, or it was cut short by a crash and goes out again after the lease).
LEASE = """
UPDATE forwarder.delivery_state
   SET next_attempt_at = clock_timestamp() + make_interval(secs => $2)
 WHERE customer_id = ANY ($1::bigint[]) AND batch_id IS NOT NULL"""

# The outcomes of many attempts, with the cursors they move, in one transaction.
LOG_ATTEMPTS = """
INSERT INTO forwarder.delivery_log (customer_id, batch_id, batch_from, batch_to, attempt,
                                    outcome, status, error, points, attempted_at, duration_ms)
SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::timestamptz[], $4::timestamptz[], $5::int[],
                     $6::text[], $7::int[], $8::text[], $9::int[], $10::timestamptz[],
                     $11::float8[])"""

FINISH_BATCHES = """
UPDATE forwarder.delivery_state s
   SET delivered_to = s.batch_to, seen = s.batch_seen, batch_id = NULL, batch_from = NULL,
       batch_to = NULL, batch_mode = NULL, batch_seen = NULL, batch_body = NULL, attempts = 0,
       next_attempt_at = NULL
  FROM unnest($1::bigint[], $2::uuid[]) AS d(customer_id, batch_id)
 WHERE s.customer_id = d.customer_id AND s.batch_id = d.batch_id"""

RETRY_BATCHES = """
UPDATE forwarder.delivery_state s
   SET attempts = s.attempts + 1, batch_body = coalesce(s.batch_body, d.body),
       next_attempt_at = clock_timestamp() + make_interval(secs => d.backoff)
  FROM unnest($1::bigint[], $2::uuid[], $3::bytea[], $4::float8[])
       AS d(customer_id, batch_id, body, backoff)
 WHERE s.customer_id = d.customer_id AND s.batch_id = d.batch_id"""

# The outcome's commit need not wait for the disk: if a crash loses it, the cursor has not
# moved and the same batch goes out again, which at-least-once allows. START_BATCHES (the id
# and snapshot) is committed durably, before the first attempt.
RELAXED_COMMIT = "SET LOCAL synchronous_commit = off"

# The batch queries take arrays whose length (the customers due) varies from one claim to the
# next; a generic plan, which cannot see it, was measured 100x slower than a custom one.
CUSTOM_PLANS = "SET LOCAL plan_cache_mode = force_custom_plan"

# The batch queries cost enough for the planner to JIT-compile them, which was measured to add
# ~190 ms per query here and to save nothing: they run over a few thousand rows.
NO_JIT = "SET LOCAL jit = off"
