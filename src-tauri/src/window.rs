//! The main window: declared in `tauri.conf.json` (`"create": false`, `dragDropEnabled: false`
//! so the page's HTML5 drop gets the files' bytes) and opened here on the panel's URL, which is
//! known only once the router listens. Its size and position are remembered by the
//! window-state plugin (a JSON file in the app's config directory).
//!
//! The page is the router's own (`http://127.0.0.1:PORT`), so Tauri treats it as a remote
//! origin: the one capability it gets is added here, for exactly that origin and this window,
//! and allows exactly the shell's one command (`pick_image`). The window never navigates away
//! from the panel's origin.

use anyhow::Context as _;
use tauri::ipc::CapabilityBuilder;
use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindowBuilder};

use crate::embedded::Embedded;

/// The main window's label (as in `tauri.conf.json`).
pub const MAIN: &str = "main";

/// Opens the main window on the panel.
///
/// # Errors
/// A configuration without the `main` window, a window that cannot be created.
pub fn open(app: &AppHandle, embedded: &Embedded) -> anyhow::Result<()> {
    let mut config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == MAIN)
        .cloned()
        .context("tauri.conf.json declares no `main` window")?;
    let url: tauri::Url = embedded.panel_url().parse().context("the panel's URL")?;
    let origin = url.origin();
    app.add_capability(
        CapabilityBuilder::new("panel")
            .remote(format!("http://{}", embedded.addr()))
            .window(MAIN)
            .permission("allow-pick-image"),
    )
    .context("granting the panel its capability")?;
    config.url = WebviewUrl::External(url);
    WebviewWindowBuilder::from_config(app, &config)
        .context("the main window's configuration")?
        .on_navigation(move |to| {
            let inside = to.origin() == origin;
            if !inside {
                tracing::warn!(url = %to, "the panel window stays on the panel; navigation refused");
            }
            inside
        })
        .build()
        .context("opening the main window")?;
    Ok(())
}

/// Shows, unminimises and focuses the main window (the tray's Open, a second launch).
pub fn focus(app: &AppHandle) {
    if let Some(w) = app.get_webview_window(MAIN) {
        let _ = w.unminimize();
        let _ = w.show();
        let _ = w.set_focus();
    }
}
