//! One request in flight: the messages that relate to it, then its response.
//!
//! Dropping an [`Exchange`] before its response arrived cancels the request the way the
//! transport defines it (`notifications/cancelled` on stdio, WebSocket and legacy HTTP;
//! closing the response stream on 2026-07-28 HTTP).

use std::sync::{Arc, OnceLock};

use switchboard_wire::Message;
use tokio::sync::mpsc;

use crate::Error;

/// What to do when an unfinished exchange is dropped.
pub(crate) type CancelFn = Box<dyn FnOnce() + Send + Sync>;

/// The stream of messages answering one request.
pub struct Exchange {
    rx: mpsc::Receiver<Result<Message, Error>>,
    cancel: Option<CancelFn>,
    done: bool,
    id: String,
    /// Set by the transport when this exchange failed without a message in its buffer's
    /// place (its caller fell behind, or the buffer was full when the connection dropped).
    failure: Option<Arc<OnceLock<Error>>>,
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange").field("id", &self.id).field("done", &self.done).finish()
    }
}

impl Exchange {
    pub(crate) fn new(
        rx: mpsc::Receiver<Result<Message, Error>>,
        id: String,
        cancel: Option<CancelFn>,
    ) -> Self {
        Exchange { rx, cancel, done: false, id, failure: None }
    }

    /// Lets the transport fail this exchange out of band (see the `failure` field).
    pub(crate) fn with_failure(mut self, failure: Arc<OnceLock<Error>>) -> Self {
        self.failure = Some(failure);
        self
    }

    fn failure(&self) -> Option<Error> {
        self.failure.as_ref().and_then(|f| f.get()).cloned()
    }

    /// The next message: interim notifications (progress, log messages), server requests
    /// (legacy sampling/elicitation/roots during the call), and finally the response.
    /// `None` after the response.
    pub async fn next(&mut self) -> Option<Result<Message, Error>> {
        if self.done {
            return None;
        }
        if let Some(e) = self.failure() {
            self.done = true;
            return Some(Err(e));
        }
        match self.rx.recv().await {
            Some(Ok(m)) => {
                if m.is_response() {
                    self.done = true;
                }
                Some(Ok(m))
            }
            Some(Err(e)) => {
                self.done = true;
                Some(Err(e))
            }
            None => {
                self.done = true;
                Some(Err(self.failure().unwrap_or_else(|| Error::StreamClosed { id: self.id.clone() })))
            }
        }
    }

    /// Waits for the response, discarding interim messages.
    pub async fn response(mut self) -> Result<Message, Error> {
        loop {
            match self.next().await {
                Some(Ok(m)) if m.is_response() => return Ok(m),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e),
                None => return Err(Error::StreamClosed { id: self.id.clone() }),
            }
        }
    }

    /// `true` once the response (or a failure) has been delivered.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if !self.done
            && let Some(cancel) = self.cancel.take()
        {
            cancel();
        }
    }
}
