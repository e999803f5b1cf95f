-- Switchboard schema v2: flow runs and what every node in them did.
-- A run row is written when the run starts (outcome 'running') and finished once; a node row is written when
-- the node settles, so a crash leaves an inspectable partial run. Same rules as v1: STRICT tables, JSON
-- columns checked with `json_valid`.

-- `id` is the rowid without AUTOINCREMENT, as in `handshakes`: ids are max(id) + 1 and rows are deleted only
-- from the old end (retention), so keeping the newest N runs is one range delete on the primary key.
-- `run_id` is the engine's opaque id, the one callers know.
CREATE TABLE runs (
    id             INTEGER NOT NULL PRIMARY KEY,
    run_id         TEXT    NOT NULL UNIQUE,
    flow           TEXT    NOT NULL,
    input          TEXT    NOT NULL CHECK (json_valid(input)),
    started_at_ms  INTEGER NOT NULL,
    finished_at_ms INTEGER,
    outcome        TEXT    NOT NULL CHECK (outcome IN ('running', 'ok', 'failed', 'cancelled')),
    error          TEXT
) STRICT;

-- `runs()` lists newest first.
CREATE INDEX runs_by_time ON runs (started_at_ms DESC, id DESC);

-- One row per node of a run, keyed by the node id; `position` is the node's place in the flow's
-- topological order, which is how a run's nodes are listed. Rows go with their run.
CREATE TABLE run_nodes (
    run_id     TEXT    NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    node_id    TEXT    NOT NULL,
    position   INTEGER NOT NULL,
    tool       TEXT,
    input      TEXT    CHECK (input IS NULL OR json_valid(input)),
    output     TEXT    CHECK (output IS NULL OR json_valid(output)),
    latency_ms INTEGER NOT NULL,
    attempts   INTEGER NOT NULL,
    outcome    TEXT    NOT NULL CHECK (outcome IN ('pending', 'ok', 'failed', 'skipped', 'cancelled')),
    error      TEXT,
    PRIMARY KEY (run_id, node_id)
) STRICT;
