//! Watch streams: history from the log, then live batches from the writer, with a hand-off
//! that neither skips nor repeats a revision.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use super::read::{Readers, log_page};
use crate::{Error, Event, Result, Revision, WatchStream};

/// Where the stream's next events come from.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// The log in the database, up to the current revision of the read's snapshot.
    LogToCurrent,
    /// The log in the database, up to this revision.
    LogUntil(Revision),
    /// Batches from the writer as they commit.
    Live,
}

struct Watcher {
    readers: Arc<Readers>,
    live: broadcast::Receiver<Arc<[Event]>>,
    prefix: String,
    /// Every change at or below this has been delivered (or was not under the prefix).
    last: Revision,
    source: Source,
    pending: VecDeque<Event>,
    ended: bool,
}

/// A stream of the changes under `prefix` after `after`. `live` must have been subscribed
/// before the stream reads the log (it does so on its first poll).
pub(super) fn stream(
    readers: Arc<Readers>,
    live: broadcast::Receiver<Arc<[Event]>>,
    prefix: String,
    after: Revision,
) -> WatchStream {
    let watcher = Watcher {
        readers,
        live,
        prefix,
        last: after,
        source: Source::LogToCurrent,
        pending: VecDeque::new(),
        ended: false,
    };
    Box::pin(futures::stream::unfold(watcher, |mut watcher| async move {
        let item = watcher.next().await?;
        Some((item, watcher))
    }))
}

impl Watcher {
    async fn next(&mut self) -> Option<Result<Event>> {
        loop {
            if self.ended {
                return None;
            }
            if let Some(event) = self.pending.pop_front() {
                return Some(Ok(event));
            }
            let until = match self.source {
                Source::LogToCurrent => None,
                Source::LogUntil(until) => Some(until),
                Source::Live => {
                    if let Err(error) = self.receive().await {
                        self.ended = true;
                        return Some(Err(error));
                    }
                    continue;
                }
            };
            if let Err(error) = self.read_log(until).await {
                // A failed stream yields one error and ends; the caller resumes from the last
                // revision it saw.
                self.ended = true;
                return Some(Err(error));
            }
        }
    }

    /// Reads one page of history after `last`.
    async fn read_log(&mut self, until: Option<Revision>) -> Result<()> {
        let prefix = self.prefix.clone();
        let after = self.last;
        let page = self
            .readers
            .read(move |tx| log_page(tx, &prefix, after, until))
            .await?;
        self.pending.extend(page.events);
        self.last = self.last.max(page.read_up_to);
        self.source = if page.complete {
            Source::Live
        } else {
            Source::LogUntil(page.until)
        };
        Ok(())
    }

    /// Takes the next live batch, or switches back to the log when batches were missed.
    async fn receive(&mut self) -> Result<()> {
        match self.live.recv().await {
            Ok(batch) => {
                let (Some(first), Some(newest)) = (batch.first(), batch.last()) else {
                    return Ok(());
                };
                if first.revision() > self.last + 1 {
                    // Revisions between what was delivered and this batch never arrived (they
                    // can't, by construction, but the log has them if they ever don't).
                    self.source = Source::LogUntil(newest.revision());
                    return Ok(());
                }
                let last = self.last;
                self.pending.extend(
                    batch
                        .iter()
                        .filter(|event| {
                            event.revision() > last && event.kv.key.starts_with(&self.prefix)
                        })
                        .cloned(),
                );
                self.last = self.last.max(newest.revision());
                Ok(())
            }
            // The channel dropped batches this watcher had not taken: they are in the log.
            Err(RecvError::Lagged(_)) => {
                self.source = Source::LogToCurrent;
                Ok(())
            }
            Err(RecvError::Closed) => Err(Error::Closed),
        }
    }
}
