-- Every meter counts (docs/engine.md#what-is-processed): energy registers (media 22, 23) and
-- export power (13) are processed, each processed stream says what it is (quantity), and a
-- tariff register's stream is told apart from a phase's.

-- How the engine turns a raw medium into values, and which quantity its streams have.
ALTER TABLE cluster.processable_media
    ADD COLUMN method text NOT NULL DEFAULT 'integral'
        CHECK (method IN ('integral', 'register', 'reading', 'mean')),
    ADD COLUMN quantity text NOT NULL DEFAULT 'consumption'
        CHECK (quantity IN ('consumption', 'export', 'mean')),
    ADD COLUMN index_label text NOT NULL DEFAULT ', index ';
COMMENT ON COLUMN cluster.processable_media.method IS 'integral: W samples integrated to Wh; register: an energy register (Wh), its rise; reading: a meter reading, its step counted at the later reading; mean: the time-weighted mean.';
COMMENT ON COLUMN cluster.processable_media.quantity IS 'What the processed streams made from this medium are: consumption, export or mean.';
COMMENT ON COLUMN cluster.processable_media.index_label IS 'Written before an index in default titles: '', L'' (phases), '', tariff '', '', index ''.';
UPDATE cluster.processable_media SET method = 'integral', index_label = ', L' WHERE medium_id IN (1, 12);
UPDATE cluster.processable_media SET method = 'reading' WHERE medium_id IN (7, 8);
UPDATE cluster.processable_media SET method = 'mean', quantity = 'mean' WHERE medium_id = 5;
INSERT INTO cluster.processable_media (medium_id, medium, title, unit, method, quantity, index_label) VALUES
    (13, 'power', 'Electricity export', 'Wh', 'integral', 'export', ', L'),
    (22, 'power', 'Electricity', 'Wh', 'register', 'consumption', ', tariff '),
    (23, 'power', 'Electricity export', 'Wh', 'register', 'export', ', tariff ');

-- A processed stream's quantity replaces the cost flag, and a tariff register's stream (raw
-- index n of medium 22 or 23: 1-0:1.8.n) has tariff n instead of an index, so that the phases
-- and the tariffs of one meter never share a stream.
ALTER TABLE cluster.streams
    ADD COLUMN quantity text CHECK (quantity IN ('consumption', 'export', 'cost', 'credit', 'mean')),
    ADD COLUMN tariff integer CHECK (tariff >= 1);
UPDATE cluster.streams s
   SET quantity = CASE WHEN s.cost THEN 'cost'
                       WHEN EXISTS (SELECT FROM cluster.stream_configs c
                                     WHERE c.stream_id = s.id AND c.medium = 'temperature')
                       THEN 'mean' ELSE 'consumption' END
 WHERE s.type = 'processed';
ALTER TABLE cluster.streams
    ADD CONSTRAINT streams_quantity_is_processed CHECK ((quantity IS NOT NULL) = (type = 'processed')),
    ADD CONSTRAINT streams_tariff_is_processed CHECK (tariff IS NULL OR (type = 'processed' AND idx IS NULL AND NOT combined));
DROP INDEX cluster.streams_processed_identity;
ALTER TABLE cluster.streams DROP COLUMN cost;
CREATE UNIQUE INDEX streams_processed_identity ON cluster.streams (feed_id, channel, idx, tariff, combined, quantity)
    NULLS NOT DISTINCT WHERE type = 'processed';
COMMENT ON COLUMN cluster.streams.quantity IS 'processed: consumption (energy or volume used), export (energy fed in), cost (of the consumption), credit (for the export) or mean (temperature); null for raw and system streams.';
COMMENT ON COLUMN cluster.streams.tariff IS 'processed: the tariff register (1-0:1.8.n and 2.8.n: raw medium 22 or 23, index n) the stream counts; null otherwise.';
