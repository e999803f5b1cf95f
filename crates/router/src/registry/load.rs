//! The registry's side of servers' load (see [`crate::load`]): status reports stored, draining
//! switched (which rebuilds the routes).

use std::sync::atomic::Ordering;

use super::Registry;
use crate::load::LoadReport;

impl Registry {
    /// Stores a server's status report; `false` when no such server.
    pub fn report_load(&self, id_or_name: &str, report: LoadReport) -> bool {
        let Some(entry) = self.entry(id_or_name) else { return false };
        entry.load.report(report);
        true
    }

    /// Starts or stops draining a server: while draining it gets no new calls (routes are
    /// rebuilt), the calls in flight finish. `false` when no such server.
    pub fn set_draining(&self, id_or_name: &str, on: bool) -> bool {
        let Some(entry) = self.entry(id_or_name) else { return false };
        if entry.load.set_draining(on) {
            self.inner.version.fetch_add(1, Ordering::Release);
            self.inner.changed.notify_waiters();
        }
        true
    }
}
