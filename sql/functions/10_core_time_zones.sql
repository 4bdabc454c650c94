-- Functions of the cluster schema that its tables' checks use.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

CREATE OR REPLACE FUNCTION cluster.is_time_zone(name text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    -- The cached names first (an index look-up); the tz database itself only for a name the
    -- cache lacks: a typo, or a zone added to the server's tz database since (0033).
    SELECT EXISTS (SELECT 1 FROM cluster.time_zone_names t WHERE t.name = is_time_zone.name)
        OR EXISTS (SELECT 1 FROM pg_timezone_names WHERE pg_timezone_names.name = is_time_zone.name)
$$;
COMMENT ON FUNCTION cluster.is_time_zone(text) IS 'True for names of the IANA time zone database.';
