//! The thermal diagnosis as a service of the app: [`Diagnosis`] runs the default flow
//! (vision → knowledge → reasoning, `assets/flows/thermal-diagnosis.toml`) on an uploaded
//! image, for the `switchboard diagnose` command and the panel's routes ([`routes`]) alike.
//!
//! [`App::build`](crate::App::build) makes the app's one service from its parts: its invoker (tools through the one routing seam), its store (every
//! run is recorded as it goes, failed ones included — a corrupt image ends as a failed run
//! carrying the reader's error), its event bus (the engine's observer: every node event
//! becomes an `Event::FlowProgress`; the service adds an `Event::FlowRun` when a run is
//! admitted and once its end is stored) and its blobs (the image travels as `blob:<sha256>`,
//! which vision reads from the blob directory).
//!
//! [`Diagnosis::start`] runs in the background and answers with the run id at once (the id
//! carries OS randomness, so it can be handed out before the run exists). Each run has its
//! own cancellation token ([`Diagnosis::cancel`]); at most [`DiagnosisConfig::max_running`]
//! runs go at once, beyond that starting one is refused with [`DiagnosisError::Busy`].
//! Background runs are tracked: [`Diagnosis::shutdown`] cancels and awaits them;
//! [`App::shutdown`](crate::App::shutdown) calls it after the listeners drained and before it
//! stops the servers the runs call.

pub mod routes;
pub mod thermal;
pub mod typescript;
pub mod view;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value, json};
use switchboard_flow::{Engine, Flow, FlowError, FlowFile, RunEvent, RunOptions, RunOutcome, RunRecord};
use switchboard_flow::{RunSink, StoreSink};
use switchboard_router::{Event, EventBus};
use switchboard_store::Store;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::blobs::{BlobError, BlobStore};
use crate::invoker::RegistryInvoker;
pub use thermal::{MAX_VIEW_PIXELS, ThermalView, ThermalViewError};
pub use view::{FlowGraph, RunRequest, RunSummary, RunView};

/// The default flow, shipped in the binary.
pub const DEFAULT_FLOW: &str = include_str!("../../../assets/flows/thermal-diagnosis.toml");
/// Its name in error messages.
pub const DEFAULT_FLOW_NAME: &str = "assets/flows/thermal-diagnosis.toml";
/// Runs going at once by default.
pub const DEFAULT_MAX_RUNNING: usize = 4;
/// Most runs `GET /api/runs` lists at once.
pub const MAX_LISTED_RUNS: u32 = 1000;

/// How the service is set up.
#[derive(Debug, Clone)]
pub struct DiagnosisConfig {
    /// Runs going at once, at most; starting one more is refused ([`DiagnosisError::Busy`]).
    pub max_running: usize,
}

impl Default for DiagnosisConfig {
    fn default() -> Self {
        DiagnosisConfig { max_running: DEFAULT_MAX_RUNNING }
    }
}

/// Why a diagnosis request was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiagnosisError {
    /// The flow does not load against the live tools (a server down, a bad flow file).
    #[error(transparent)]
    Flow(FlowError),
    /// The run input does not match the flow's input schema (an unknown equipment kind, …).
    #[error(transparent)]
    Input(FlowError),
    /// The image is not a `blob:<sha256>` reference.
    #[error("the image must be a blob reference `blob:<sha256>` (upload it to /api/blobs first), not {0:?}")]
    NotABlob(String),
    /// No blob of that id is stored.
    #[error("no blob {0} is stored (upload it to /api/blobs first)")]
    UnknownBlob(String),
    /// The blob store refused or failed.
    #[error(transparent)]
    Blob(#[from] BlobError),
    /// The image has no thermal view.
    #[error(transparent)]
    Thermal(#[from] ThermalViewError),
    /// [`DiagnosisConfig::max_running`] runs are going already.
    #[error(
        "{0} diagnosis runs are in progress already, the most this router runs at once; retry when one ends"
    )]
    Busy(usize),
    /// No run of that id is known.
    #[error("no run {0}")]
    UnknownRun(String),
    /// The run to cancel has ended.
    #[error("run {run_id} already ended ({outcome})")]
    Ended {
        /// The run.
        run_id: String,
        /// How it ended.
        outcome: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] switchboard_store::Error),
    /// The OS random source failed.
    #[error("the OS random source failed: {0}")]
    Random(String),
    /// The thermal reader's task died (a bug in the reader; the message says how).
    #[error("the thermal reader's task failed: {0}")]
    ReaderTask(String),
    /// The service is shutting down.
    #[error("the router is shutting down; no new diagnosis runs start")]
    ShuttingDown,
}

/// A run going in this process.
#[derive(Debug)]
struct Live {
    cancel: CancellationToken,
    /// The node being called now.
    current: Option<String>,
}

struct Inner {
    invoker: RegistryInvoker,
    events: EventBus,
    engine: Engine,
    store: Store,
    sink: Arc<StoreSink>,
    blobs: BlobStore,
    flow_file: FlowFile,
    live: Mutex<HashMap<String, Live>>,
    max_running: usize,
    tasks: TaskTracker,
    stop: CancellationToken,
}

/// The diagnosis service (see the module docs). Cheap to clone; clones share runs.
#[derive(Clone)]
pub struct Diagnosis {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Diagnosis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Diagnosis")
            .field("running", &self.live().len())
            .field("max_running", &self.inner.max_running)
            .finish_non_exhaustive()
    }
}

/// A fresh run id: the start time in hex (ids sort by time) and 64 bits from the OS.
fn new_run_id() -> Result<String, DiagnosisError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| DiagnosisError::Random(e.to_string()))?;
    Ok(format!("{:012x}-{:016x}", crate::now_ms(), u64::from_be_bytes(bytes)))
}

/// The blob id of a `blob:<sha256>` reference.
fn blob_id(image: &str) -> Result<&str, DiagnosisError> {
    image.strip_prefix("blob:").ok_or_else(|| DiagnosisError::NotABlob(image.to_owned()))
}

impl Diagnosis {
    /// The service over an invoker, the store, the event bus and the blobs. [`App::build`](crate::App::build)
    /// makes the app's one service ([`App::diagnosis`](crate::App::diagnosis)).
    pub fn new(
        invoker: RegistryInvoker,
        store: Store,
        events: EventBus,
        blobs: BlobStore,
        config: DiagnosisConfig,
    ) -> Diagnosis {
        let sink = Arc::new(StoreSink::new(store.clone()));
        let engine = Engine::new(Arc::new(invoker.clone()))
            .with_sink(sink.clone())
            .with_observer(Arc::new(events.clone()));
        // The embedded default is part of the binary and checked by the tests; a parse error
        // here would be a build mistake, and leaves the graph empty rather than failing start-up.
        let flow_file = toml::from_str(DEFAULT_FLOW).unwrap_or_else(|e| {
            tracing::error!(error = %e, "the embedded default flow does not parse");
            FlowFile {
                name: "thermal-diagnosis".into(),
                description: None,
                input: json!({"type": "object"}),
                nodes: Vec::new(),
                edges: Vec::new(),
            }
        });
        Diagnosis {
            inner: Arc::new(Inner {
                invoker,
                events,
                engine,
                store,
                sink,
                blobs,
                flow_file,
                live: Mutex::new(HashMap::new()),
                max_running: config.max_running.max(1),
                tasks: TaskTracker::new(),
                stop: CancellationToken::new(),
            }),
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.inner.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The blob store images are uploaded to.
    pub fn blobs(&self) -> &BlobStore {
        &self.inner.blobs
    }

    /// Loads a flow (the default one when `path` is `None`), validated against the live tools.
    ///
    /// # Errors
    /// [`DiagnosisError::Flow`]: unreadable, invalid, or a tool that does not resolve now.
    pub fn load_flow(&self, path: Option<&Path>) -> Result<Flow, DiagnosisError> {
        let invoker = &self.inner.invoker;
        match path {
            Some(p) => Flow::load(p, invoker),
            None => Flow::from_file(DEFAULT_FLOW_NAME, self.inner.flow_file.clone(), invoker),
        }
        .map_err(DiagnosisError::Flow)
    }

    /// The default flow's graph, its tools resolved when they resolve now.
    pub fn graph(&self) -> FlowGraph {
        FlowGraph::new(&self.inner.flow_file, self.load_flow(None).ok().as_ref())
    }

    /// The run input of a request.
    fn input_of(request: &RunRequest) -> Value {
        let mut input = Map::new();
        input.insert("image".into(), json!(request.image));
        if let Some(e) = &request.equipment {
            input.insert("equipment".into(), json!(e));
        }
        if let Some(a) = request.ambient_c {
            input.insert("ambient_c".into(), json!(a));
        }
        if let Some(e) = request.emissivity {
            input.insert("emissivity".into(), json!(e));
        }
        if let Some(c) = &request.context {
            input.insert("context".into(), json!(c));
        }
        Value::Object(input)
    }

    /// Registers a run under the bound; its token.
    fn admit(&self, run_id: &str) -> Result<CancellationToken, DiagnosisError> {
        if self.inner.stop.is_cancelled() {
            return Err(DiagnosisError::ShuttingDown);
        }
        let mut live = self.live();
        if live.len() >= self.inner.max_running {
            return Err(DiagnosisError::Busy(self.inner.max_running));
        }
        let cancel = self.inner.stop.child_token();
        live.insert(run_id.to_owned(), Live { cancel: cancel.clone(), current: None });
        Ok(cancel)
    }

    /// Runs `flow` on `input` under `run_id` to the end, following its events (and passing
    /// them on to `events`), then forgets the run.
    async fn drive(
        &self,
        flow: &Flow,
        input: Value,
        run_id: String,
        cancel: CancellationToken,
        events: Option<mpsc::Sender<RunEvent>>,
    ) -> RunRecord {
        let (tx, mut rx) = mpsc::channel(64);
        let follow = async {
            while let Some(event) = rx.recv().await {
                let current = match &event {
                    RunEvent::NodeStarted { node, .. } => Some(Some(node.clone())),
                    RunEvent::NodeFinished { .. } => Some(None),
                    _ => None,
                };
                if let Some(current) = current
                    && let Some(live) = self.live().get_mut(&run_id)
                {
                    live.current = current;
                }
                if let Some(events) = &events {
                    let _ = events.send(event).await;
                }
            }
        };
        self.publish(&run_id, flow.name(), RunOutcome::Running, None);
        let options = RunOptions { cancel, events: Some(tx), run_id: Some(run_id.clone()) };
        let (record, ()) = tokio::join!(self.inner.engine.run(flow, input, options), follow);
        self.live().remove(&run_id);
        // The engine has stored the end by now: whoever reads the run on this event finds it ended.
        self.publish(&run_id, flow.name(), record.outcome, record.error.clone());
        record
    }

    fn publish(&self, run_id: &str, flow: &str, outcome: RunOutcome, error: Option<String>) {
        self.inner.events.publish_with(|| Event::FlowRun {
            run_id: run_id.to_owned(),
            flow: flow.to_owned(),
            status: outcome.as_str().to_owned(),
            error,
            at_ms: crate::now_ms(),
        });
    }

    /// Starts a run of the default flow on `request` in the background and returns its id at
    /// once; progress goes to the event bus, the record to the store.
    ///
    /// # Errors
    /// [`DiagnosisError::NotABlob`], [`DiagnosisError::UnknownBlob`], [`DiagnosisError::Input`]
    /// (refused before anything runs or is stored), [`DiagnosisError::Flow`] (a tool of the
    /// flow is unavailable), [`DiagnosisError::Busy`], [`DiagnosisError::ShuttingDown`].
    pub async fn start(&self, request: RunRequest) -> Result<String, DiagnosisError> {
        let id = blob_id(&request.image)?;
        let path = self.inner.blobs.path_of(id)?;
        if !tokio::fs::try_exists(&path).await.unwrap_or(false) {
            return Err(DiagnosisError::UnknownBlob(id.to_owned()));
        }
        let flow = self.load_flow(None)?;
        let input = Diagnosis::input_of(&request);
        flow.check_input(&input).map_err(DiagnosisError::Input)?;
        let run_id = new_run_id()?;
        let cancel = self.admit(&run_id)?;
        let this = self.clone();
        let id = run_id.clone();
        self.inner.tasks.spawn(async move {
            let record = this.drive(&flow, input, id, cancel, None).await;
            tracing::info!(run_id = %record.run_id, outcome = %record.outcome, "diagnosis run ended");
        });
        Ok(run_id)
    }

    /// Runs `flow` on `input` in the foreground (the `diagnose` command), recorded and
    /// published like a background run, its events also sent to `events`.
    ///
    /// # Errors
    /// [`DiagnosisError::Busy`], [`DiagnosisError::ShuttingDown`], [`DiagnosisError::Random`].
    pub async fn run(
        &self,
        flow: &Flow,
        input: Value,
        events: Option<mpsc::Sender<RunEvent>>,
    ) -> Result<RunRecord, DiagnosisError> {
        let run_id = new_run_id()?;
        let cancel = self.admit(&run_id)?;
        Ok(self.drive(flow, input, run_id, cancel, events).await)
    }

    /// Records a run that failed before the flow could start (an image the blob store
    /// refused), so it shows in the run history like any other.
    ///
    /// # Errors
    /// [`DiagnosisError::Random`].
    pub async fn record_refused(
        &self,
        flow: &Flow,
        input: Value,
        reason: String,
    ) -> Result<RunRecord, DiagnosisError> {
        let now = crate::now_ms();
        let mut record = RunRecord {
            run_id: new_run_id()?,
            flow: flow.name().to_owned(),
            input,
            started_at_ms: now,
            finished_at_ms: None,
            outcome: RunOutcome::Running,
            error: None,
            nodes: Vec::new(),
        };
        let sink = &self.inner.sink;
        if let Err(error) = sink.run_started(&record).await {
            tracing::warn!(run_id = %record.run_id, %error, "recording a refused run failed");
        }
        record.outcome = RunOutcome::Failed;
        record.error = Some(reason);
        record.finished_at_ms = Some(crate::now_ms());
        if let Err(error) = sink.run_finished(&record).await {
            tracing::warn!(run_id = %record.run_id, %error, "recording a refused run failed");
        }
        self.publish(&record.run_id, flow.name(), record.outcome, record.error.clone());
        Ok(record)
    }

    /// Cancels a run in progress: its running call is cancelled upstream, the nodes not yet
    /// started are skipped, it ends `cancelled`.
    ///
    /// # Errors
    /// [`DiagnosisError::Ended`] when it already ended, [`DiagnosisError::UnknownRun`].
    pub async fn cancel(&self, run_id: &str) -> Result<(), DiagnosisError> {
        if let Some(live) = self.live().get(run_id) {
            live.cancel.cancel();
            return Ok(());
        }
        match self.inner.store.run(run_id).await? {
            Some((run, _)) => Err(DiagnosisError::Ended { run_id: run.run_id, outcome: run.outcome }),
            None => Err(DiagnosisError::UnknownRun(run_id.to_owned())),
        }
    }

    /// Stored runs, newest first, failed ones included (at most [`MAX_LISTED_RUNS`]).
    ///
    /// # Errors
    /// [`DiagnosisError::Store`].
    pub async fn runs(&self, limit: u32) -> Result<Vec<RunSummary>, DiagnosisError> {
        let runs = self.inner.store.runs(limit.min(MAX_LISTED_RUNS)).await?;
        Ok(runs.iter().map(RunSummary::of).collect())
    }

    /// One run with its nodes and result; a run just started and not stored yet shows as
    /// running with its nodes pending.
    ///
    /// # Errors
    /// [`DiagnosisError::UnknownRun`], [`DiagnosisError::Store`].
    pub async fn run_view(&self, run_id: &str) -> Result<RunView, DiagnosisError> {
        let current = self.live().get(run_id).map(|l| l.current.clone());
        let file = &self.inner.flow_file;
        match self.inner.store.run(run_id).await? {
            Some((run, nodes)) => Ok(RunView::new(&run, &nodes, Some(file), current.flatten().as_deref())),
            None if current.is_some() => {
                let run = switchboard_store::StoredRun {
                    run_id: run_id.to_owned(),
                    flow: file.name.clone(),
                    input: Value::Null,
                    started_at_ms: crate::now_ms(),
                    finished_at_ms: None,
                    outcome: RunOutcome::Running.as_str().to_owned(),
                    error: None,
                };
                Ok(RunView::new(&run, &[], Some(file), None))
            }
            None => Err(DiagnosisError::UnknownRun(run_id.to_owned())),
        }
    }

    /// The thermal view of blob `sha256` (decoded off the async workers).
    ///
    /// # Errors
    /// [`DiagnosisError::Blob`] (not a blob id), [`DiagnosisError::UnknownBlob`],
    /// [`DiagnosisError::Thermal`] (the reader's error, or a frame over [`MAX_VIEW_PIXELS`]).
    pub async fn thermal(&self, sha256: &str) -> Result<ThermalView, DiagnosisError> {
        let bytes = self
            .inner
            .blobs
            .get(sha256)
            .await?
            .ok_or_else(|| DiagnosisError::UnknownBlob(sha256.to_owned()))?;
        let id = sha256.to_owned();
        let view = tokio::task::spawn_blocking(move || thermal::thermal_view(&id, &bytes))
            .await
            .map_err(|e| DiagnosisError::ReaderTask(e.to_string()))??;
        Ok(view)
    }

    /// Runs going now.
    pub fn running(&self) -> usize {
        self.live().len()
    }

    /// Refuses new runs, cancels the ones going and waits for them to be recorded, at most
    /// `deadline`. [`App::shutdown`](crate::App::shutdown) calls it before it stops the servers.
    pub async fn shutdown(&self, deadline: Duration) {
        self.inner.stop.cancel();
        self.inner.tasks.close();
        if tokio::time::timeout(deadline, self.inner.tasks.wait()).await.is_err() {
            tracing::warn!("diagnosis runs still going at the shutdown deadline");
        }
    }
}
