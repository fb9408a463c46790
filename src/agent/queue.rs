//! The pull queue (deltachat-style): an agent's events, losslessly and in order, for a host that
//! reads them on its own thread or task instead of in a listener.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;

use super::{Agent, Inner};
use crate::error::{Error, ErrorKind};
use crate::event::AgentEvent;
use crate::host::{Delivery, EventRef, ImmediateListener};
use crate::sync::lock;

struct Items {
    events: VecDeque<Arc<AgentEvent>>,
    closed: bool,
}

/// The queue's state, shared by its listener (the producer) and its readers.
pub(super) struct Shared {
    items: Mutex<Items>,
    /// Wakes blocking readers.
    ready: crate::sync::Signal,
    /// Wakes async readers.
    readable: tokio::sync::Notify,
    /// Wakes the producer waiting for room.
    space: tokio::sync::Notify,
    capacity: usize,
}

impl Shared {
    pub(super) fn close(&self) {
        lock(&self.items).closed = true;
        self.ready.notify_all();
        self.readable.notify_waiters();
        self.readable.notify_one();
        self.space.notify_one();
    }

    /// Queues a copy of `event` when there is room (or the queue is closed): `false` when full.
    fn try_enqueue(&self, event: &AgentEvent) -> bool {
        let mut items = lock(&self.items);
        if items.closed {
            return true;
        }
        if items.events.len() >= self.capacity {
            return false;
        }
        items.events.push_back(Arc::new(event.clone()));
        drop(items);
        self.ready.notify_all();
        self.readable.notify_one();
        true
    }

    async fn enqueue(&self, event: Arc<AgentEvent>) {
        loop {
            {
                let mut items = lock(&self.items);
                if items.closed {
                    return;
                }
                if items.events.len() < self.capacity {
                    items.events.push_back(event);
                    drop(items);
                    self.ready.notify_all();
                    self.readable.notify_one();
                    return;
                }
            }
            // Full: the loop waits (backpressure) until a reader takes an event.
            self.space.notified().await;
        }
    }

    /// Takes the next event; `Err(closed)` when there is none.
    fn pop(&self, items: &mut Items) -> Result<Arc<AgentEvent>, bool> {
        match items.events.pop_front() {
            Some(event) => {
                self.space.notify_one();
                Ok(event)
            }
            None => Err(items.closed),
        }
    }
}

/// A lossless, ordered queue of one agent's events. Enqueueing counts as delivery: the queue
/// never fails a run, and when it is full the loop waits until an event is taken. It closes
/// when the agent shuts down or the queue is dropped; events queued before stay readable.
pub struct EventQueue {
    shared: Arc<Shared>,
    agent: Weak<Inner>,
    subscription: u64,
}

impl Agent {
    /// Opens a pull queue holding at most `capacity` (≥ 1) unread events. Fails with
    /// `InvalidState` once the agent was shut down.
    pub fn open_events(&self, capacity: usize) -> Result<EventQueue, Error> {
        let shared = Arc::new(Shared {
            items: Mutex::new(Items {
                events: VecDeque::new(),
                closed: false,
            }),
            ready: crate::sync::Signal::default(),
            readable: tokio::sync::Notify::new(),
            space: tokio::sync::Notify::new(),
            capacity: capacity.max(1),
        });
        let feeder = shared.clone();
        // Delivered at once while the queue has room; when full the loop waits for a reader.
        let listener: ImmediateListener = Arc::new(move |delivered: EventRef, _signal| {
            if feeder.try_enqueue(delivered.event) {
                return Delivery::Now(Ok(()));
            }
            let feeder = feeder.clone();
            let event = Arc::new(delivered.event.clone());
            Delivery::Later(Box::pin(async move {
                feeder.enqueue(event).await;
                Ok(())
            }))
        });
        let subscription = self.subscribe_immediate(listener);
        // Registered under the state lock, where `shutdown` marks the agent: a shutdown racing
        // this call either sees the queue (and closes it) or this call fails.
        let mut state = self.state();
        if let Some(reason) = &state.shut_down {
            let error = Error::new(ErrorKind::InvalidState, reason.clone());
            drop(state);
            self.unsubscribe(subscription);
            return Err(error);
        }
        state.queues.push(Arc::downgrade(&shared));
        drop(state);
        Ok(EventQueue {
            shared,
            agent: Arc::downgrade(&self.inner),
            subscription,
        })
    }
}

impl EventQueue {
    /// Takes the next event, waiting up to `timeout` (`None`: forever; zero: no wait).
    /// `Timeout` when none arrived, `Closed` once the queue is closed and empty, and
    /// `WouldDeadlock` when it would wait on the runtime thread.
    pub fn next_blocking(&self, timeout: Option<Duration>) -> Result<Arc<AgentEvent>, Error> {
        if timeout != Some(Duration::ZERO) && crate::runtime::is_runtime_thread() {
            return Err(Error::new(
                ErrorKind::WouldDeadlock,
                "Reading the event queue would wait on the runtime thread.",
            ));
        }
        let items = lock(&self.shared.items);
        let waiting = |items: &mut Items| items.events.is_empty() && !items.closed;
        let mut items = match timeout {
            None => self
                .shared
                .ready
                .wait_while(items, waiting)
                .unwrap_or_else(|e| e.into_inner()),
            Some(timeout) => {
                self.shared
                    .ready
                    .wait_timeout_while(items, timeout, waiting)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
        self.shared.pop(&mut items).map_err(|closed| {
            if closed {
                Error::new(ErrorKind::Closed, "The event queue is closed.")
            } else {
                Error::new(ErrorKind::Timeout, "No event arrived in time.")
            }
        })
    }

    /// Takes the next event, waiting asynchronously; `None` once the queue is closed and empty.
    pub async fn next(&self) -> Option<Arc<AgentEvent>> {
        loop {
            let readable = self.shared.readable.notified();
            if let Some(answer) = {
                let mut items = lock(&self.shared.items);
                match self.shared.pop(&mut items) {
                    Ok(event) => Some(Some(event)),
                    Err(true) => Some(None),
                    Err(false) => None,
                }
            } {
                return answer;
            }
            readable.await;
        }
    }

    /// The events as a `futures::Stream`, ending when the queue closes.
    pub fn into_stream(self) -> BoxStream<'static, Arc<AgentEvent>> {
        futures::stream::unfold(self, |queue| async move {
            let event = queue.next().await?;
            Some((event, queue))
        })
        .boxed()
    }

    /// Closes the queue: its subscription ends (a loop waiting for room resumes); events
    /// already queued stay readable.
    pub fn close(&self) {
        self.shared.close();
        if let Some(inner) = self.agent.upgrade() {
            let agent = Agent { inner };
            agent.unsubscribe(self.subscription);
            agent
                .state()
                .queues
                .retain(|q| q.upgrade().is_some_and(|q| !Arc::ptr_eq(&q, &self.shared)));
        }
    }
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        self.close();
    }
}
