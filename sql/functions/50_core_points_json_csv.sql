-- Stream data leaves PostgreSQL as ready JSON or CSV (see the comment below).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

-- Stream data leaves PostgreSQL as ready JSON: the data API sends the body as the database built
-- it, with no Python object per point. A value is written exactly as the API wrote it before
-- (msgspec): the shortest digits that read back as the same double, `.0` on integral values,
-- plain decimals for decimal exponents -5..15, else `<digits>e<exponent>` without `+` or padding.
-- PostgreSQL's own float8 text has the same digits in most cases but another layout (`200`,
-- `1e+15`, `1e-05`); cluster.json_number only rearranges it.

-- The rare values (|v| < 1e-4 or >= 1e15, which PostgreSQL prints with an exponent), outside the
-- hot path: called only when cluster.json_number's two cheap cases do not apply.
CREATE OR REPLACE FUNCTION cluster.json_number_exponent_form(v double precision) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    sign constant text := CASE WHEN v < 0 THEN '-' ELSE '' END;
    m double precision := abs(v);
    k integer := 0;
    exact numeric;
    digits text;
    x integer;
BEGIN
    IF m >= 1e16 AND m < 1e33 THEN
        -- PostgreSQL's Ryu excludes the ends of the rounding interval, so some integers here get
        -- more digits than the shortest that read back as v: round the exact value to 1, 2, ...
        -- significant digits and keep the first that does. Beyond 1e33 no shorter decimal can
        -- fall on an interval end (it would need more factors of 5 than a double's mantissa has).
        WHILE m >= 2::double precision ^ 62 LOOP  -- exact steps: the ulp here is at least 1024
            m := m / 1024;
            k := k + 10;
        END LOOP;
        exact := trunc(m::bigint::numeric * 2::numeric ^ k);
        x := length(exact::text) - 1;
        FOR p IN 1..17 LOOP
            digits := round(exact, p - 1 - x)::text;
            EXIT WHEN digits::double precision = abs(v);
        END LOOP;
        x := length(digits) - 1;
        digits := rtrim(digits, '0');
    ELSE
        x := split_part(m::text, 'e', 2)::integer;
        digits := replace(split_part(m::text, 'e', 1), '.', '');
    END IF;
    IF x = 15 THEN
        RETURN sign || CASE WHEN length(digits) <= 16 THEN rpad(digits, 16, '0') || '.0'
                            ELSE left(digits, 16) || '.' || substr(digits, 17) END;
    ELSIF x = -5 THEN
        RETURN sign || '0.0000' || digits;
    END IF;
    RETURN sign || left(digits, 1)
        || CASE WHEN length(digits) > 1 THEN '.' || substr(digits, 2) ELSE '' END || 'e' || x;
END $$;
COMMENT ON FUNCTION cluster.json_number_exponent_form(double precision) IS
    'JSON text of a finite double below 1e-4 or from 1e15 in magnitude, as the data API writes it.';

-- Not STRICT and a single expression, so the planner inlines it into the query: a function call
-- per point would cost more than the formatting itself.
CREATE OR REPLACE FUNCTION cluster.json_number(v double precision) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
    WHEN v = trunc(v) AND abs(v) < 1e15 THEN v::text || '.0'
    WHEN abs(v) >= 1e-4 AND abs(v) < 1e15 THEN v::text
    ELSE cluster.json_number_exponent_form(v)
END;
COMMENT ON FUNCTION cluster.json_number(double precision) IS
    'JSON text of a finite double as the data API writes it: shortest round-trip digits, 200.0, 1e16, 0.00001.';

-- One point of a data answer, `[unix seconds,value]`; a body is
-- '[' || string_agg(cluster.json_point(ts, value), ',' ORDER BY ts) || ']'. An SQL expression:
-- the planner inlines it, so it costs no call per point.
CREATE OR REPLACE FUNCTION cluster.json_point(ts timestamptz, v double precision) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN '[' || extract(epoch FROM ts)::bigint || ',' || cluster.json_number(v) || ']';
COMMENT ON FUNCTION cluster.json_point(timestamptz, double precision) IS
    'JSON text of one point of the data API, [unix seconds,value].';

-- One line of a CSV data answer, `unix seconds,value` and CRLF (RFC 4180): the same two
-- numbers as cluster.json_point writes, so a CSV answer equals the JSON one value for value.
CREATE OR REPLACE FUNCTION cluster.csv_point(ts timestamptz, v double precision) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN extract(epoch FROM ts)::bigint || ',' || cluster.json_number(v) || E'\r\n';
COMMENT ON FUNCTION cluster.csv_point(timestamptz, double precision) IS
    'CSV line of one point of the data API, unix seconds,value and CRLF: the numbers of cluster.json_point.';

-- The first two cells of a line of a feed export (api/export.py): unix seconds as the data
-- answers write them, then the local time as JSON writes a timestamp, ISO 8601 with its UTC
-- offset (2026-10-25T02:30:00+01:00), in double quotes: the export quotes its text and leaves
-- its numbers bare. Local to the session's TimeZone, which the export sets to the feed's zone
-- of each configuration period: the offset comes with the time (both 02:00 of an autumn night
-- stay apart) and no zone is looked up per point. to_json takes three fifths of the time of
-- to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SSTZH:TZM'): the export's lines a tenth less (measured).
CREATE OR REPLACE FUNCTION cluster.csv_times(ts timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN extract(epoch FROM ts)::bigint || ',' || to_json(ts)::text;
COMMENT ON FUNCTION cluster.csv_times(timestamptz) IS
    'time,"local_time" cells of a feed export line: unix seconds, quoted local ISO 8601 time with offset in the session TimeZone.';

-- The value cells of a line of a feed export with several columns: the number of column k at
-- its place, empty where the line's time has no point of that column. ks and nums pair up
-- (aggregated from the same rows), in any order. Each number is put at its place once, so a
-- line costs its column count (issue 46: the former SQL body looked each column up in ks, the
-- square of it: 200 lines of 1,000 columns took 1,418 ms against 60 ms now). PL/pgSQL keeps
-- the arrays expanded, so each read and write of an element is one step; it is also cheaper
-- per call at a few columns (200,000 lines of 3 columns: 0.84 s against 2.2 s), where a SQL
-- body with a subquery is run as its own query each call.
CREATE OR REPLACE FUNCTION cluster.csv_cells(ks bigint[], nums text[], columns integer)
RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    cells text[] := array_fill(''::text, ARRAY[columns]);
BEGIN
    FOR i IN 1 .. coalesce(cardinality(ks), 0) LOOP
        cells[ks[i]] := nums[i];
    END LOOP;
    RETURN array_to_string(cells, ',', '');
END $$;
COMMENT ON FUNCTION cluster.csv_cells(bigint[], text[], integer) IS
    'CSV value cells of a feed export line: nums[i] in column ks[i] of 1..columns, empty cells elsewhere.';
