-- Stream data leaves PostgreSQL as ready JSON (see the comment below).
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
