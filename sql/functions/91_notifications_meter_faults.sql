-- The meter_fault rule (docs/notifications.md): the engine records each meter fault it finds in
-- cluster.meter_faults, once (engine/processing.py's FAULTS, sql/0030_meter_faults.sql), and
-- this trigger tells the feed's owner of each new one, in the same transaction: the engine
-- writes no text, notifications writes all of it. Set-based: one INSERT per statement, over the
-- rows it recorded (a row that was there already is in no transition table: told once). A feed
-- its owner does not see (cluster.visible_feeds) tells no one.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

CREATE OR REPLACE FUNCTION cluster.meter_faults_tell() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content)
    SELECT f.owner_id, f.id, 'meter_fault', r.stream_id || ':' || r.kind || ':'
               || date_part('epoch', r.ts)::bigint,
           CASE r.kind WHEN 'glitch' THEN 'Meter reading ignored'
                       WHEN 'reset' THEN 'Meter reset'
                       ELSE 'Meter jump ignored' END,
           format(CASE r.kind
                  WHEN 'glitch' THEN
                      '<p>The meter on channel %1$s of <b>%2$s</b> read %5$s %3$s at %4$s, below'
                      || ' the %7$s %3$s it read before (%6$s) and the %9$s %3$s after (%8$s):'
                      || ' that reading was ignored.</p>'
                  WHEN 'reset' THEN
                      '<p>The meter on channel %1$s of <b>%2$s</b> went back from %7$s %3$s'
                      || ' (%6$s) to %5$s %3$s (%4$s) and stayed there: a reset or a new meter.'
                      || ' That step counts 0, and counting goes on from the new reading.</p>'
                  ELSE
                      '<p>The meter on channel %1$s of <b>%2$s</b> jumped from %7$s %3$s (%6$s)'
                      || ' to %5$s %3$s (%4$s), faster than it can count: a new meter or a wrong'
                      || ' reading. That step counts 0, and counting goes on from the new'
                      || ' reading.</p>' END,
                  s.channel, cluster.html_escape(coalesce(t.title, '')),
                  cluster.html_escape(m.unit),
                  cluster.html_escape(cluster.local_time(r.ts, t.timezone)), r.value,
                  cluster.html_escape(cluster.local_time(r.before_ts, t.timezone)),
                  r.before_value,
                  cluster.html_escape(cluster.local_time(r.after_ts, t.timezone)),
                  r.after_value)
      FROM recorded r
      JOIN cluster.streams s ON s.id = r.stream_id
      JOIN cluster.processable_media m ON m.medium_id = s.medium
      JOIN cluster.visible_feeds f ON f.id = s.feed_id
      LEFT JOIN cluster.current_feed_titles t ON t.feed_id = f.id;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION cluster.meter_faults_tell() IS
    'Trigger of cluster.meter_faults: tell each new fault''s feed owner (rule meter_fault), once per reading and kind.';

CREATE OR REPLACE TRIGGER meter_faults_tell AFTER INSERT ON cluster.meter_faults
    REFERENCING NEW TABLE AS recorded
    FOR EACH STATEMENT EXECUTE FUNCTION cluster.meter_faults_tell();
