-- The notification rule `prices_published` (notifications/rules.py, docs/notifications.md):
-- once a day per feed on a market tariff, when its area's prices of the next local day are in.
ALTER TABLE cluster.notifications DROP CONSTRAINT notifications_rule_check;
ALTER TABLE cluster.notifications ADD CONSTRAINT notifications_rule_check CHECK (rule IN (
    'homebase_offline', 'homebase_online', 'channel_silent', 'power_change',
    'subscription_ending', 'unusual_consumption', 'processing_parked', 'meter_fault',
    'prices_published'));

ALTER TABLE cluster.parked_notification_rules DROP CONSTRAINT parked_notification_rules_rule_check;
ALTER TABLE cluster.parked_notification_rules ADD CONSTRAINT parked_notification_rules_rule_check
    CHECK (rule IN ('homebase_offline', 'channel_silent', 'power_change', 'subscription_ending',
                    'unusual_consumption', 'prices_published'));
