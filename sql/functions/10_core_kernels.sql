-- A local day's quarter hours out of two UTC days' arrays, and sums over a run of subscripts of
-- float8 arrays: what-if's quarter hours beside their prices (docs/billing.md#what-if). Each is
-- defined by its reference here, in SQL; the platform's array kernels (sql/kernels, installed
-- by scripts/build-kernels.sh) compute the same, the same additions in the same order, without
-- an executor row per element (a year of quarter hours: 35,040 rows a stream) or two array
-- copies a day.
-- `migrate` binds each function to its kernel where the server has the library, else to its
-- reference: the same answers, slower (docs/billing.md#what-if). tests/integration/test_kernels.py checks
-- that each kernel equals its reference.
-- Re-applied by every `migrate`.

-- The sum of a[lo..hi], in order, leaving out nulls and subscripts outside the array; null
-- when none is left (as sum() of no rows).
CREATE OR REPLACE FUNCTION cluster.slice_sum_reference(
    a double precision[], lo integer, hi integer
) RETURNS double precision LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT sum(a[n]) FROM generate_series(lo, hi) AS n
$$;
COMMENT ON FUNCTION cluster.slice_sum_reference(double precision[], integer, integer) IS
    'The sum of a[lo..hi] in order, nulls and missing subscripts left out; null when none is left.';

-- The sum of a[n] x b[n] over n in lo..hi, in order, leaving out each n where either is null
-- or missing; null when none is left.
CREATE OR REPLACE FUNCTION cluster.slice_dot_reference(
    a double precision[], b double precision[], lo integer, hi integer
) RETURNS double precision LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT sum(a[n] * b[n]) FROM generate_series(lo, hi) AS n
$$;
COMMENT ON FUNCTION cluster.slice_dot_reference(double precision[], double precision[], integer, integer) IS
    'The sum of a[n] x b[n] over n in lo..hi in order, each n with a null or missing element left out; null when none is left.';

-- The p_count quarter hours from the p_first of a UTC day on, out of that day's 96 (p_day) and
-- the next day's (p_next), null for each missing: a local day's quarters or prices in the
-- order of its time. A local day lies within two UTC days in every zone of today's offsets
-- (it starts at most 24 hours before its UTC date ends and lasts at most 25 hours).
CREATE OR REPLACE FUNCTION cluster.day_quarters_reference(
    p_day double precision[], p_next double precision[], p_first integer, p_count integer
) RETURNS double precision[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (coalesce(p_day, array_fill(NULL::double precision, ARRAY[96]))
        || coalesce(p_next, array_fill(NULL::double precision, ARRAY[96])))
       [p_first : p_first + p_count - 1];
COMMENT ON FUNCTION cluster.day_quarters_reference(double precision[], double precision[], integer, integer) IS
    'p_count quarter hours from quarter p_first of a UTC day on, across it (p_day) and the next (p_next), each null where its day is.';

-- Bound to the references first (what a server without the library keeps), then to the kernels.
CREATE OR REPLACE FUNCTION cluster.slice_sum(a double precision[], lo integer, hi integer)
RETURNS double precision LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN cluster.slice_sum_reference(a, lo, hi);
CREATE OR REPLACE FUNCTION cluster.slice_dot(
    a double precision[], b double precision[], lo integer, hi integer
) RETURNS double precision LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN cluster.slice_dot_reference(a, b, lo, hi);
CREATE OR REPLACE FUNCTION cluster.day_quarters(
    p_day double precision[], p_next double precision[], p_first integer, p_count integer
) RETURNS double precision[] LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN cluster.day_quarters_reference(p_day, p_next, p_first, p_count);

DO $$
BEGIN
    CREATE OR REPLACE FUNCTION cluster.slice_sum(a double precision[], lo integer, hi integer)
    RETURNS double precision LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
    AS 'energy_platform_kernels', 'ep_slice_sum';
    CREATE OR REPLACE FUNCTION cluster.slice_dot(
        a double precision[], b double precision[], lo integer, hi integer
    ) RETURNS double precision LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE
    AS 'energy_platform_kernels', 'ep_slice_dot';
    CREATE OR REPLACE FUNCTION cluster.day_quarters(
        p_day double precision[], p_next double precision[], p_first integer, p_count integer
    ) RETURNS double precision[] LANGUAGE c IMMUTABLE PARALLEL SAFE
    AS 'energy_platform_kernels', 'ep_day_quarters';
EXCEPTION
    -- The library is not installed on this server, or the migrating role may not load one.
    WHEN undefined_file OR insufficient_privilege THEN
        RAISE WARNING 'the array kernels are not installed on this server (%): their SQL references stand in, and what-if is about twice as slow (docs/operations.md#the-array-kernels)',
            SQLERRM;
END $$;
COMMENT ON FUNCTION cluster.slice_sum(double precision[], integer, integer) IS
    'cluster.slice_sum_reference, by the array kernels where the server has them.';
COMMENT ON FUNCTION cluster.slice_dot(double precision[], double precision[], integer, integer) IS
    'cluster.slice_dot_reference, by the array kernels where the server has them.';
COMMENT ON FUNCTION cluster.day_quarters(double precision[], double precision[], integer, integer) IS
    'cluster.day_quarters_reference, by the array kernels where the server has them.';
