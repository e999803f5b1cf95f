//! Per-upstream limits (`[servers.X] pool`, `connect_timeout_ms`, `read_timeout_ms`,
//! `write_timeout_ms`), checked at load and applied by the transports:
//!
//! - `pool`: for stdio and WebSocket servers, the connections of their own that calls may hold
//!   at once (overrides `[router] max_call_connections`); for HTTP servers, the idle keep-alive
//!   connections kept to the server.
//! - `connect_timeout_ms`: establishing a connection (TCP connect for HTTP; TCP + WebSocket
//!   handshake for WebSocket).
//! - `read_timeout_ms`: how long the server may stay silent while an answer is awaited (HTTP:
//!   every read, reset by each byte, so progress notifications extend it; the GET
//!   notification stream is exempt; a silent call fails with "no response within …" and is
//!   not resumed).
//! - `write_timeout_ms`: HTTP POSTs that carry no request (notifications, responses,
//!   cancellations) until the server acknowledges them.
//!
//! A write must be able to finish within a read: `write_timeout_ms < read_timeout_ms`.

use std::time::Duration;

use super::ServerToml;

/// Largest `pool`.
pub const MAX_POOL: usize = 1024;

/// One server's limits; `None` leaves the transport's (or the registry's) default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpstreamLimits {
    /// Concurrent connections (see the module docs for what it bounds per transport).
    pub pool: Option<usize>,
    /// Connect timeout.
    pub connect_timeout: Option<Duration>,
    /// Read (silence) timeout.
    pub read_timeout: Option<Duration>,
    /// Write (acknowledgement) timeout; below `read_timeout` when both are set.
    pub write_timeout: Option<Duration>,
}

impl UpstreamLimits {
    /// Reads and checks the keys of `t`; the error names the fields and the server.
    pub fn from_toml(name: &str, t: &ServerToml) -> Result<UpstreamLimits, String> {
        if let Some(p) = t.pool
            && !(1..=MAX_POOL).contains(&p)
        {
            return Err(format!("servers.{name}.pool must be between 1 and {MAX_POOL} (it is {p})"));
        }
        let ms = |key: &str, v: Option<u64>| match v {
            Some(0) => Err(format!("servers.{name}.{key} must be at least 1")),
            v => Ok(v.map(Duration::from_millis)),
        };
        let limits = UpstreamLimits {
            pool: t.pool,
            connect_timeout: ms("connect_timeout_ms", t.connect_timeout_ms)?,
            read_timeout: ms("read_timeout_ms", t.read_timeout_ms)?,
            write_timeout: ms("write_timeout_ms", t.write_timeout_ms)?,
        };
        if let (Some(w), Some(r)) = (t.write_timeout_ms, t.read_timeout_ms)
            && w >= r
        {
            return Err(format!(
                "servers.{name}: write_timeout_ms ({w}) must be below read_timeout_ms ({r}): a write has to finish within a read"
            ));
        }
        Ok(limits)
    }

    /// Applies the limits to an HTTP client configuration.
    pub fn apply_http(&self, cfg: &mut switchboard_transport::http::HttpConfig) {
        if let Some(t) = self.connect_timeout {
            cfg.connect_timeout = t;
        }
        cfg.read_timeout = self.read_timeout.or(cfg.read_timeout);
        cfg.write_timeout = self.write_timeout.or(cfg.write_timeout);
        cfg.pool_max_idle = self.pool.or(cfg.pool_max_idle);
    }

    /// Applies the limits to a WebSocket client configuration.
    pub fn apply_ws(&self, cfg: &mut switchboard_transport::ws::WsConfig) {
        if let Some(t) = self.connect_timeout {
            cfg.connect_timeout = t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::servers_from_toml;

    #[test]
    fn limits_are_read_and_write_must_be_below_read() {
        let specs = servers_from_toml(
            "[servers.x]\nurl='http://127.0.0.1:1/mcp'\npool=4\nconnect_timeout_ms=250\nread_timeout_ms=2000\nwrite_timeout_ms=500\n",
            "a.toml",
        )
        .unwrap();
        let l = specs[0].limits;
        assert_eq!(l.pool, Some(4));
        assert_eq!(l.connect_timeout, Some(std::time::Duration::from_millis(250)));
        assert_eq!((l.read_timeout.unwrap().as_millis(), l.write_timeout.unwrap().as_millis()), (2000, 500));
        let e = servers_from_toml(
            "[servers.x]\nurl='http://127.0.0.1:1/mcp'\nread_timeout_ms=500\nwrite_timeout_ms=500\n",
            "a.toml",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "a.toml: servers.x: write_timeout_ms (500) must be below read_timeout_ms (500): a write has to finish within a read"
        );
        let e = servers_from_toml("[servers.x]\ncommand='a'\npool=0\n", "a.toml").unwrap_err().to_string();
        assert_eq!(e, "a.toml: servers.x.pool must be between 1 and 1024 (it is 0)");
    }
}
