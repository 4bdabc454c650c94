-- A user's tokens (issue 39): several per user, each named and either `read` or `write`, with
-- when it was made and last used (docs/data-api.md#tokens). The one token every user had moves
-- here as their `write` token `default`, and cluster.users keeps no digest: one table says who a
-- token is, so a revoked token cannot linger in a second place.
CREATE TABLE cluster.user_tokens (
    user_id      bigint NOT NULL REFERENCES cluster.users (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    scope        text NOT NULL CHECK (scope IN ('read', 'write')),
    token_sha256 bytea NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    PRIMARY KEY (user_id, name)
);
COMMENT ON TABLE cluster.user_tokens IS 'Bearer tokens of the data API''s users; a revoked token''s row is deleted. Who calls with a digest: cluster.token_caller(digest).';
COMMENT ON COLUMN cluster.user_tokens.user_id IS 'The user the token acts as.';
COMMENT ON COLUMN cluster.user_tokens.name IS 'Unique per user (letters, digits, ".", "_", "-"; at most 64): how the user names it in /users/{user_id}/tokens/{name}.';
COMMENT ON COLUMN cluster.user_tokens.scope IS 'read: may read what the user sees; write: may also change it (notifications, tokens, stream data).';
COMMENT ON COLUMN cluster.user_tokens.token_sha256 IS 'SHA-256 of the token; the token itself is shown once and never stored.';
COMMENT ON COLUMN cluster.user_tokens.created_at IS 'When the token was made (for the tokens moved from cluster.users: when their user was added).';
COMMENT ON COLUMN cluster.user_tokens.last_used_at IS 'When the data API last authenticated a request with it, to the minute (updated at most once a minute); null: never since it was made.';

-- When a moved token was issued is not known (it may have been rotated since): its user's
-- creation is the best bound there is, and exact for every token never rotated.
INSERT INTO cluster.user_tokens (user_id, name, scope, token_sha256, created_at)
SELECT id, 'default', 'write', token_sha256, created_at FROM cluster.users;

ALTER TABLE cluster.users DROP COLUMN token_sha256;
COMMENT ON TABLE cluster.users IS 'People and programs that use the data API, each with bearer tokens in cluster.user_tokens.';
