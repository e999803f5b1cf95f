//! A supervised child process speaking MCP on stdin/stdout.
//!
//! The supervisor starts the process, keeps the last lines of its stderr, notices when
//! it exits, fails the requests in flight with the exit status, and restarts it with
//! exponential backoff. The stderr tail is operator detail (it can hold secrets): it goes
//! into events and the status, never into an error's message. A process that keeps dying right after it
//! starts is a crash loop: after [`RestartPolicy::crash_loop_limit`] quick exits in a row
//! the supervisor gives up and reports why, naming the server ([`StdioConfig::name`]) and the
//! exit statuses — never the command line, whose arguments can hold secrets (tokens, paths).

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use switchboard_wire::Message;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::duplex::Duplex;
use crate::lines;
use crate::{Error, Exchange, Tap, TransportKind, Upstream, UpstreamEvent, UpstreamStatus};

/// When and how often to restart.
#[derive(Debug, Clone, PartialEq)]
pub struct RestartPolicy {
    /// Delay before the first restart.
    pub initial_backoff: Duration,
    /// Upper bound of the delay.
    pub max_backoff: Duration,
    /// A run shorter than this counts as a quick exit.
    pub quick_exit: Duration,
    /// Quick exits in a row after which the supervisor gives up.
    pub crash_loop_limit: u32,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(30),
            quick_exit: Duration::from_secs(3),
            crash_loop_limit: 5,
        }
    }
}

impl RestartPolicy {
    /// Backoff before restart number `attempt` (1-based): doubles each time.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(20));
        self.initial_backoff.saturating_mul(factor).min(self.max_backoff)
    }
}

/// How to start the child.
#[derive(Debug, Clone, PartialEq)]
pub struct StdioConfig {
    /// The server's name, used in reasons and logs instead of the command line (whose arguments
    /// can hold secrets).
    pub name: String,
    /// Program to run (looked up on `PATH`).
    pub command: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: BTreeMap<String, String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Restart policy.
    pub restart: RestartPolicy,
    /// Number of stderr lines kept.
    pub stderr_tail_lines: usize,
    /// Longest line accepted on stdout, in bytes.
    pub max_line_bytes: usize,
}

impl StdioConfig {
    /// A config with defaults for everything but the command line.
    pub fn new(command: impl Into<String>, args: Vec<String>) -> Self {
        StdioConfig {
            name: "stdio server".to_owned(),
            command: command.into(),
            args,
            env: BTreeMap::new(),
            cwd: None,
            restart: RestartPolicy::default(),
            stderr_tail_lines: 40,
            max_line_bytes: 64 * 1024 * 1024,
        }
    }

    /// The command line, for the operator only (logs, the stderr tail): never in a reason.
    fn display(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[derive(Debug, Default)]
struct ProcState {
    pid: Option<u32>,
    restarts: u32,
    stderr_tail: VecDeque<String>,
    last_error: Option<String>,
    gave_up: bool,
}

/// The stdio upstream.
pub struct StdioUpstream {
    duplex: Arc<Duplex>,
    state: Arc<Mutex<ProcState>>,
    events: broadcast::Sender<UpstreamEvent>,
    shutdown: CancellationToken,
    supervisor: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl StdioUpstream {
    /// Starts the supervisor (and the first process). Returns at once; wait for
    /// [`UpstreamEvent::Started`] or just send a request, which fails with
    /// [`Error::NotRunning`] until the process is up.
    pub fn spawn(config: StdioConfig, tap: Tap, shutdown: CancellationToken) -> Arc<Self> {
        let up = Arc::new(StdioUpstream {
            duplex: Duplex::new(tap),
            state: Arc::new(Mutex::new(ProcState::default())),
            events: broadcast::channel(64).0,
            shutdown,
            supervisor: Mutex::new(None),
        });
        let task = tokio::spawn(supervise(
            config,
            up.duplex.clone(),
            up.state.clone(),
            up.events.clone(),
            up.shutdown.clone(),
        ));
        *lock(&up.supervisor) = Some(task);
        up
    }

    /// Waits until the process is running (or the supervisor gave up).
    pub async fn wait_started(&self, timeout: Duration) -> Result<(), Error> {
        let mut ev = self.events.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.duplex.is_attached() {
                return Ok(());
            }
            if lock(&self.state).gave_up {
                return Err(Error::NotRunning {
                    detail: lock(&self.state).last_error.clone().unwrap_or_default(),
                });
            }
            match tokio::time::timeout_at(deadline, ev.recv()).await {
                Err(_) => return Err(Error::Timeout(timeout)),
                Ok(Err(broadcast::error::RecvError::Closed)) => return Err(Error::Closed),
                Ok(_) => {}
            }
        }
    }
}

fn tail_text(tail: &VecDeque<String>) -> String {
    tail.iter().cloned().collect::<Vec<_>>().join("\n")
}

async fn supervise(
    config: StdioConfig,
    duplex: Arc<Duplex>,
    state: Arc<Mutex<ProcState>>,
    events: broadcast::Sender<UpstreamEvent>,
    shutdown: CancellationToken,
) {
    let mut quick_exits = 0u32;
    // Exit statuses of the current streak of quick exits (the last few), for the give-up reason.
    let mut streak: VecDeque<String> = VecDeque::new();
    let mut generation = 0u64;
    loop {
        generation += 1;
        let started = Instant::now();
        let status = match start(&config) {
            Ok(child) => run_once(&config, child, &duplex, &state, &events, &shutdown, generation).await,
            Err(e) => {
                // The command line is the operator's (stderr tail); the status callers may see is not.
                lock(&state).stderr_tail.push_back(e.to_string());
                Some(match &e {
                    Error::Spawn { reason, .. } => format!("could not be started: {reason}"),
                    other => other.to_string(),
                })
            }
        };
        let Some(status) = status else {
            // Shut down on purpose.
            duplex.detach(Error::Closed);
            return;
        };
        let uptime = started.elapsed();
        let tail = tail_text(&lock(&state).stderr_tail);
        duplex.detach(Error::Exited { status: status.clone(), stderr_tail: tail.clone() });
        {
            let mut s = lock(&state);
            s.pid = None;
            s.last_error = Some(format!("exited ({status}) after {} ms", uptime.as_millis()));
        }
        let _ = events.send(UpstreamEvent::Exited {
            status: status.clone(),
            uptime_ms: uptime.as_millis() as u64,
            stderr_tail: tail.clone(),
        });
        if uptime < config.restart.quick_exit {
            quick_exits += 1;
            streak.push_back(status.clone());
            while streak.len() > STREAK_STATUSES {
                streak.pop_front();
            }
        } else {
            quick_exits = 0;
            streak.clear();
        }
        if quick_exits >= config.restart.crash_loop_limit {
            let reason = give_up_reason(&config, quick_exits, &streak);
            tracing::warn!(%reason, command = %config.display(), stderr = %tail, "giving up on stdio server");
            {
                let mut s = lock(&state);
                s.gave_up = true;
                s.last_error = Some(reason.clone());
            }
            duplex.detach(Error::NotRunning { detail: reason.clone() });
            let _ = events.send(UpstreamEvent::GaveUp { reason, stderr_tail: tail });
            return;
        }
        let attempt = quick_exits.max(1);
        let delay = config.restart.backoff(attempt);
        lock(&state).restarts += 1;
        duplex.detach(Error::NotRunning {
            detail: format!("exited ({status}); restarting in {} ms", delay.as_millis()),
        });
        let _ = events.send(UpstreamEvent::Restarting { attempt, delay_ms: delay.as_millis() as u64 });
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.cancelled() => { duplex.detach(Error::Closed); return; }
        }
    }
}

/// Exit statuses named in a give-up reason, at most.
const STREAK_STATUSES: usize = 5;

/// Why the supervisor gave up: the server's name and the exit statuses of the streak, never the
/// command line.
fn give_up_reason(config: &StdioConfig, quick_exits: u32, streak: &VecDeque<String>) -> String {
    let statuses = streak.iter().map(String::as_str).collect::<Vec<_>>().join("; ");
    let earlier = (quick_exits as usize).saturating_sub(streak.len());
    let more = if earlier > 0 { format!(" and {earlier} earlier") } else { String::new() };
    format!(
        "stdio server `{}` exited {quick_exits} times in a row within {:?} of starting (exit statuses: {statuses}{more})",
        config.name, config.restart.quick_exit,
    )
}

fn start(config: &StdioConfig) -> Result<Child, Error> {
    let mut cmd = Command::new(&config.command);
    cmd.args(&config.args)
        .envs(&config.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = &config.cwd {
        cmd.current_dir(dir);
    }
    cmd.spawn().map_err(|e| Error::Spawn { command: config.display(), reason: e.to_string() })
}

/// Runs one process to its end. Returns its exit status, or `None` on shutdown.
async fn run_once(
    config: &StdioConfig,
    mut child: Child,
    duplex: &Arc<Duplex>,
    state: &Arc<Mutex<ProcState>>,
    events: &broadcast::Sender<UpstreamEvent>,
    shutdown: &CancellationToken,
    generation: u64,
) -> Option<String> {
    let pid = child.id();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Some("child has no stdio pipes".into());
    };
    {
        let mut s = lock(state);
        s.pid = pid;
        s.stderr_tail.clear();
        s.last_error = None;
    }
    let (wtx, writer) = lines::spawn_writer(stdin);
    let reader = lines::spawn_reader(stdout, duplex.clone(), config.max_line_bytes);
    let tail_lines = config.stderr_tail_lines;
    let err_state = state.clone();
    let stderr_task = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(target: "switchboard::upstream::stderr", "{line}");
            let mut s = lock(&err_state);
            let mut line = line;
            if line.len() > 1000 {
                let cut = (0..=1000).rev().find(|i| line.is_char_boundary(*i)).unwrap_or(0);
                line.truncate(cut);
            }
            s.stderr_tail.push_back(line);
            while s.stderr_tail.len() > tail_lines {
                s.stderr_tail.pop_front();
            }
        }
    });
    duplex.attach(wtx);
    let _ = events.send(UpstreamEvent::Started { pid, generation });
    tracing::info!(server = %config.name, ?pid, generation, command = %config.display(), "stdio server started");
    let status = tokio::select! {
        st = child.wait() => Some(st.map(|s| s.to_string()).unwrap_or_else(|e| format!("wait failed: {e}"))),
        _ = shutdown.cancelled() => None,
    };
    if status.is_none() {
        // Graceful stop: close stdin, give the process a moment, then kill it.
        duplex.detach(Error::Closed);
        writer.abort();
        if tokio::time::timeout(Duration::from_secs(2), child.wait()).await.is_err() {
            let _ = child.kill().await;
        }
    }
    writer.abort();
    // Let the stderr reader drain what the process wrote before dying.
    let _ = tokio::time::timeout(Duration::from_millis(500), stderr_task).await;
    let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
    status
}

fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[async_trait]
impl Upstream for StdioUpstream {
    fn kind(&self) -> TransportKind {
        TransportKind::Stdio
    }

    async fn request(&self, msg: Message) -> Result<Exchange, Error> {
        self.duplex.request(msg).await
    }

    async fn send(&self, msg: Message) -> Result<(), Error> {
        self.duplex.send(&msg).await
    }

    fn incoming(&self) -> broadcast::Receiver<Message> {
        self.duplex.incoming()
    }

    fn events(&self) -> broadcast::Receiver<UpstreamEvent> {
        self.events.subscribe()
    }

    fn asked_client(&self) -> bool {
        self.duplex.asked()
    }

    fn status(&self) -> UpstreamStatus {
        let s = lock(&self.state);
        UpstreamStatus {
            connected: self.duplex.is_attached(),
            pid: s.pid,
            restarts: s.restarts,
            memory_bytes: s.pid.and_then(rss_bytes),
            stderr_tail: s.stderr_tail.iter().cloned().collect(),
            last_error: s.last_error.clone(),
            session_id: None,
        }
    }

    fn pid(&self) -> Option<u32> {
        lock(&self.state).pid
    }

    async fn close(&self) {
        self.shutdown.cancel();
        let task = lock(&self.supervisor).take();
        if let Some(t) = task {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RestartPolicy {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            ..Default::default()
        };
        assert_eq!(p.backoff(1), Duration::from_millis(100));
        assert_eq!(p.backoff(2), Duration::from_millis(200));
        assert_eq!(p.backoff(4), Duration::from_millis(800));
        assert_eq!(p.backoff(5), Duration::from_secs(1));
        assert_eq!(p.backoff(50), Duration::from_secs(1));
    }
}
