-- One tenant never stops another (issue 46, docs/decisions.md): a notification rule whose
-- statement fails on one feed's data (SQLSTATE class 22 or 23) skips that feed, and the
-- forwarder skips a customer whose batch fails on its data, while the rest go on. What was set
-- aside waits here until an operator repairs the data and retries it (`admin notifications
-- retry FEED`, `admin customers retry CUSTOMER`; docs/operations.md).
CREATE TABLE cluster.parked_notification_rules (
    rule     text NOT NULL CHECK (rule IN ('homebase_offline', 'channel_silent', 'power_change',
                                           'subscription_ending', 'unusual_consumption')),
    feed_id  bigint NOT NULL REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    sqlstate text NOT NULL,
    error    text NOT NULL,
    since    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rule, feed_id)
);
COMMENT ON TABLE cluster.parked_notification_rules IS 'A rule that failed on one feed''s data: the rules skip this feed for it until `admin notifications retry` deletes the row (docs/notifications.md#parked-rules).';
COMMENT ON COLUMN cluster.parked_notification_rules.rule IS 'The rule (homebase_offline covers its back-online notice too).';
COMMENT ON COLUMN cluster.parked_notification_rules.feed_id IS 'The feed the rule failed on.';
COMMENT ON COLUMN cluster.parked_notification_rules.sqlstate IS 'SQLSTATE of the error (class 22 or 23), e.g. 22003 for a value out of range.';
COMMENT ON COLUMN cluster.parked_notification_rules.error IS 'The error''s message.';
COMMENT ON COLUMN cluster.parked_notification_rules.since IS 'When the rule was parked for the feed.';

CREATE TABLE forwarder.parked_deliveries (
    customer_id bigint PRIMARY KEY REFERENCES forwarder.customers (id) ON DELETE CASCADE,
    sqlstate    text NOT NULL,
    error       text NOT NULL,
    since       timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE forwarder.parked_deliveries IS 'A customer whose batch failed on its data: no delivery is made for it (its cursor stays, nothing is lost) until `admin customers retry` deletes the row (docs/forwarder.md#parked-customers).';
COMMENT ON COLUMN forwarder.parked_deliveries.customer_id IS 'The customer.';
COMMENT ON COLUMN forwarder.parked_deliveries.sqlstate IS 'SQLSTATE of the error (class 22 or 23), e.g. 22003 for a value out of range.';
COMMENT ON COLUMN forwarder.parked_deliveries.error IS 'The error''s message.';
COMMENT ON COLUMN forwarder.parked_deliveries.since IS 'When the customer''s deliveries were parked.';
