//! The native file dialog for the Diagnosis view: `pick_image` opens the system's dialog
//! (tauri-plugin-dialog, used from Rust only) and hands back the picked file's name and bytes,
//! which the panel uploads as it does a dropped file. The page never sees a path and gets no
//! file-system permission: it can read only the file the operator picked.

use base64::Engine as _;
use serde::Serialize;
use tauri::{AppHandle, WebviewWindow};
use tauri_plugin_dialog::DialogExt as _;

/// The image types the diagnosis reads (GTK's filters match case-sensitively: DJI writes `.JPG`).
const EXTENSIONS: [&str; 10] = ["jpg", "jpeg", "png", "fff", "seq", "JPG", "JPEG", "PNG", "FFF", "SEQ"];

/// A picked file.
#[derive(Debug, Serialize)]
pub struct Picked {
    /// The file's name, without its directory.
    name: String,
    /// Its bytes, base64.
    data: String,
}

/// Opens the dialog over the calling window; `None` when the operator cancels it.
#[tauri::command]
pub async fn pick_image(app: AppHandle, window: WebviewWindow) -> Result<Option<Picked>, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    app.dialog()
        .file()
        .set_parent(&window)
        .set_title("Pick a thermal image")
        .add_filter("Thermal images", &EXTENSIONS)
        .pick_file(move |picked| {
            let _ = tx.send(picked);
        });
    let Some(picked) = rx.await.map_err(|_| "the file dialog closed without an answer".to_string())? else {
        return Ok(None);
    };
    let path = picked.into_path().map_err(|e| format!("the picked file: {e}"))?;
    let size =
        tokio::fs::metadata(&path).await.map_err(|e| format!("reading {}: {e}", path.display()))?.len();
    let limit = switchboard_app::blobs::DEFAULT_MAX_BLOB;
    if size > limit {
        return Err(format!("{} is {size} bytes; images up to {limit} bytes are accepted", path.display()));
    }
    let bytes = tokio::fs::read(&path).await.map_err(|e| format!("reading {}: {e}", path.display()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "image".into());
    Ok(Some(Picked { name, data: base64::engine::general_purpose::STANDARD.encode(bytes) }))
}
