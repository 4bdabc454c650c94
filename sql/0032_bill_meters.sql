-- The bill and the overview read the streams a bill counts from one function,
-- cluster.bill_meters (sql/functions/95_billing_bills.sql); the overview's own copy goes.
DROP FUNCTION IF EXISTS cluster.overview_meters(bigint);
