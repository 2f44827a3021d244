-- dashboard_sessions are the dashboard's signed-in sessions, shared by
-- every instance: a sign-out on one ends the session on all. The browser
-- holds the session's id (32 random bytes) in a cookie; the table holds
-- only its SHA-256 (id_hash), so that a read of the table opens no
-- session. token_hash ("sha256:...", as the tokens file has it) names the
-- token the session was opened with: an instance that no longer knows the
-- token refuses the session, and deletes it. Expired sessions are deleted
-- when a session is created (dashboard_sessions_expires_at).
CREATE TABLE dashboard_sessions (
    id_hash    text PRIMARY KEY,
    token_hash text NOT NULL,
    token_name text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_expires_at ON dashboard_sessions (expires_at);

---- create above / drop below ----

DROP TABLE dashboard_sessions;
