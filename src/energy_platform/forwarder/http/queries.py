"""Named SQL of the forwarder API."""

CUSTOMER_BY_DIGEST = "SELECT id FROM forwarder.customers WHERE token_sha256 = $1"

CONFIG = """
SELECT interval_minutes, url, username, password, format, mode, filter_list
  FROM forwarder.configs WHERE customer_id = $1"""
FILTERS = """
SELECT medium, indexes, obis FROM forwarder.config_filters
 WHERE customer_id = $1 ORDER BY position"""
UPSERT_CONFIG = """
INSERT INTO forwarder.configs
       (customer_id, interval_minutes, url, username, password, format, mode, filter_list)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (customer_id) DO UPDATE
   SET interval_minutes = EXCLUDED.interval_minutes, url = EXCLUDED.url,
       username = EXCLUDED.username, password = EXCLUDED.password, format = EXCLUDED.format,
       mode = EXCLUDED.mode, filter_list = EXCLUDED.filter_list, updated_at = now()"""
DELETE_FILTERS = "DELETE FROM forwarder.config_filters WHERE customer_id = $1"
INSERT_FILTER = """
INSERT INTO forwarder.config_filters (customer_id, position, medium, indexes, obis)
VALUES ($1, $2, $3, $4, $5)"""
# A new customer's first interval is the one running now; its storage cursor starts empty
# (seen is null), so every point stored for its registrations is delivered.
START_DELIVERIES = """
INSERT INTO forwarder.delivery_state (customer_id, delivered_to)
VALUES ($1, to_timestamp(floor(extract(epoch FROM now()) / ($2 * 60)) * ($2 * 60)))
ON CONFLICT (customer_id) DO NOTHING"""

REGISTERED = """
SELECT homebase_sn FROM forwarder.registrations WHERE customer_id = $1 ORDER BY homebase_sn"""
REGISTER = """
WITH added AS (
    INSERT INTO forwarder.registrations (homebase_sn, customer_id) VALUES ($1, $2)
    ON CONFLICT (homebase_sn) DO NOTHING
    RETURNING customer_id, registered_at)
SELECT true AS added, customer_id, registered_at FROM added
UNION ALL
SELECT false, customer_id, registered_at FROM forwarder.registrations
 WHERE homebase_sn = $1 AND NOT EXISTS (SELECT 1 FROM added)"""
UNREGISTER = """
DELETE FROM forwarder.registrations WHERE homebase_sn = $1 AND customer_id = $2
RETURNING now() AS unregistered_at"""
GRANTED = """
SELECT EXISTS (SELECT 1 FROM forwarder.grants WHERE customer_id = $1 AND homebase_sn = $2)"""

# The customer's latest batches: the pending one (possibly not attempted yet) and those in the
# delivery log, newest first, each with its last attempt.
DELIVERIES = """
WITH logged AS (
    SELECT DISTINCT ON (l.batch_id) l.batch_id, l.batch_from, l.batch_to, l.points, l.attempt,
           l.outcome, l.status, l.error, l.attempted_at, l.id
      FROM forwarder.delivery_log l
     WHERE l.customer_id = $1
       AND l.batch_id IN (SELECT batch_id FROM forwarder.delivery_log
                           WHERE customer_id = $1 ORDER BY id DESC LIMIT $2 * 8)
     ORDER BY l.batch_id, l.id DESC
)
SELECT s.batch_id, s.batch_from, s.batch_to, l.points, s.attempts, 'pending' AS outcome,
       l.status, l.error, l.attempted_at, s.next_attempt_at, true AS pending
  FROM forwarder.delivery_state s
  LEFT JOIN logged l ON l.batch_id = s.batch_id
 WHERE s.customer_id = $1 AND s.batch_id IS NOT NULL
UNION ALL
SELECT * FROM (
    SELECT l.batch_id, l.batch_from, l.batch_to, l.points, l.attempt, l.outcome, l.status,
           l.error, l.attempted_at, NULL::timestamptz, false
      FROM logged l
     WHERE l.batch_id IS DISTINCT FROM (SELECT batch_id FROM forwarder.delivery_state
                                         WHERE customer_id = $1)
     ORDER BY l.batch_to DESC, l.id DESC
     LIMIT $2) done"""
