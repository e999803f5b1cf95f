-- Switchboard schema v3: one row per request a downstream client sent to the federated endpoint.
-- Same rules as before: STRICT, `id` is the rowid without AUTOINCREMENT (ids are max(id) + 1 and rows are
-- deleted only from the old end), so keeping the newest N rows is one range delete on the primary key.
CREATE TABLE traces (
    id             INTEGER NOT NULL PRIMARY KEY,
    at_ms          INTEGER NOT NULL,
    transport      TEXT    NOT NULL,
    peer           TEXT,
    client_name    TEXT,
    client_version TEXT,
    era            TEXT,
    method         TEXT    NOT NULL,
    name           TEXT,
    upstream       TEXT,
    latency_ms     REAL    NOT NULL,
    first_byte_ms  REAL,
    streamed       INTEGER NOT NULL CHECK (streamed IN (0, 1)),
    http_status    INTEGER,
    outcome        TEXT    NOT NULL CHECK (outcome IN ('ok', 'error', 'cancelled', 'timeout')),
    error_code     INTEGER,
    error          TEXT
) STRICT;

-- `traces()` lists newest first.
CREATE INDEX traces_by_time ON traces (at_ms DESC, id DESC);
