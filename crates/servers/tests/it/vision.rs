//! `analyze_thermal_image` over MCP on the real sample images: a real rmcp client talks to [`VisionServer`]
//! through an in-memory pipe; images travel as base64, data: URLs and http:// blob URLs.

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};
use switchboard_servers::vision::{
    DefaultImageSource, Equipment, EquipmentSource, ImageSourceConfig, VisionReport, VisionServer,
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
        json!(["none", "possible", "probable", "monitor", "major", null])
    );
    assert!(
        input["properties"]["equipment"]["enum"].as_array().unwrap().iter().any(|e| e == "pv-module"),
        "{input}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn hot_neutral_is_a_major_discrepancy_at_the_hottest_pixel() {
    let bytes = sample("wm01_200_deg_neutral.jpg");
    let r = analyze_ok(VisionServer::default(), json!({ "image": b64(&bytes), "equipment": "panel" })).await;
    assert!(r.radiometric && r.analysis == "absolute");
    assert_eq!((r.image.width, r.image.height, r.image.format.as_str()), (120, 120, "flir-jpeg"));
    assert_eq!((r.hottest.x, r.hottest.y), (51.0, 65.0));
    let top = &r.hotspots[0];
    assert!(top.bbox.contains(51, 65), "top hotspot {:?} misses (51,65)", top.bbox);
    assert!((top.max_c.unwrap() - 87.228).abs() < 0.01, "{top:?}");
    let dt = r.delta_t_ref_c.unwrap();
    assert!(dt > 15.0, "ΔT {dt}");
    assert!((r.reference.temperature_c.unwrap() - 34.73).abs() < 0.01);
    assert_eq!(r.severity.band, Some(Band::Major));
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
    let r = analyze_ok(VisionServer::default(), json!({ "image": url, "equipment": "panel" })).await;
    assert_eq!(r.severity.band, Some(Band::None), "{:?}", r.severity);
    assert!(r.severity.assessed);
    assert!(r.hotspots.is_empty());
    assert!(r.delta_t_ref_c.unwrap() < 1.0);
    assert_eq!(r.failure_mode.kind, "none");
    println!("rt_ax8: ΔT {:.2} °C vs median, band {:?}", r.delta_t_ref_c.unwrap(), r.severity.band);

    // With the air temperature given, the ~25 °C pipe is 5 °C above a 20 °C ambient: possible, no worse.
    let r = analyze_ok(
        VisionServer::default(),
        json!({ "image": b64(&bytes), "ambient_c": 20.0, "equipment": "switchgear" }),
    )
    .await;
    let dta = r.delta_t_ambient_c.unwrap();
    assert!((4.0..7.0).contains(&dta), "{dta}");
    assert_eq!(r.severity.band, Some(Band::Possible));
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
    assert_eq!(r.severity.band, Some(Band::Major));
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

    // The same from the router's blob store, by reference.
    let (dir, id) = blob_dir_with(&bytes);
    let err = analyze_err(small_with_blobs(dir.path()), json!({ "image": format!("blob:{id}") })).await;
    assert!(err.contains("over the 10000 byte limit"), "{err}");
    let r = analyze_ok(with_blobs(dir.path()), json!({ "image": { "uri": format!("blob:{id}") } })).await;
    assert_eq!(r.max_c, Some(87.23));
}

fn sha256_hex(bytes: &[u8]) -> String {
    // A blob store names files by SHA-256; the vision server does not check the name, so a fixed-length
    // stand-in derived from the content is enough for these tests.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}").repeat(4)
}

/// A blob directory holding `bytes`, and the blob's id.
fn blob_dir_with(bytes: &[u8]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let id = sha256_hex(bytes);
    std::fs::write(dir.path().join(&id), bytes).unwrap();
    (dir, id)
}

fn with_source(config: ImageSourceConfig) -> VisionServer {
    VisionServer::with_source(Arc::new(DefaultImageSource::new(config)))
}

fn with_blobs(dir: &std::path::Path) -> VisionServer {
    with_source(ImageSourceConfig { blob_dir: Some(dir.to_path_buf()), ..ImageSourceConfig::default() })
}

fn small_with_blobs(dir: &std::path::Path) -> VisionServer {
    with_source(ImageSourceConfig {
        blob_dir: Some(dir.to_path_buf()),
        max_bytes: 10_000,
        ..ImageSourceConfig::default()
    })
}

/// What a local service would hold: a tool argument must never be able to read it.
const SECRET: &str = "SECRET-7f3a-local-service-bytes";

/// Serves [`SECRET`] at every path of `http://127.0.0.1:PORT`.
async fn secret_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new().fallback(|| async { SECRET });
    serve_on("127.0.0.1:0", app).await
}

async fn serve_on(addr: &str, app: axum::Router) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, handle)
}

fn allowing(entries: &[String]) -> VisionServer {
    with_source(ImageSourceConfig {
        http_allow: switchboard_servers::vision::source::allow::parse_rules(entries).unwrap(),
        ..ImageSourceConfig::default()
    })
}

#[tokio::test]
async fn local_addresses_in_every_spelling_are_refused_without_echoing_bytes() {
    let (secret, _server) = secret_server().await;
    let port = secret.port();
    // By default no http(s) URL is read at all.
    let err = analyze_err(VisionServer::default(), json!({ "image": format!("http://{secret}/") })).await;
    assert!(err.contains("http(s) images are refused"), "{err}");
    assert!(!err.contains(SECRET), "{err}");
    // With an allowlist that names some other host, each spelling of loopback is still refused by address.
    let server = || allowing(&["images.example.com".to_owned()]);
    let cases = [
        (format!("http://127.0.0.1:{port}/"), "loopback"),
        (format!("http://2130706433:{port}/"), "127.0.0.1 is a loopback address"),
        (format!("http://0x7f.1:{port}/"), "127.0.0.1 is a loopback address"),
        (format!("http://[::ffff:127.0.0.1]:{port}/"), "IPv4-mapped"),
        (format!("http://[::1]:{port}/"), "loopback"),
        (format!("http://localhost:{port}/"), "not in the allowlist"),
        (format!("http://169.254.169.254:{port}/latest/meta-data/"), "link-local"),
    ];
    for (url, want) in cases {
        let err = analyze_err(server(), json!({ "image": url })).await;
        assert!(err.contains("refused") && err.contains(want), "{url}: {err}");
        assert!(!err.contains(SECRET), "{url}: {err}");
    }
    for url in ["file:///etc/passwd", "file://localhost/etc/hostname"] {
        let err = analyze_err(server(), json!({ "image": url })).await;
        assert!(err.contains("file:// URLs are never read"), "{url}: {err}");
    }
}

#[tokio::test]
async fn a_redirect_from_an_allowlisted_host_to_loopback_is_refused() {
    let (secret, _secret_server) = secret_server().await;
    let target = format!("http://{secret}/admin");
    let image = sample("wm01_200_deg_neutral.jpg");
    let app = axum::Router::new()
        .route(
            "/go",
            axum::routing::get(move || {
                let target = target.clone();
                async move { axum::response::Redirect::temporary(&target) }
            }),
        )
        .route("/image.jpg", axum::routing::get(move || async move { image.clone() }))
        .route("/text", axum::routing::get(|| async { SECRET }));
    let (allowed, _server) = serve_on("127.0.0.1:0", app).await;
    // The allowlist names exactly this address and port (a loopback address must be listed by address).
    let server = || allowing(&[allowed.to_string()]);

    let r = analyze_ok(server(), json!({ "image": format!("http://{allowed}/image.jpg") })).await;
    assert_eq!(r.max_c, Some(87.23), "an allowlisted source is read");

    let err = analyze_err(server(), json!({ "image": format!("http://{allowed}/go") })).await;
    assert!(err.contains("redirect 1 refused"), "{err}");
    assert!(!err.contains(SECRET) && !err.contains("/admin"), "{err}");

    // An allowlisted source that answers something else: the error says so without quoting it.
    let err = analyze_err(server(), json!({ "image": format!("http://{allowed}/text") })).await;
    assert!(err.contains("not a readable thermal image"), "{err}");
    assert!(!err.contains(SECRET) && !err.contains("53 45 43"), "{err}");
}

#[tokio::test]
async fn blob_references_and_data_urls_are_read() {
    let bytes = sample("wm01_200_deg_neutral.jpg");
    let (dir, id) = blob_dir_with(&bytes);
    for image in [format!("blob:{id}"), format!("http://127.0.0.1:9/blobs/{id}")] {
        // Port 9 (discard) has nothing listening: the blob comes from the directory, not over HTTP.
        let r = analyze_ok(with_blobs(dir.path()), json!({ "image": image, "equipment": "panel" })).await;
        assert_eq!(r.max_c, Some(87.23), "{image}");
    }
    let url = format!("data:image/jpeg;base64,{}", b64(&bytes));
    let r = analyze_ok(VisionServer::default(), json!({ "image": url })).await;
    assert_eq!(r.max_c, Some(87.23));
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
        let panel = AnalyzeOptions { equipment: Some(Equipment::Panel), ..AnalyzeOptions::default() };
        let r = analyze(&sample(&name), &panel).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.severity.assessed, r.radiometric, "{name}");
        if let Some(top) = r.hotspots.first() {
            assert!(top.bbox.contains(r.hottest.x as usize, r.hottest.y as usize), "{name}: {top:?}");
        }
        println!(
            "{name}: {} ΔT {:?} band {} mode {} conf {} hotspots {} top area {:?}",
            r.analysis,
            r.delta_t_ref_c,
            r.severity.band.map_or("-", Band::as_str),
            r.failure_mode.kind,
            r.confidence,
            r.hotspots.len(),
            r.hotspots.first().map(|h| h.area_px)
        );
    }
}

#[tokio::test]
async fn unknown_equipment_gets_no_band_and_a_named_panel_gets_neta() {
    let bytes = sample("wm01_200_deg_neutral.jpg");
    let r = analyze_ok(VisionServer::default(), json!({ "image": b64(&bytes) })).await;
    assert_eq!((r.equipment, r.equipment_source), (Equipment::Unknown, EquipmentSource::None));
    assert!(r.equipment_reason.starts_with("unknown: no equipment was given"), "{}", r.equipment_reason);
    assert_eq!(
        (r.severity.band, r.severity.class.as_deref()),
        (None, None),
        "no NETA band: {:?}",
        r.severity
    );
    assert_eq!(r.severity.standard, "none");
    assert!(!r.severity.assessed);
    assert!(r.severity.criterion.contains("equipment is unknown"), "{}", r.severity.criterion);
    // The figures are still there.
    assert!(r.delta_t_ref_c.unwrap() > 15.0);
    assert!(r.hotspots[0].bbox.contains(51, 65));
    assert_eq!(r.failure_mode.kind, "undetermined");
    assert_eq!(r.component.group, "unknown");
    let text = serde_json::to_value(&r).unwrap();
    assert!(text["severity"]["band"].is_null(), "{text}");

    // The same image with the operator naming a panel: the NETA band as before.
    let r = analyze_ok(VisionServer::default(), json!({ "image": b64(&bytes), "equipment": "panel" })).await;
    assert_eq!((r.equipment, r.equipment_source), (Equipment::Panel, EquipmentSource::Operator));
    assert_eq!(r.severity.band, Some(Band::Major));
    assert_eq!(r.severity.standard, "NETA MTS Table 100.18");
    assert_eq!(r.component.group, "termination", "{:?} {:?}", r.component, r.failure_mode);

    // A context that names it is used, and says so.
    let r = analyze_ok(
        VisionServer::default(),
        json!({ "image": b64(&bytes), "context": "overheated neutral lug in the main switchboard" }),
    )
    .await;
    assert_eq!((r.equipment, r.equipment_source), (Equipment::Panel, EquipmentSource::Context));
    assert_eq!(r.severity.band, Some(Band::Major));
    assert_eq!((r.component.kind.as_str(), r.component.source.as_str()), ("lug", "context"));

    // A context that names nothing (a photo of a mug) stays unknown, with the reason.
    let r = analyze_ok(
        VisionServer::default(),
        json!({ "image": b64(&sample("rt_flir_example.jpg")), "context": "a mug of coffee" }),
    )
    .await;
    assert_eq!(r.equipment, Equipment::Unknown);
    assert!(r.equipment_reason.contains("names no kind of equipment"), "{}", r.equipment_reason);
    assert_eq!(r.severity.band, None);
}

#[tokio::test]
async fn a_pv_module_gets_an_iec_62446_3_class() {
    let bytes = sample("rt_zenmuse_xtr.jpg");
    let r =
        analyze_ok(VisionServer::default(), json!({ "image": b64(&bytes), "equipment": "pv-module" })).await;
    assert_eq!(r.equipment, Equipment::PvModule);
    assert_eq!(r.severity.standard, "IEC TS 62446-3");
    assert_eq!(r.severity.band, None, "no NETA band for a PV module");
    let class = r.severity.class.clone().expect("a class of abnormality");
    assert!(["CoA 1", "CoA 2", "CoA 3"].contains(&class.as_str()), "{class}");
    assert!(r.severity.criterion.contains("IEC TS 62446-3"), "{}", r.severity.criterion);
    assert!(r.failure_mode.kind.starts_with("pv-"), "{:?}", r.failure_mode);
    assert_eq!(r.component.group, "pv-module");
    println!("rt_zenmuse_xtr as a PV module: ΔT {:?} → {class}", r.delta_t_ref_c);
}

/// The equipment changes the criteria and the words, never a temperature.
#[test]
fn temperatures_do_not_depend_on_the_equipment() {
    use switchboard_servers::vision::{AnalyzeOptions, analyze};
    let mut names: Vec<_> = std::fs::read_dir(crate::common::data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".json") && !n.ends_with(".md"))
        .collect();
    names.sort();
    for name in names {
        let bytes = sample(&name);
        let base = analyze(&bytes, &AnalyzeOptions::default()).unwrap();
        for equipment in [Equipment::Panel, Equipment::PvModule, Equipment::MotorBearing, Equipment::Other] {
            let opts = AnalyzeOptions { equipment: Some(equipment), ..AnalyzeOptions::default() };
            let r = analyze(&bytes, &opts).unwrap();
            assert_eq!(
                (r.min_c, r.max_c, r.mean_c),
                (base.min_c, base.max_c, base.mean_c),
                "{name} {equipment:?}"
            );
            assert_eq!(r.delta_t_ref_c, base.delta_t_ref_c, "{name}");
            assert_eq!(r.hotspots, base.hotspots, "{name}");
            assert_eq!(r.reference, base.reference, "{name}");
        }
    }
}
