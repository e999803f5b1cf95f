//! `analyze_thermal_image` over MCP on the real sample images: a real rmcp client talks to [`VisionServer`]
//! through an in-memory pipe; images travel as base64, data: URLs and http:// blob URLs.

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};
use switchboard_servers::vision::{
    DefaultImageSource, ImageSourceConfig, VisionReport, VisionServer,
    server::ANALYZE_THERMAL_IMAGE,
    severity::{ACTION_MAJOR, Band},
};

use crate::common::{call, connect, sample, text_of};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

async fn analyze_ok(server: VisionServer, args: Value) -> VisionReport {
    let client = connect(server).await;
    let result = call(&client, ANALYZE_THERMAL_IMAGE, args).await;
    assert_ne!(result.is_error, Some(true), "{}", text_of(&result));
    let report: VisionReport =
        serde_json::from_value(result.structured_content.clone().expect("structuredContent")).unwrap();
    assert!(!text_of(&result).is_empty());
    client.cancel().await.unwrap();
    report
}

async fn analyze_err(server: VisionServer, args: Value) -> String {
    let client = connect(server).await;
    let result = call(&client, ANALYZE_THERMAL_IMAGE, args).await;
    assert_eq!(result.is_error, Some(true), "expected a tool error, got {result:?}");
    client.cancel().await.unwrap();
    text_of(&result)
}

#[tokio::test]
async fn lists_the_tool_with_input_and_output_schemas() {
    let client = connect(VisionServer::default()).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let tool = &tools[0];
    assert_eq!(tool.name, ANALYZE_THERMAL_IMAGE);
    let input = serde_json::to_value(tool.input_schema.as_ref()).unwrap();
    assert_eq!(input["required"], json!(["image"]));
    assert_eq!(input["additionalProperties"], false);
    assert!(input["properties"]["component_map"]["description"].as_str().unwrap().contains("frame pixels"));
    let output = serde_json::to_value(tool.output_schema.as_deref().expect("outputSchema")).unwrap();
    assert_eq!(
        output["properties"]["severity"]["properties"]["band"]["enum"],
        json!(["none", "possible", "probable", "monitor", "major"])
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn hot_neutral_is_a_major_discrepancy_at_the_hottest_pixel() {
    let bytes = sample("wm01_200_deg_neutral.jpg");
    let r = analyze_ok(VisionServer::default(), json!({ "image": b64(&bytes) })).await;
    assert!(r.radiometric && r.analysis == "absolute");
    assert_eq!((r.image.width, r.image.height, r.image.format.as_str()), (120, 120, "flir-jpeg"));
    assert_eq!((r.hottest.x, r.hottest.y), (51.0, 65.0));
    let top = &r.hotspots[0];
    assert!(top.bbox.contains(51, 65), "top hotspot {:?} misses (51,65)", top.bbox);
    assert!((top.max_c.unwrap() - 87.228).abs() < 0.01, "{top:?}");
    let dt = r.delta_t_ref_c.unwrap();
    assert!(dt > 15.0, "ΔT {dt}");
    assert!((r.reference.temperature_c.unwrap() - 34.73).abs() < 0.01);
    assert_eq!(r.severity.band, Band::Major);
    assert_eq!(r.severity.action, ACTION_MAJOR);
    assert!(r.severity.action.contains("major discrepancy; repair immediately"));
    assert_eq!(r.delta_t_ambient_c, None, "ambient is used only when given");
    assert!(r.notes.iter().any(|n| n.contains("emissivity 0.96")), "{:?}", r.notes);
    assert!(r.notes.iter().any(|n| n.contains("40 % of normal load")), "{:?}", r.notes);
    assert!(r.notes.iter().any(|n| n.contains("NEC 110.14(C)")), "{:?}", r.notes);
    assert!((0.0..=1.0).contains(&r.confidence));
    println!(
        "wm01: ΔT {dt:.2} °C vs median, band {:?}, failure mode {}",
        r.severity.band, r.failure_mode.kind
    );
}

#[tokio::test]
async fn uniform_pipe_is_no_deficiency_and_ambient_applies_only_when_given() {
    let bytes = sample("rt_ax8.jpg");
    let url = format!("data:image/jpeg;base64,{}", b64(&bytes));
    let r = analyze_ok(VisionServer::default(), json!({ "image": url })).await;
    assert_eq!(r.severity.band, Band::None, "{:?}", r.severity);
    assert!(r.severity.assessed);
    assert!(r.hotspots.is_empty());
    assert!(r.delta_t_ref_c.unwrap() < 1.0);
    assert_eq!(r.failure_mode.kind, "none");
    println!("rt_ax8: ΔT {:.2} °C vs median, band {:?}", r.delta_t_ref_c.unwrap(), r.severity.band);

    // With the air temperature given, the ~25 °C pipe is 5 °C above a 20 °C ambient: possible, no worse.
    let r = analyze_ok(VisionServer::default(), json!({ "image": b64(&bytes), "ambient_c": 20.0 })).await;
    let dta = r.delta_t_ambient_c.unwrap();
    assert!((4.0..7.0).contains(&dta), "{dta}");
    assert_eq!(r.severity.band, Band::Possible);
}

#[tokio::test]
async fn ambient_and_reference_region_and_component_map() {
    let bytes = sample("wm01_200_deg_neutral.jpg");
    let args = json!({
        "image": b64(&bytes),
        "ambient_c": 20.0,
        "reference_region": { "x": 0, "y": 0, "width": 10, "height": 10 },
        "component_map": "Designator,X,Y,Value\nN1,52,64,neutral lug\nL1,90,20,phase lug\n",
        "equipment": "panel"
    });
    let r = analyze_ok(VisionServer::default(), args).await;
    let dta = r.delta_t_ambient_c.unwrap();
    assert!((dta - (87.228 - 20.0)).abs() < 0.5, "{dta}");
    assert_eq!(r.reference.method, switchboard_servers::vision::ReferenceMethod::Region);
    assert_eq!(r.severity.band, Band::Major);
    let s = r.suspected_component.expect("suspected component");
    assert_eq!(s.designator, "N1");
    assert!(s.distance_px < 2.0);
    assert_eq!(s.value.as_deref(), Some("neutral lug"));

    let err = analyze_err(
        VisionServer::default(),
        json!({ "image": b64(&bytes), "reference_region": { "x": 115, "y": 0, "width": 10, "height": 10 } }),
    )
    .await;
    assert!(err.contains("region x=115 y=0 w=10 h=10 is outside the 120x120 frame"), "{err}");

    let err = analyze_err(
        VisionServer::default(),
        json!({ "image": b64(&bytes), "component_map": "C1,1,2\nC2,x,3" }),
    )
    .await;
    assert!(err.contains("component_map line 2"), "{err}");
}

#[tokio::test]
async fn dji_file_is_analysed_relatively_and_says_so() {
    let bytes = sample("dji_M2EA_DJI_0001_R.JPG");
    let r = analyze_ok(VisionServer::default(), json!({ "image": b64(&bytes) })).await;
    assert!(!r.radiometric);
    assert_eq!(r.analysis, "relative");
    let rel = r.relative.as_ref().expect("relative info");
    assert_eq!(rel.method, "raw-counts");
    assert!(rel.label.starts_with("relative"), "{}", rel.label);
    assert!(rel.reason.contains("DJI"), "{}", rel.reason);
    assert_eq!(r.image.format, "dji-rjpeg");
    assert_eq!((r.min_c, r.max_c, r.delta_t_ref_c), (None, None, None));
    assert!(!r.severity.assessed);
    assert!(r.notes.iter().any(|n| n.starts_with("relative analysis")), "{:?}", r.notes);
    let top = r.hotspots.first().expect("a relative hotspot");
    assert_eq!(top.max_c, None);
    assert!(top.max_relative.is_some());
}

#[tokio::test]
async fn corrupt_and_truncated_images_are_tool_errors() {
    let err =
        analyze_err(VisionServer::default(), json!({ "image": b64(b"GIF89a not a thermal image") })).await;
    assert!(err.starts_with("cannot read thermal image: unrecognised image format"), "{err}");

    // Cut the file inside its first FLIR APP1 segment.
    let bytes = sample("wm01_200_deg_neutral.jpg");
    let flir = bytes.windows(5).position(|w| w == b"FLIR\0").expect("FLIR segment");
    let err = analyze_err(VisionServer::default(), json!({ "image": b64(&bytes[..flir + 200]) })).await;
    assert!(err.contains("truncated FLIR APP1 chunk"), "{err}");

    let err = analyze_err(VisionServer::default(), json!({ "image": "%%% not base64 %%%" })).await;
    assert!(err.contains("not valid base64"), "{err}");

    let err = analyze_err(VisionServer::default(), json!({ "image": b64(&bytes), "emissivity": 1.5 })).await;
    assert!(err.contains("invalid option `emissivity`"), "{err}");

    let err = analyze_err(VisionServer::default(), json!({ "image": b64(&bytes), "bogus": true })).await;
    assert!(err.starts_with("invalid arguments"), "{err}");
}

#[tokio::test]
async fn oversize_images_are_refused_with_the_limit_named() {
    let bytes = sample("wm01_200_deg_neutral.jpg");
    let small = || {
        VisionServer::with_source(Arc::new(DefaultImageSource::new(ImageSourceConfig {
            max_bytes: 10_000,
            ..ImageSourceConfig::default()
        })))
    };
    let err = analyze_err(small(), json!({ "image": b64(&bytes) })).await;
    assert!(err.contains("over the 10000 byte limit (max_image_bytes)"), "{err}");

    // The same over HTTP, as the router's blob store would serve it.
    let (url, _server) = blob_server(bytes.clone()).await;
    let err = analyze_err(small(), json!({ "image": url.clone() })).await;
    assert!(err.contains("over the 10000 byte limit"), "{err}");
    let r = analyze_ok(VisionServer::default(), json!({ "image": { "uri": url } })).await;
    assert_eq!(r.severity.band, Band::Major);

    let err = analyze_err(VisionServer::default(), json!({ "image": "file:///etc/passwd" })).await;
    assert!(err.contains("file:// URLs are refused"), "{err}");
}

/// Serves `bytes` at `http://127.0.0.1:PORT/blobs/<name>` like the router's blob store.
async fn blob_server(bytes: Vec<u8>) -> (String, tokio::task::JoinHandle<()>) {
    let app =
        axum::Router::new().route("/blobs/wm01", axum::routing::get(move || async move { bytes.clone() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/blobs/wm01"), handle)
}

#[test]
fn every_sample_is_analysed_without_panic_and_graded_when_radiometric() {
    use switchboard_servers::vision::{AnalyzeOptions, analyze};
    let mut names: Vec<_> = std::fs::read_dir(crate::common::data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".json") && !n.ends_with(".md"))
        .collect();
    names.sort();
    assert!(names.len() >= 5);
    for name in names {
        let r = analyze(&sample(&name), &AnalyzeOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.severity.assessed, r.radiometric, "{name}");
        if let Some(top) = r.hotspots.first() {
            assert!(top.bbox.contains(r.hottest.x as usize, r.hottest.y as usize), "{name}: {top:?}");
        }
        println!(
            "{name}: {} ΔT {:?} band {} mode {} conf {} hotspots {} top area {:?}",
            r.analysis,
            r.delta_t_ref_c,
            r.severity.band.as_str(),
            r.failure_mode.kind,
            r.confidence,
            r.hotspots.len(),
            r.hotspots.first().map(|h| h.area_px)
        );
    }
}
