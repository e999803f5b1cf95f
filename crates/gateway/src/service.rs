//! The service the app mounts: [`Gateway`] is the gateway's one front door.
//!
//! The app builds a `Gateway` from a registry and a [`GatewayConfig`], merges
//! [`Gateway::router`] (`/mcp` for HTTP and WebSocket clients, with deadlines and traces) into
//! its listener, and hands stdio clients to [`Gateway::serve_stdio`]. Nothing else of the
//! gateway's insides is the app's business; the bearer token ([`crate::auth`]) is applied by
//! the app around every data route, `/mcp` included.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use switchboard_router::Registry;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use crate::downstream::Adapter;
use crate::downstream::ws::WsState;
use crate::edge::{Edge, EdgeConfig};
use crate::endpoint::{self, EndpointConfig};

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
}

#[derive(Clone)]
struct McpState {
    registry: Option<Registry>,
    endpoint: Arc<EndpointConfig>,
}

impl Gateway {
    /// Builds the gateway over `registry` (`None`: an endpoint with no upstreams, for tests).
    /// `cancel` closes WebSocket connections.
    pub fn new(registry: Option<Registry>, config: GatewayConfig, cancel: CancellationToken) -> Gateway {
        let endpoint = Arc::new(config.endpoint);
        let state = McpState { registry: registry.clone(), endpoint: endpoint.clone() };
        let mcp = Router::new()
            .route(
                "/mcp",
                post(|State(s): State<McpState>, headers: HeaderMap, body: axum::body::Body| async move {
                    endpoint::post(s.registry, s.endpoint, headers, body).await
                })
                .get(|State(s): State<McpState>, headers: HeaderMap| async move {
                    endpoint::get(s.registry, s.endpoint, headers).await
                })
                .delete(|State(s): State<McpState>, headers: HeaderMap| async move {
                    endpoint::delete(s.endpoint, headers).await
                }),
            )
            .with_state(state);
        let observed =
            Arc::new(Edge { config: config.edge, registry: registry.clone(), endpoint: endpoint.clone() });
        let inner = mcp.layer(axum::middleware::from_fn_with_state(observed, crate::edge::observe));
        let adapter = Adapter::new(inner.clone(), registry, endpoint.clone(), endpoint.body_limit);
        let ws = WsState {
            adapter: adapter.clone(),
            allowed_origins: Arc::new(endpoint.allowed_origins.clone()),
            cancel,
        };
        let routes = inner.layer(axum::middleware::from_fn_with_state(ws, crate::downstream::ws::upgrade));
        Gateway { routes, adapter }
    }

    /// `/mcp` (POST, GET, DELETE and WebSocket upgrades), to merge into the app's router.
    pub fn router(&self) -> Router {
        self.routes.clone()
    }

    /// The in-process adapter WebSocket and stdio clients are served by.
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
