-- The keys of the platform's advisory locks, by name: the same list as
-- src/energy_platform/core/db/locks.py (LockKey), which a test holds equal to this one. Python
-- passes its keys as parameters (migrations take theirs before this file exists); SQL takes a
-- lock by name. The numbers never change: processes of two releases must exclude each other.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

-- In pg_locks (locktype advisory) a key used alone shows as classid and objid, its high and low
-- 32 bits, with objsubid 1; a key with a row's id beside it shows as classid, the id as objid,
-- with objsubid 2.
CREATE OR REPLACE FUNCTION cluster.lock_keys() RETURNS TABLE (name text, key bigint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    VALUES ('migrations', 76211498600775),       -- alone, session-level: concurrent migrate runs
           ('notification_rules', 4542573153),   -- alone: one round of the rules at a time
           ('engine_feed', 1162692948),          -- with a feed id: one worker computes a feed
           ('rollup_stream', 1380928588),        -- with a stream id: one worker per stream's rollups
           ('compaction_stream', 1129270864),    -- with a stream id: compaction against writers
           ('live_log', 1279874629)              -- alone: live events numbered in commit order
$$;
COMMENT ON FUNCTION cluster.lock_keys() IS
    'Every advisory-lock key of the platform with its name (core/db/locks.py).';

-- plpgsql to refuse an unknown name: a NULL key would make pg_advisory_xact_lock take no lock
-- and say nothing. IMMUTABLE, so a call with a constant name is evaluated once, when planned.
CREATE OR REPLACE FUNCTION cluster.lock_key(p_name text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    v_key bigint;
BEGIN
    SELECT k.key INTO v_key FROM cluster.lock_keys() k WHERE k.name = p_name;
    IF v_key IS NULL THEN
        RAISE EXCEPTION 'no advisory lock is named %', coalesce(p_name, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v_key;
END $$;
COMMENT ON FUNCTION cluster.lock_key(text) IS
    'The key of the advisory lock of this name (cluster.lock_keys()); an unknown name is an error.';
