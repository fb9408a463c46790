//! The JSON text of a stream request, as a host stream function receives it:
//! `{"model","context":{"messages"},"options"}`, byte-identical to rendering the whole request,
//! but built from each message's kept text. An agent keeps the text of its last request, so the
//! next one (in a chat: the same transcript and a few messages more) copies only what is new.

use std::sync::{Arc, Mutex, Weak};

use crate::cost_canary::{cost_canary_on, Canary};
use crate::host::StreamRequest;
use crate::json::Json;
use crate::message::{ListMark, Message, MessageIdentity, MessageList};
use crate::sync::lock;

/// The text of an agent's last request, kept for its next one, its messages under the default
/// conversion (the next request's list is built on them: see `Run::shared_conversion`), and the
/// last run's working transcript (the next run's is built on it: see `Agent::start_run`).
#[derive(Default)]
pub struct RequestTextCache {
    text: Mutex<Option<Box<Rendered>>>,
    messages: Mutex<KeptList>,
    context: Mutex<Option<MessageList>>,
}

/// A request's messages under the default conversion, and the transcript they were converted
/// from (`None`: not kept for a next request).
#[derive(Default, Clone)]
pub struct KeptList {
    pub messages: Arc<Vec<Message>>,
    pub source: Option<ListMark>,
}

/// A request's text, NUL-terminated, and what its messages part was made from.
struct Rendered {
    /// The model rendered (its address is not reused while this is held).
    model: Weak<Json>,
    /// The transcript the messages rendered were converted from, when the request said.
    source: Option<ListMark>,
    /// The messages rendered, in order.
    messages: Vec<MessageIdentity>,
    /// Where the last message's text ends: what follows is the request's own tail.
    messages_end: usize,
    text: String,
}

impl std::fmt::Debug for RequestTextCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestTextCache")
    }
}

impl RequestTextCache {
    /// Lends `request`'s text (NUL-terminated) to `lend`, reusing the kept text as far as its
    /// messages begin the request's. No lock is held while `lend` runs (it runs host code).
    pub fn lend<R>(&self, request: &StreamRequest, lend: impl FnOnce(&[u8]) -> R) -> R {
        let kept = lock(&self.text).take().map(|kept| *kept);
        let kept = kept.filter(|_| !cost_canary_on(Canary::Transcript));
        let source = {
            let list = lock(&self.messages);
            let same = Arc::ptr_eq(&list.messages, &request.messages);
            same.then(|| list.source.clone()).flatten()
        };
        let rendered = render(kept, request, source);
        let result = lend(rendered.text.as_bytes());
        *lock(&self.text) = Some(Box::new(rendered));
        result
    }

    /// The last request's message list (taken: the caller puts the next one back).
    pub fn take_messages(&self) -> KeptList {
        std::mem::take(&mut *lock(&self.messages))
    }

    /// Keeps `list` for the next request.
    pub fn keep_messages(&self, list: KeptList) {
        let replaced = std::mem::replace(&mut *lock(&self.messages), list);
        drop(replaced); // after the lock
    }

    /// Keeps a run's working transcript for the next run's to be built on.
    pub fn keep_context(&self, messages: MessageList) {
        let replaced = lock(&self.context).replace(messages);
        drop(replaced);
    }

    /// The last run's working transcript (taken).
    pub fn take_context(&self) -> Option<MessageList> {
        lock(&self.context).take()
    }
}

/// The request's text without its terminator, built afresh.
pub fn json_text(request: &StreamRequest) -> String {
    let mut text = render(None, request, None).text;
    text.pop();
    text
}

/// `request`'s text, built on `kept`: its messages part is kept when the request's messages
/// begin with the same ones under the same model; otherwise its buffer is reused. `source` is
/// the transcript the request's messages were converted from, when known: a kept text from the
/// start of it is continued without comparing the messages.
fn render(kept: Option<Rendered>, request: &StreamRequest, source: Option<ListMark>) -> Rendered {
    let model = model_text(&request.model);
    let options = crate::json::to_string(&request.options);
    let continues = |kept: &Rendered| {
        let from_source = match (&kept.source, &source) {
            (Some(before), Some(now)) => before.begins(now),
            _ => false,
        };
        std::ptr::eq(kept.model.as_ptr(), Arc::as_ptr(&request.model))
            && kept.messages.len() <= request.messages.len()
            && (from_source
                || kept
                    .messages
                    .iter()
                    .zip(request.messages.iter())
                    .all(|(identity, message)| identity.is(message)))
    };
    let mut rendered = match kept {
        Some(mut kept) if continues(&kept) => {
            kept.text.truncate(kept.messages_end);
            kept
        }
        kept => {
            let head = model.len() + 34;
            let messages: usize = request.messages.iter().map(|m| m.text().len() + 1).sum();
            // Room for the tail too: the text is lent without growing again.
            let wanted = head + messages + options.len() + 16;
            let mut text = kept.map(|kept| kept.text).unwrap_or_default();
            text.clear();
            // A buffer far larger than needed (a transcript since cut short) is not kept.
            if text.capacity() > 2 * wanted {
                text = String::new();
            }
            text.reserve(wanted);
            text.push_str("{\"model\":");
            text.push_str(&model);
            text.push_str(",\"context\":{\"messages\":[");
            Rendered {
                model: Arc::downgrade(&request.model),
                source: None,
                messages: Vec::with_capacity(request.messages.len()),
                messages_end: text.len(),
                text,
            }
        }
    };
    let new = &request.messages[rendered.messages.len()..];
    rendered
        .text
        .reserve(new.iter().map(|m| m.text().len() + 1).sum::<usize>() + options.len() + 16);
    for message in new {
        if !rendered.messages.is_empty() {
            rendered.text.push(',');
        }
        rendered.text.push_str(message.text());
        rendered.messages.push(message.identity());
    }
    rendered.messages_end = rendered.text.len();
    rendered.source = source;
    rendered.text.push_str("]},\"options\":");
    rendered.text.push_str(&options);
    // The terminator of the C string the host receives: JSON text holds no other NUL (the
    // renderer escapes it as \u0000).
    rendered.text.push_str("}\0");
    rendered
}

/// The text of `model`, rendered once per model value: agents hold their model interned (one
/// shared value for equal models), so consecutive requests, of one agent or of many, name the
/// same value. The last one is kept per thread; its weak reference keeps the value's address from
/// being reused and the value from being changed in place, so the same address is the same text.
fn model_text(model: &Arc<Json>) -> Arc<str> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(Weak<Json>, Arc<str>)>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((weak, text)) = last.as_ref() {
            if std::ptr::eq(weak.as_ptr(), Arc::as_ptr(model)) {
                return text.clone();
            }
        }
        let text: Arc<str> = crate::json::to_string(model).into();
        *last = Some((Arc::downgrade(model), text.clone()));
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::AbortSignal;
    use crate::json::{json, object, to_string};
    use crate::message::Message;

    #[test]
    fn the_model_text_follows_the_model_value() {
        let first = Arc::new(json!({"id": "a"}));
        let second = Arc::new(json!({"id": "b"}));
        assert_eq!(&*model_text(&first), r#"{"id":"a"}"#);
        assert_eq!(&*model_text(&first), r#"{"id":"a"}"#);
        assert_eq!(&*model_text(&second), r#"{"id":"b"}"#);
        assert_eq!(&*model_text(&first), r#"{"id":"a"}"#);
        // A value changed in place moves to a new address (the kept weak reference sees to it).
        let _ = model_text(&first);
        let mut changed = first;
        Arc::make_mut(&mut changed)["id"] = json!("c");
        assert_eq!(&*model_text(&changed), r#"{"id":"c"}"#);
        // A value dropped and another made: never mistaken for the old one.
        drop(changed);
        let fresh = Arc::new(json!({"id": "d"}));
        assert_eq!(&*model_text(&fresh), r#"{"id":"d"}"#);
    }

    fn request(model: &Arc<Json>, messages: &[Message], options: Json) -> StreamRequest {
        StreamRequest {
            model: model.clone(),
            messages: messages.to_vec().into(),
            options,
            signal: AbortSignal::new(),
            text_cache: None,
        }
    }

    /// The whole request rendered as one tree.
    fn whole(request: &StreamRequest) -> String {
        to_string(&object([
            ("model", (*request.model).clone()),
            ("context", request.context()),
            ("options", request.options.clone()),
        ]))
    }

    fn message(n: usize) -> Message {
        Message::new(json!({"role": "user", "content": format!("m{n} \"q\" \u{2028}")}))
    }

    #[test]
    fn request_text_is_the_rendering_of_the_whole_request() {
        let messages = vec![
            Message::new(
                json!({"role": "user", "content": "h\u{0}i \"q\" \u{2028}", "n": 1.5e300}),
            ),
            Message::new(json!({"role": "assistant", "content": [], "x": {"2": 1, "a": null}})),
        ];
        let model = Arc::new(json!({"id": "m", "cost": {"input": 0.1}}));
        let request = request(&model, &messages, json!({"identity": {}}));
        assert_eq!(json_text(&request), whole(&request));
        // The cached texts are reused by the next request.
        assert_eq!(json_text(&request), whole(&request));
        let empty = StreamRequest {
            messages: Default::default(),
            ..request
        };
        assert_eq!(json_text(&empty), whole(&empty));
    }

    /// What `lend` gives, without its terminator (which it must end with).
    fn lent(cache: &RequestTextCache, request: &StreamRequest) -> String {
        cache.lend(request, |bytes| {
            assert_eq!(bytes.last(), Some(&0), "the lent text ends with NUL");
            assert!(!bytes[..bytes.len() - 1].contains(&0));
            String::from_utf8(bytes[..bytes.len() - 1].to_vec()).unwrap()
        })
    }

    #[test]
    fn a_kept_text_gives_every_request_its_whole_rendering() {
        let cache = RequestTextCache::default();
        let model = Arc::new(json!({"id": "m"}));
        let all: Vec<Message> = (0..6).map(message).collect();
        // Requests in a chat's order, then every way a transcript can stop continuing the last.
        let steps: Vec<(Arc<Json>, Vec<Message>, Json)> = vec![
            (model.clone(), vec![], json!({})),
            (model.clone(), all[..1].to_vec(), json!({"apiKey": "k"})),
            (model.clone(), all[..3].to_vec(), json!({})),
            (model.clone(), all[..3].to_vec(), json!({"sessionId": "s"})),
            // A message replaced (the same content, another value: rendered again).
            (
                model.clone(),
                vec![all[0].clone(), all[1].clone(), message(2), all[3].clone()],
                json!({}),
            ),
            // Cut short, then a different beginning.
            (model.clone(), all[..2].to_vec(), json!({})),
            (model.clone(), all[1..5].to_vec(), json!({})),
            // Another model with the same messages.
            (
                Arc::new(json!({"id": "other"})),
                all[1..6].to_vec(),
                json!({}),
            ),
            (model.clone(), all.clone(), json!({})),
        ];
        for (model, messages, options) in steps {
            let request = request(&model, &messages, options);
            assert_eq!(lent(&cache, &request), whole(&request));
        }
    }

    #[test]
    fn a_continued_transcript_copies_only_its_new_messages() {
        let cache = RequestTextCache::default();
        let model = Arc::new(json!({"id": "m"}));
        let all: Vec<Message> = (0..3).map(message).collect();
        lent(&cache, &request(&model, &all[..2], json!({})));
        // Mark the kept text of the first message: a request that continues the transcript
        // shows the mark (its text was kept), one that does not shows the message again.
        {
            let mut kept = lock(&cache.text);
            let text = &mut kept.as_mut().unwrap().text;
            let at = text.find("m0 ").unwrap();
            text.replace_range(at..at + 2, "M0");
        }
        assert!(lent(&cache, &request(&model, &all, json!({}))).contains("M0 "));
        let other = Arc::new(json!({"id": "other"}));
        let rebuilt = request(&other, &all, json!({}));
        assert_eq!(lent(&cache, &rebuilt), whole(&rebuilt));
    }

    /// Lent from several threads at once (one agent's requests never overlap, but nothing must
    /// break if they did): each call gets its own request's whole text.
    #[test]
    fn concurrent_lends_each_get_their_own_request() {
        let cache = Arc::new(RequestTextCache::default());
        let model = Arc::new(json!({"id": "m"}));
        let all: Arc<Vec<Message>> = Arc::new((0..8).map(message).collect());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (cache, model, all) = (cache.clone(), model.clone(), all.clone());
                std::thread::spawn(move || {
                    for round in 0..200 {
                        let len = (round * (t + 1)) % (all.len() + 1);
                        let request = request(&model, &all[..len], json!({"t": t}));
                        assert_eq!(lent(&cache, &request), whole(&request));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }

    #[test]
    fn kept_identities_do_not_keep_messages() {
        let cache = RequestTextCache::default();
        let model = Arc::new(json!({"id": "m"}));
        let held = message(0);
        lent(
            &cache,
            &request(&model, std::slice::from_ref(&held), json!({})),
        );
        drop(held);
        let kept = lock(&cache.text);
        assert!(!kept.as_ref().unwrap().messages[0].is_alive());
    }
}
