//! Flow runs on the bus: the [`EventBus`] is the flow engine's [`RunObserver`], and each node
//! event of a run becomes an [`Event::FlowProgress`].
//!
//! The flow crate defines the observer and knows nothing of this bus (it stays testable with
//! fakes and free of the router); the event model, which already gathers the payload types of
//! the transport and the store, implements it here, as it implements the transport's
//! [`FrameSink`](switchboard_transport::FrameSink). The app hands the bus to its engine.
//!
//! Run-level events (`run_started`, `run_finished`) are not node progress; they reach the
//! run's own channel and the run record, not the bus.

use switchboard_flow::{NodeOutcome, RunEvent, RunObserver};

use super::{Event, EventBus, now_ms};

impl RunObserver for EventBus {
    fn active(&self) -> bool {
        EventBus::active(self)
    }

    fn observe(&self, event: &RunEvent) {
        if let Some(e) = progress_event(event) {
            self.publish(e);
        }
    }
}

/// The `FlowProgress` event of a node event; `None` for run-level events.
pub fn progress_event(event: &RunEvent) -> Option<Event> {
    let (run_id, node, status, progress, elapsed_ms, message) = match event {
        RunEvent::NodeStarted { run_id, node, tool } => {
            (run_id, node, "running", None, Some(0), Some(format!("calling {tool}")))
        }
        RunEvent::NodeProgress { run_id, node, progress, total, message } => {
            let fraction = total.filter(|t| *t > 0.0).map(|t| (progress / t).clamp(0.0, 1.0));
            (run_id, node, "progress", fraction, None, message.clone())
        }
        RunEvent::NodeRetrying { run_id, node, attempt, error, delay_ms } => {
            let line = format!("attempt {attempt} failed: {error}; retrying in {delay_ms} ms");
            (run_id, node, "retrying", None, None, Some(line))
        }
        RunEvent::NodeFinished { run_id, node, outcome, latency_ms, error } => {
            let status = match outcome {
                NodeOutcome::Ok => "succeeded",
                NodeOutcome::Failed => "failed",
                NodeOutcome::Skipped => "skipped",
                NodeOutcome::Cancelled => "cancelled",
                NodeOutcome::Pending => "pending",
            };
            (run_id, node, status, None, Some(*latency_ms), error.clone())
        }
        _ => return None,
    };
    Some(Event::FlowProgress {
        run_id: run_id.clone(),
        node: node.clone(),
        status: status.to_owned(),
        progress,
        elapsed_ms,
        message,
        at_ms: now_ms(),
    })
}
