-- The event log is bounded (issue 59): the engine's retention rounds delete the events older
-- than EP_NOTIFICATIONS_EVENTS_DAYS by arrival, a batch at a time, through this index (without
-- it each batch would scan the table, about 86,000 rows a day for one device at its limit).
-- On an expression of its own (UTC wall time), which only retention's filter names: on
-- received_at itself, the power-change rule's filter (received_at < now() - 1 s, true of nearly
-- every row) was planned as a bitmap scan of the whole log instead of the id range it reads.
CREATE INDEX device_events_arrival ON cluster.device_events ((received_at AT TIME ZONE 'UTC'));
COMMENT ON INDEX cluster.device_events_arrival IS
    'Retention finds the events older than EP_NOTIFICATIONS_EVENTS_DAYS by arrival (UTC).';
COMMENT ON TABLE cluster.device_events IS 'Events sent by CoAP devices (POWER_CHANGE); the notification rules read them. Kept EP_NOTIFICATIONS_EVENTS_DAYS after they arrived (90), once the power-change rule has read them.';
