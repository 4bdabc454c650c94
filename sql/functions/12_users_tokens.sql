-- Who calls the data API with a token: the one lookup of a bearer token's SHA-256, used by the
-- API's authentication and inside its one-round-trip data statements alike. Plain SQL, so
-- PostgreSQL inlines it: the caller costs the token's unique index and the user's primary key.

CREATE OR REPLACE FUNCTION cluster.token_caller(token_sha256 bytea)
RETURNS TABLE (user_id bigint, is_admin boolean, scope text)
LANGUAGE sql STABLE AS $$
    SELECT u.id, u.is_admin, t.scope
      FROM cluster.user_tokens t
      JOIN cluster.users u ON u.id = t.user_id
     WHERE t.token_sha256 = token_caller.token_sha256
$$;
COMMENT ON FUNCTION cluster.token_caller(bytea) IS 'The user behind a bearer token''s SHA-256 (none: unknown or revoked), their admin flag and the token''s scope (read or write).';
