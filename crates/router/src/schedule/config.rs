//! The scheduler's settings (the `[router]` table's scheduling keys).

use std::time::Duration;

/// Default window during which one affinity key stays on one upstream.
pub const DEFAULT_AFFINITY_WINDOW: Duration = Duration::from_secs(300);
/// Default load score above which an upstream is overloaded.
pub const DEFAULT_OVERLOAD_THRESHOLD: f64 = 150.0;
/// Default number of fallback steps (capabilities dropped) before giving up.
pub const DEFAULT_MAX_FALLBACK_RETRIES: u32 = 3;
/// Default load-sampling interval (how often registered servers send status reports).
pub const DEFAULT_LOAD_SAMPLING_INTERVAL: Duration = Duration::from_secs(5);

/// How the scheduler chooses among replicas.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfig {
    /// Fallback steps (optional, then core capabilities dropped) before a call fails.
    pub max_fallback_retries: u32,
    /// How long an affinity key stays on the upstream it was given.
    pub affinity_window: Duration,
    /// Load score above which an upstream receives no new keys.
    pub overload_threshold: f64,
    /// Success rate of a key on its upstream below which the key moves.
    pub min_success_rate: f64,
    /// How often registered servers report their load; a report older than three intervals
    /// is ignored.
    pub load_sampling_interval: Duration,
    /// Whether servers with identical `serverInfo.name` and tool sets form a replica group
    /// without declaring one.
    pub detect_replicas: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            max_fallback_retries: DEFAULT_MAX_FALLBACK_RETRIES,
            affinity_window: DEFAULT_AFFINITY_WINDOW,
            overload_threshold: DEFAULT_OVERLOAD_THRESHOLD,
            min_success_rate: 0.95,
            load_sampling_interval: DEFAULT_LOAD_SAMPLING_INTERVAL,
            detect_replicas: true,
        }
    }
}

impl SchedulerConfig {
    /// Age beyond which a status report is stale.
    pub fn report_max_age(&self) -> Duration {
        self.load_sampling_interval * 3
    }
}
