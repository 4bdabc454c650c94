-- Functions of the cluster schema that its tables' checks use.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

CREATE OR REPLACE FUNCTION cluster.is_time_zone(name text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE pg_timezone_names.name = is_time_zone.name)
$$;
COMMENT ON FUNCTION cluster.is_time_zone(text) IS 'True for names of the IANA time zone database.';
