-- Switchboard schema v1: the server registry, tool-list snapshots and the handshake log.
-- Tables are STRICT so a wrongly typed bind fails loudly instead of being stored as-is.
-- JSON columns hold serde_json text; `json_valid` keeps a bad writer from poisoning later reads.

CREATE TABLE servers (
    server_id     TEXT    NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL,
    transport     TEXT    NOT NULL,
    config        TEXT    NOT NULL CHECK (json_valid(config)),
    state         TEXT    NOT NULL,
    state_reason  TEXT,
    era           TEXT,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) STRICT;

-- `servers()` lists by name.
CREATE INDEX servers_by_name ON servers (name, server_id);

CREATE TABLE tool_snapshots (
    id          INTEGER NOT NULL PRIMARY KEY,
    server_id   TEXT    NOT NULL REFERENCES servers (server_id) ON DELETE CASCADE,
    taken_at_ms INTEGER NOT NULL,
    tools       TEXT    NOT NULL CHECK (json_valid(tools)),
    quarantined TEXT    NOT NULL CHECK (json_valid(quarantined)),
    resources   TEXT    NOT NULL CHECK (json_valid(resources)),
    prompts     TEXT    NOT NULL CHECK (json_valid(prompts))
) STRICT;

-- Latest snapshot per server, per-server pruning, and the cascade on server removal.
CREATE INDEX tool_snapshots_by_server ON tool_snapshots (server_id, taken_at_ms DESC, id DESC);

-- `id` is the rowid without AUTOINCREMENT: ids are assigned max(id) + 1, and rows are only ever deleted from the
-- old end (retention), so ids stay contiguous and retention is a single range delete on the primary key.
CREATE TABLE handshakes (
    id                  INTEGER NOT NULL PRIMARY KEY,
    server_id           TEXT    REFERENCES servers (server_id) ON DELETE SET NULL,
    leg                 TEXT    NOT NULL,
    transport           TEXT    NOT NULL,
    era                 TEXT,
    offered_versions    TEXT    NOT NULL CHECK (json_valid(offered_versions)),
    chosen_version      TEXT,
    client_capabilities TEXT    NOT NULL CHECK (json_valid(client_capabilities)),
    server_capabilities TEXT    NOT NULL CHECK (json_valid(server_capabilities)),
    client_info         TEXT    NOT NULL CHECK (json_valid(client_info)),
    server_info         TEXT    NOT NULL CHECK (json_valid(server_info)),
    tool_count          INTEGER,
    duration_ms         REAL    NOT NULL,
    error               TEXT,
    at_ms               INTEGER NOT NULL
) STRICT;

-- Newest-first listing, overall and per server (the latter also serves ON DELETE SET NULL).
CREATE INDEX handshakes_by_time ON handshakes (at_ms DESC, id DESC);
CREATE INDEX handshakes_by_server ON handshakes (server_id, at_ms DESC, id DESC);
