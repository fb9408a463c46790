//! Assistant stream: the channel a stream function pushes into, and its consumption by the loop
//! (SPEC §3). Assembly of host events into partial/final messages lives in `assemble`, the
//! partial message in `partial`, the update event a `message_update` carries in `update`; this
//! module adds the channel, the consumed notification and the response timing (SPEC §3.5).

pub mod assemble;
pub mod partial;
pub mod typed;
pub mod update;

use crate::json::Field;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::Instant;

use compact_str::CompactString;

use crate::json::{json, number_value, Json, JsonMap};
use crate::sync::lock;
use assemble::Assembler;
pub use assemble::StreamOutput;
pub use partial::{BlockKind, PartialSnapshot};
pub use update::UpdateEvent;

/// What a producer pushes, with the time a terminal item was pushed (the response's end for
/// `durationMs`; other pushes do not read the clock). Large payloads are boxed: every item is
/// moved through the channel, and a delta's must stay small.
#[derive(Debug)]
enum Pushed {
    /// A stream event; the time when it is terminal (`done` or `error`).
    Event(Box<Json>, Option<Instant>),
    Op(StreamOp),
    End(Option<Box<Json>>, Instant),
    Fail(String, Instant),
}

type ConsumedFn = Arc<dyn Fn() + Send + Sync>;

struct Shared {
    closed: AtomicBool,
    /// Pushed items the loop has not taken yet (read only by `backlog`: relaxed).
    queued: AtomicUsize,
    channel: Mutex<Channel>,
    /// Whether `on_consumed` holds a callback: the loop looks at the slot only then.
    has_on_consumed: AtomicBool,
    on_consumed: Mutex<Option<ConsumedFn>>,
    on_close: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

/// Pushed items are kept in chunks of this many: the queue grows without copying what it holds.
const CHUNK: usize = 64;

/// The items on their way to the loop, and what wakes it.
struct Channel {
    /// Chunks of at most `CHUNK` items (none empty), oldest first.
    items: VecDeque<Vec<Pushed>>,
    /// The loop waiting for an item.
    waker: Option<Waker>,
    /// Live senders: when the last one is dropped the stream ends.
    senders: usize,
}

/// A change to the partial message pushed without JSON: what a built-in provider (or a typed
/// host push) does instead of sending a delta-form event. Each maps onto SPEC §3.7's rules.
#[derive(Debug, Clone)]
pub enum StreamOp {
    /// Sets top-level fields of the partial (`responseId`, `usage`, `stopReason`...). No event.
    SetFields(Vec<(&'static str, Json)>),
    /// Sets a field of block `index` (a streamed signature). No event.
    SetBlockField {
        index: usize,
        key: &'static str,
        value: Box<Json>,
    },
    /// Appends `text` to the string field `key` of block `index` (a signature streamed in
    /// pieces; O(piece) each). No event.
    AppendBlockField {
        index: usize,
        key: &'static str,
        text: Box<str>,
    },
    /// Places `block` (a text, thinking or toolCall object, possibly with extra fields such as a
    /// signature) at `index` and emits its `*_start`.
    StartBlock { index: usize, block: Box<JsonMap> },
    /// `text_delta`, `thinking_delta` or `toolcall_delta`, chosen by the block's type.
    Delta { index: usize, delta: CompactString },
    /// `text_end`, `thinking_end` or `toolcall_end` (arguments finalised per SPEC §3.9).
    EndBlock { index: usize },
    /// Replaces the argument text of tool-call block `index` with `text` (a server's complete
    /// arguments that do not continue the streamed ones). No event.
    ReplaceArguments { index: usize, text: String },
    /// Exactly the delta-form `{kind}_delta` event `{"type", "contentIndex": index, "delta"}`,
    /// failures included (e.g. `Received text_delta for non-text content`): what a typed host
    /// push (`agent_stream_push_text_delta` & co.) stands for.
    KindDelta {
        kind: BlockKind,
        index: usize,
        delta: CompactString,
    },
    /// Exactly the delta-form `{kind}_end` event `{"type", "contentIndex": index}`.
    KindEnd { kind: BlockKind, index: usize },
}

/// The push after the loop stopped consuming (terminal event seen, run over, agent freed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamClosed;

impl std::fmt::Display for StreamClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("The stream is closed: the agent no longer consumes it.")
    }
}

/// The producer side of one request's stream. Cloneable, usable from any thread; pushes never
/// block. Dropping every sender ends the stream.
pub struct StreamSender {
    shared: Arc<Shared>,
}

impl Clone for StreamSender {
    fn clone(&self) -> Self {
        lock(&self.shared.channel).senders += 1;
        StreamSender {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for StreamSender {
    fn drop(&mut self) {
        let waker = {
            let mut channel = lock(&self.shared.channel);
            channel.senders -= 1;
            if channel.senders > 0 {
                return;
            }
            channel.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl StreamSender {
    #[inline]
    fn send(&self, pushed: Pushed) -> Result<(), StreamClosed> {
        if self.is_closed() {
            return Err(StreamClosed);
        }
        self.shared.queued.fetch_add(1, Ordering::Relaxed);
        let waker = {
            let mut channel = lock(&self.shared.channel);
            match channel.items.back_mut() {
                Some(chunk) if chunk.len() < CHUNK => chunk.push(pushed),
                _ => {
                    let mut chunk = Vec::with_capacity(CHUNK);
                    chunk.push(pushed);
                    channel.items.push_back(chunk);
                }
            }
            channel.waker.take()
        };
        // Woken outside the lock: the loop may run on this very thread.
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// How many pushed items the loop has not taken yet (0 once it stopped consuming).
    pub fn backlog(&self) -> usize {
        if self.is_closed() {
            0
        } else {
            self.shared.queued.load(Ordering::Relaxed)
        }
    }

    /// Pushes one assistant stream event (full or delta form, SPEC §3.2, §3.7).
    pub fn push(&self, event: Json) -> Result<(), StreamClosed> {
        let terminal = matches!(
            event.field("type").and_then(Json::as_str),
            Some("done" | "error")
        );
        self.send(Pushed::Event(Box::new(event), terminal.then(Instant::now)))
    }

    /// Applies one change to the partial message (see [`StreamOp`]).
    #[inline]
    pub fn push_op(&self, op: StreamOp) -> Result<(), StreamClosed> {
        self.send(Pushed::Op(op))
    }

    /// Ends the stream without a terminal event; `final_message` is the explicit final message
    /// (SPEC §3.5), `None` applies the libagent rule.
    pub fn end(&self, final_message: Option<Json>) -> Result<(), StreamClosed> {
        self.send(Pushed::End(final_message.map(Box::new), Instant::now()))
    }

    /// Before any push: the stream function failed with `message` (SPEC §6.12). After a push:
    /// an `error` event with `errorMessage` = `message`.
    pub fn fail(&self, message: &str) -> Result<(), StreamClosed> {
        self.send(Pushed::Fail(message.to_string(), Instant::now()))
    }

    /// Registers the consumed notification: called on the runtime thread each time a pushed
    /// item has been fully processed by the agent (its event delivered to every listener).
    pub fn on_consumed(&self, callback: impl Fn() + Send + Sync + 'static) {
        let mut slot = lock(&self.shared.on_consumed);
        let old = slot.replace(Arc::new(callback));
        self.shared.has_on_consumed.store(true, Ordering::Release);
        drop(slot);
        // Dropped after the lock was released: its finalizer is host code.
        drop(old);
    }

    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    /// Registers a callback run once when the loop stops consuming (at once if it already has).
    pub fn on_close(&self, callback: impl FnOnce() + Send + 'static) {
        let mut slot = lock(&self.shared.on_close);
        if self.is_closed() {
            drop(slot);
            callback();
        } else {
            *slot = Some(Box::new(callback));
        }
    }
}

/// The consumer side, owned by the loop for one request.
pub struct StreamReceiver {
    /// Chunks taken from the channel in one go, and the one being read: not processed yet.
    batch: VecDeque<Vec<Pushed>>,
    current: std::vec::IntoIter<Pushed>,
    /// Items processed since the loop last gave its thread back.
    streak: u32,
    shared: Arc<Shared>,
    assembler: Assembler,
    created_at: Instant,
    created_wall_ms: f64,
    received_any: bool,
}

/// Creates a request's stream; the creation time is the stream's `T0` (SPEC §3.5).
pub fn channel(model: &Json) -> (StreamSender, StreamReceiver) {
    let shared = Arc::new(Shared {
        closed: AtomicBool::new(false),
        queued: AtomicUsize::new(0),
        channel: Mutex::new(Channel {
            items: VecDeque::new(),
            waker: None,
            senders: 1,
        }),
        has_on_consumed: AtomicBool::new(false),
        on_consumed: Mutex::new(None),
        on_close: Mutex::new(None),
    });
    let created_wall_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0);
    let receiver = StreamReceiver {
        batch: VecDeque::new(),
        current: Vec::new().into_iter(),
        streak: 0,
        shared: shared.clone(),
        assembler: Assembler::new(model),
        created_at: Instant::now(),
        created_wall_ms,
        received_any: false,
    };
    (StreamSender { shared }, receiver)
}

/// Items processed in a row before the loop gives its thread back to the runtime's other tasks
/// (a burst of pushed items must not starve them).
pub(crate) const STREAK: u32 = 128;

impl StreamReceiver {
    /// The next pushed item already taken from the channel, if any.
    fn ready(&mut self) -> Option<Pushed> {
        loop {
            if let Some(pushed) = self.current.next() {
                self.shared.queued.fetch_sub(1, Ordering::Relaxed);
                return Some(pushed);
            }
            self.current = self.batch.pop_front()?.into_iter();
        }
    }

    /// The next pushed item; `None` once every sender is gone and nothing is left.
    async fn take(&mut self) -> Option<Pushed> {
        if self.streak >= STREAK {
            self.streak = 0;
            crate::dispatch::yield_now().await;
        }
        self.streak += 1;
        loop {
            if let Some(pushed) = self.ready() {
                return Some(pushed);
            }
            let batch = &mut self.batch;
            let shared = &self.shared;
            let open = std::future::poll_fn(|cx| {
                let mut channel = lock(&shared.channel);
                if !channel.items.is_empty() {
                    // Everything pushed so far, in one lock.
                    std::mem::swap(&mut channel.items, batch);
                    return Poll::Ready(true);
                }
                if channel.senders == 0 {
                    return Poll::Ready(false);
                }
                if !channel
                    .waker
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    channel.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            })
            .await;
            if !open {
                return self.ready();
            }
        }
    }

    /// The next item when one was pushed already, without building a future: `None` when the
    /// loop must wait (`next`), or give its thread back after a long run of items.
    pub fn try_next(&mut self) -> Option<StreamOutput> {
        if self.streak >= STREAK {
            return None;
        }
        if self.current.len() == 0 && self.batch.is_empty() {
            let mut channel = lock(&self.shared.channel);
            std::mem::swap(&mut channel.items, &mut self.batch);
        }
        let pushed = self.ready()?;
        self.streak += 1;
        Some(self.interpret(Some(pushed)))
    }

    /// Waits for the next pushed item and interprets it.
    pub async fn next(&mut self) -> StreamOutput {
        let pushed = self.take().await;
        self.interpret(pushed)
    }

    fn interpret(&mut self, pushed: Option<Pushed>) -> StreamOutput {
        let first = !self.received_any;
        self.received_any = true;
        // When a terminal item was pushed; a response ended by a non-terminal item (a failing
        // delta, the senders gone) ends now.
        let mut at = None;
        // Built in place and changed there when final (no copy of an update on its way out).
        let mut output = match pushed {
            Some(Pushed::Op(op)) => self.assembler.apply(op),
            Some(Pushed::Event(event, pushed_at)) => {
                at = pushed_at;
                self.assembler.accept(*event)
            }
            Some(Pushed::End(message, pushed_at)) => {
                at = Some(pushed_at);
                self.assembler.end(message.map(|m| *m))
            }
            Some(Pushed::Fail(message, _)) if first => {
                return StreamOutput::FunctionFailed(message)
            }
            Some(Pushed::Fail(message, pushed_at)) => {
                at = Some(pushed_at);
                let event = json!({"type": "error", "reason": "error", "errorMessage": message});
                self.assembler.accept(event)
            }
            // Every sender is gone without a terminal event (SPEC §3.5 [libagent]).
            None => self.assembler.end(None),
        };
        if let StreamOutput::Final { message, .. } = &mut output {
            self.close();
            self.apply_duration(message, at.unwrap_or_else(Instant::now));
        }
        output
    }

    /// The partial message as of the last update.
    pub fn partial(&self) -> &partial::Partial {
        self.assembler.partial()
    }

    /// Gives up on an unanswered stream (`abortGraceMs` passed after an abort): the final
    /// message is the current partial, aborted with `Request was aborted`.
    pub fn give_up(&mut self) -> StreamOutput {
        let event =
            json!({"type": "error", "reason": "aborted", "errorMessage": "Request was aborted"});
        match self.assembler.accept(event) {
            StreamOutput::Final {
                mut message,
                started,
            } => {
                self.close();
                self.apply_duration(&mut message, Instant::now());
                StreamOutput::Final { message, started }
            }
            _ => StreamOutput::Ignored,
        }
    }

    /// SPEC §3.5: `durationMs` only when absent and the message is not older than the stream.
    fn apply_duration(&self, message: &mut Json, at: Instant) {
        let Some(object) = message.as_object_mut() else {
            return;
        };
        if object.field("durationMs").is_some() {
            return;
        }
        let timestamp = object
            .field("timestamp")
            .and_then(Json::as_number)
            .map(number_value);
        if timestamp.is_some_and(|t| t >= self.created_wall_ms) {
            let elapsed = at.saturating_duration_since(self.created_at).as_secs_f64() * 1000.0;
            object.insert("durationMs".into(), json!((elapsed + 0.5).floor() as u64));
        }
    }

    /// Tells the producer that the last item was fully processed.
    pub fn consumed(&self) {
        let callback = lock(&self.shared.on_consumed).clone();
        if let Some(callback) = callback {
            callback();
        }
    }

    /// `consumed`, awaited by the loop: a host-pumped run whose dispatch budget is spent gives
    /// the host its frame back before calling the producer's callback.
    pub async fn notify_consumed(&self) {
        if !self.shared.has_on_consumed.load(Ordering::Acquire) {
            return;
        }
        crate::dispatch::before_callback().await;
        self.consumed();
    }

    /// Stops consuming: later pushes fail with `StreamClosed`.
    pub fn close(&self) {
        let callback = {
            let mut slot = lock(&self.shared.on_close);
            self.shared.closed.store(true, Ordering::SeqCst);
            slot.take()
        };

        if let Some(callback) = callback {
            callback();
        }
    }
}

impl Drop for StreamReceiver {
    fn drop(&mut self) {
        self.close();
        // Dropping the consumed callback breaks the cycle a producer holding its own sender
        // inside that callback would otherwise form.
        let callback = lock(&self.shared.on_consumed).take();
        drop(callback);
    }
}
