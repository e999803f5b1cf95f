//! The service the app mounts: [`Gateway`] is the gateway's one front door.
//!
//! The app builds a `Gateway` from a registry and a [`GatewayConfig`], merges
//! [`Gateway::router`] (`/mcp` for HTTP and WebSocket clients, with deadlines and traces) into
//! its listener, and hands stdio clients to [`Gateway::serve_stdio`]. Nothing else of the
//! gateway's insides is the app's business; the bearer token ([`crate::auth`]) is applied by
//! the app around every data route, `/mcp` included.

use std::sync::Arc;

use axum::Router;
use switchboard_router::Registry;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::config::{EdgeConfig, EndpointConfig};
use crate::downstream::Adapter;
use crate::edge::Edge;
use crate::endpoint::Endpoint;
use crate::sessions::{SessionTable, SessionsView};

/// Everything the gateway is configured with.
#[derive(Debug, Clone, Default)]
pub struct GatewayConfig {
    /// How `/mcp` answers: sessions, federation, origins, limits.
    pub endpoint: EndpointConfig,
    /// Deadlines and traces around every request.
    pub edge: EdgeConfig,
}

/// The federated MCP endpoint, built once per app.
#[derive(Debug, Clone)]
pub struct Gateway {
    routes: Router,
    adapter: Adapter,
    sessions: SessionTable,
}

impl Gateway {
    /// Builds the gateway over `registry` (`None`: an endpoint with no upstreams, for tests).
    /// `cancel` closes WebSocket connections.
    pub fn new(registry: Option<Registry>, config: GatewayConfig, cancel: CancellationToken) -> Gateway {
        let sessions = config.endpoint.sessions.clone();
        if let Some(registry) = &registry {
            sessions.publish_on(registry.events().clone());
        }
        let endpoint = Endpoint::new(registry, Arc::new(config.endpoint));
        let edge = Edge::new(endpoint, config.edge);
        let routes = crate::http::routes(edge.clone(), cancel);
        Gateway { routes, adapter: Adapter::new(edge), sessions }
    }

    /// The downstream sessions and callers this instance has seen, with the upstream sessions
    /// each is bound to (see [`crate::sessions`]).
    pub fn sessions(&self) -> SessionsView {
        self.sessions.view()
    }

    /// `/mcp` (POST, GET, DELETE and WebSocket upgrades), to merge into the app's router.
    pub fn router(&self) -> Router {
        self.routes.clone()
    }

    /// The adapter WebSocket and stdio clients are served by.
    pub fn adapter(&self) -> &Adapter {
        &self.adapter
    }

    /// Serves one MCP client on `input`/`output` (newline-delimited JSON-RPC) until the input
    /// ends or `cancel` fires.
    pub async fn serve_stdio<R, W>(&self, input: R, output: W, cancel: CancellationToken)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        crate::downstream::stdio::serve(self.adapter.clone(), input, output, cancel).await;
    }
}
