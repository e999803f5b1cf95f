//! The serve helpers: each server reached over an in-memory pipe (raw newline-delimited JSON-RPC and an rmcp
//! client), Streamable HTTP (rmcp client) and WebSocket (raw frames), then shut down through its token.

use futures::{SinkExt as _, StreamExt as _};
use rmcp::ServiceExt as _;
use serde_json::{Value, json};
use switchboard_servers::{
    knowledge::{KnowledgeBase, KnowledgeServer},
    reasoning::ReasoningServer,
    serve::{builtin_in_memory, serve_http, serve_ws},
    vision::VisionServer,
};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest as _};
use tokio_util::sync::CancellationToken;

fn initialize(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "serve-test", "version": "0" }
        }
    })
}

#[tokio::test]
async fn in_memory_pipe_speaks_newline_delimited_json_rpc() {
    let cancel = CancellationToken::new();
    let (io, task) = builtin_in_memory(VisionServer::default(), cancel.clone());
    let (read, mut write) = tokio::io::split(io);
    let mut lines = BufReader::new(read).lines();
    let mut send = async |v: Value| {
        write.write_all(format!("{v}\n").as_bytes()).await.unwrap();
        write.flush().await.unwrap();
    };
    send(initialize(1)).await;
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["serverInfo"]["name"], "switchboard-vision");
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" })).await;
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["result"]["tools"][0]["name"], "analyze_thermal_image");
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn in_memory_pipe_serves_an_rmcp_client_until_dropped() {
    let kb = KnowledgeBase::embedded().await.unwrap();
    let (io, task) = builtin_in_memory(KnowledgeServer::new(kb), CancellationToken::new());
    let client = ().serve(io).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools[0].name, "search_manual");
    client.cancel().await.unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn http_serves_the_vision_server_and_stops_on_cancel() {
    let cancel = CancellationToken::new();
    let serving =
        serve_http(VisionServer::default(), "127.0.0.1:0".parse().unwrap(), cancel.clone()).await.unwrap();
    assert!(
        serving.url().starts_with("http://127.0.0.1:") && serving.url().ends_with("/mcp"),
        "{}",
        serving.url()
    );
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(serving.url().to_owned());
    let client = ().serve(transport).await.unwrap();
    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().expect("serverInfo").name, "switchboard-vision");
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools[0].name, "analyze_thermal_image");
    client.cancel().await.unwrap();
    cancel.cancel();
    serving.wait().await.unwrap();

    // A taken port is a clear bind error.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = serve_http(VisionServer::default(), taken.local_addr().unwrap(), CancellationToken::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("cannot serve http on 127.0.0.1:"), "{err}");
}

#[tokio::test]
async fn websocket_uses_the_mcp_subprotocol_one_message_per_text_frame() {
    let cancel = CancellationToken::new();
    let serving =
        serve_ws(ReasoningServer::default(), "127.0.0.1:0".parse().unwrap(), cancel.clone()).await.unwrap();
    assert!(serving.url().starts_with("ws://127.0.0.1:"), "{}", serving.url());
    let mut request = serving.url().into_client_request().unwrap();
    request.headers_mut().insert("sec-websocket-protocol", "mcp".parse().unwrap());
    let (mut socket, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(response.headers().get("sec-websocket-protocol").unwrap(), "mcp");

    socket.send(Message::text(initialize(1).to_string())).await.unwrap();
    let answer = next_text(&mut socket).await;
    assert_eq!(answer["result"]["serverInfo"]["name"], "switchboard-reasoning");
    socket
        .send(Message::text(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string()))
        .await
        .unwrap();
    socket
        .send(Message::text(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string()))
        .await
        .unwrap();
    let answer = next_text(&mut socket).await;
    assert_eq!(answer["result"]["tools"][0]["name"], "generate_repair_steps");
    socket.send(Message::text("{ not json")).await.unwrap();
    let answer = next_text(&mut socket).await;
    assert_eq!(answer["error"]["code"], -32700);
    socket.close(None).await.unwrap();
    cancel.cancel();
    serving.wait().await.unwrap();
}

async fn next_text<S>(socket: &mut S) -> Value
where
    S: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        match socket.next().await.unwrap().unwrap() {
            Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
            _ => continue,
        }
    }
}
