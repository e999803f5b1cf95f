//! The router inside the desktop app: [`Embedded::start`] builds `switchboard_app::App` from
//! the configuration on the shell's Tokio runtime, listens on a free 127.0.0.1 port and keeps
//! the per-launch panel token; [`Embedded::shutdown`] stops it in order (listeners, stdio
//! clients, diagnosis runs, the registry with its supervised child processes, traces, store).
//!
//! The token is 32 bytes from the OS (`AdminToken::random`) and reaches the window only in
//! the URL's fragment (`#token=…`), which the web view never sends to the server; the panel
//! moves it into session storage and clears the fragment.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context as _;
use switchboard_admin::AdminToken;
use switchboard_app::{App, AppOptions};
use switchboard_router::Registry;

use crate::Args;

/// How long the requests in flight get to finish when the app quits.
pub const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(5);

/// The running router and where the panel is.
pub struct Embedded {
    app: App,
    addr: SocketAddr,
}

impl Embedded {
    /// Builds the app from the configuration `args` name and listens on 127.0.0.1, port 0.
    ///
    /// # Errors
    /// A configuration that does not load, a store that cannot be opened, no OS randomness
    /// for the token, a listener that cannot be bound.
    pub async fn start(args: &Args) -> anyhow::Result<Embedded> {
        let config = switchboard_app::config::load(args.config.as_deref(), &[], args.db.as_deref())
            .context("loading the configuration")?;
        let admin_token = AdminToken::random().context("making the panel's per-launch token")?;
        let app = App::build(&config, AppOptions { admin_token: Some(admin_token), ..AppOptions::default() })
            .await
            .context("starting the router")?;
        let addr = app
            .listen(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .await
            .context("binding the panel's listener on 127.0.0.1")?;
        Ok(Embedded { app, addr })
    }

    /// The panel's URL with the token in the fragment.
    pub fn panel_url(&self) -> String {
        self.app.panel_url(self.addr)
    }

    /// The listener's address (127.0.0.1 and the port the OS chose).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The registry, for the tray's status.
    pub fn registry(&self) -> Registry {
        self.app.registry().clone()
    }

    /// Stops the router in order; supervised child processes are stopped before it returns.
    pub async fn shutdown(self) {
        self.app.shutdown(SHUTDOWN_DEADLINE).await;
    }
}
