//! Downstream clients that do not speak HTTP requests: WebSocket on `GET /mcp`
//! ([`websocket`]), stdio connections of the app ([`stdio`]: in-process, and the frames both
//! put on the event bus) and `switchboard serve --stdio` (the binary, spawned as desktop
//! clients do; [`serve_stdio`]), in both eras, plus rmcp and Python clients.

mod serve_stdio;
mod stdio;
mod websocket;
