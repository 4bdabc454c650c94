-- cluster.bill_days and cluster.bill_meters are named for what they are, since the overview, the
-- baseload and the plans read them too: cluster.feed_local_days and
-- cluster.feed_metered_streams (sql/functions/95_billing_bills.sql, which makes them after
-- this). The former names go; nothing but the definitions called them.
DROP FUNCTION IF EXISTS cluster.bill_days(bigint, date, date);
DROP FUNCTION IF EXISTS cluster.bill_meters(bigint);
