-- Issue 59 item 7: an M-Bus device's type belongs to the feed it was seen for, and to the
-- device that read it. Keyed by homebase alone, a homebase's last types outlived its feed and
-- the next owner of the homebase inherited them; without the device, two readers on one channel
-- shared one type. feed_id is NULL for a homebase registered with the forwarder (no feed): the
-- key holds NULL as one value (NULLS NOT DISTINCT); a feed's deletion finds its rows through
-- an index of their own.
ALTER TABLE cluster.mbus_devices
    ADD COLUMN feed_id bigint REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    ADD COLUMN device integer;

-- Types kept so far: their feed is the homebase's current one, their device the one whose
-- system stream holds the type (the only one that sent it); a type no stream shows is dropped
-- (the next record that carries it brings it back).
UPDATE cluster.mbus_devices m
   SET feed_id = f.id,
       device = (SELECT s.device FROM cluster.streams s
                  WHERE s.feed_id = f.id AND s.type = 'system' AND s.channel = m.channel
                    AND s.source LIKE 'obis:0-_:24.1.0'
                  ORDER BY s.id LIMIT 1)
  FROM cluster.feeds f
 WHERE f.homebase_sn = m.homebase_sn;
DELETE FROM cluster.mbus_devices WHERE device IS NULL;

ALTER TABLE cluster.mbus_devices
    ALTER COLUMN device SET NOT NULL,
    DROP CONSTRAINT mbus_devices_pkey;
CREATE UNIQUE INDEX mbus_devices_key
    ON cluster.mbus_devices (homebase_sn, device, channel, feed_id) NULLS NOT DISTINCT;
CREATE INDEX mbus_devices_feed ON cluster.mbus_devices (feed_id);

COMMENT ON COLUMN cluster.mbus_devices.feed_id IS 'The feed the homebase sent it for (deleted with it); NULL while the homebase is registered with the forwarder.';
COMMENT ON COLUMN cluster.mbus_devices.device IS 'The device ID of the reader that sent it (docs/devices.md#device-ids).';
