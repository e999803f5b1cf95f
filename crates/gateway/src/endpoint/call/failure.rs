//! How a forwarded call failed, as far as retrying it is concerned: whether the request can
//! have run upstream, and whether the upstream asked to be left alone for a while.

use switchboard_transport::Error;

/// Why the upstream exchange of a call ended without a response from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The request never reached the server's handler (no connection, no process): retrying
    /// it anywhere is safe.
    NotDelivered,
    /// The server refused it up front as overloaded or unavailable (HTTP 429/503): safe to
    /// retry, after a backoff.
    Refused,
    /// The request was sent and the exchange broke: it may have run.
    MayHaveRun,
}

impl Failure {
    /// The failure behind a transport error.
    pub(crate) fn of(e: &Error) -> Failure {
        if e.overloaded() {
            Failure::Refused
        } else if e.not_delivered() {
            Failure::NotDelivered
        } else {
            Failure::MayHaveRun
        }
    }

    /// Whether the request may have run upstream.
    pub(crate) fn may_have_run(self) -> bool {
        self == Failure::MayHaveRun
    }
}
