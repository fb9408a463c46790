//! A transcript's message list that knows how it was made, so that what a run keeps from one
//! request to the next (the message list under the default conversion, the request's text, the
//! agent's own tool declarations) is checked against the transcript in O(1), not by walking it.
//!
//! Every list belongs to a *lineage*: a list made from scratch (or changed other than by an
//! append) starts one; a clone shares it, and an append keeps it while the message appended is
//! the one any list of the lineage appended at that index first (the agent's state and a run's
//! context receive the same messages in the same order). So two lists of one lineage agree on
//! their common length, and a list seen before (a [`ListMark`]: its lineage and length) begins
//! a list now when they share the lineage and it was not longer. A list starts its lineage when
//! it is first cloned or marked: one that never is (an idle agent's) costs nothing more.

use std::sync::{Arc, Mutex, OnceLock};

use super::{Message, MessageIdentity};
use crate::sync::lock;

/// What the lists of one lineage share.
struct Lineage {
    /// Length of the list that started the lineage: every list of it begins with those messages.
    base: usize,
    /// The messages appended since, in order, each as the first list to append at its index
    /// appended it. Weak: the addresses are not reused while this lives, so an equal address is
    /// the same message.
    appended: Mutex<Vec<MessageIdentity>>,
}

impl Lineage {
    fn starting_at(base: usize) -> Arc<Lineage> {
        Arc::new(Lineage {
            base,
            appended: Mutex::default(),
        })
    }
}

/// Where a list stood: a list of the same lineage at least this long begins with the messages
/// it had. Holding a mark keeps no message alive.
#[derive(Clone)]
pub struct ListMark {
    lineage: Arc<Lineage>,
    len: usize,
}

impl ListMark {
    /// The mark's length (how many messages the list had).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the list marked was empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when the list this marks began the list `later` marks (O(1)).
    pub fn begins(&self, later: &ListMark) -> bool {
        Arc::ptr_eq(&self.lineage, &later.lineage) && self.len <= later.len
    }
}

impl std::fmt::Debug for ListMark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListMark").field("len", &self.len).finish()
    }
}

/// Where the system messages are, kept on every change: each request reads the tool
/// declarations they carry, and finds them without a walk over the transcript.
#[derive(Clone, Default, Debug, PartialEq)]
struct Systems {
    first: Option<usize>,
    /// The others' (most transcripts have one system message at most: no allocation).
    more: Vec<usize>,
}

impl Systems {
    fn of(messages: &[Message]) -> Systems {
        let mut systems = Systems::default();
        for (index, message) in messages.iter().enumerate() {
            systems.note(index, message);
        }
        systems
    }

    fn note(&mut self, index: usize, message: &Message) {
        if message.is_system() {
            match self.first {
                None => self.first = Some(index),
                Some(_) => self.more.push(index),
            }
        }
    }

    fn indices(&self) -> impl Iterator<Item = usize> + Clone + '_ {
        self.first.into_iter().chain(self.more.iter().copied())
    }
}

/// A list of committed messages read as a slice; changed by [`push`](Self::push) and
/// [`extend`](Self::extend) (appends) or [`edit`](Self::edit) (anything else).
pub struct MessageList {
    messages: Vec<Message>,
    /// Started when the list is first cloned or marked, with the messages it has then.
    lineage: OnceLock<Arc<Lineage>>,
    systems: Systems,
}

impl MessageList {
    pub fn new(messages: Vec<Message>) -> MessageList {
        MessageList {
            lineage: OnceLock::new(),
            systems: Systems::of(&messages),
            messages,
        }
    }

    fn lineage(&self) -> &Arc<Lineage> {
        self.lineage
            .get_or_init(|| Lineage::starting_at(self.messages.len()))
    }

    /// Appends `message` (O(1) amortized).
    pub fn push(&mut self, message: Message) {
        let index = self.messages.len();
        let follows = self.lineage.get().is_none_or(|lineage| {
            let mut appended = lock(&lineage.appended);
            match appended.get(index - lineage.base) {
                Some(first) => first.is(&message),
                None => {
                    appended.push(message.identity());
                    true
                }
            }
        });
        self.systems.note(index, &message);
        self.messages.push(message);
        if !follows {
            // Another list of the lineage appended another message here: this one starts its
            // own when it is next cloned or marked.
            self.lineage = OnceLock::new();
        }
    }

    /// Appends each of `messages`.
    pub fn extend(&mut self, messages: impl IntoIterator<Item = Message>) {
        for message in messages {
            self.push(message);
        }
    }

    /// Changes the list in any way (O(length)): it starts a lineage of its own.
    pub fn edit<R>(&mut self, change: impl FnOnce(&mut Vec<Message>) -> R) -> R {
        let result = change(&mut self.messages);
        *self = MessageList::new(std::mem::take(&mut self.messages));
        result
    }

    /// Where the list stands now.
    pub fn mark(&self) -> ListMark {
        ListMark {
            lineage: self.lineage().clone(),
            len: self.messages.len(),
        }
    }

    /// True when the list marked by `mark` is the start of this one: the same messages, in
    /// order, as this list's first `mark.len()` (O(1)).
    pub fn begins_with(&self, mark: &ListMark) -> bool {
        // A list without a lineage yet was never marked, nor made from one that was.
        self.lineage
            .get()
            .is_some_and(|lineage| Arc::ptr_eq(lineage, &mark.lineage))
            && mark.len <= self.messages.len()
    }

    /// The list's only system message, when it has exactly one (O(1)).
    pub fn only_system_message(&self) -> Option<&Message> {
        match (self.systems.first, self.systems.more.is_empty()) {
            (Some(index), true) => self.messages.get(index),
            _ => None,
        }
    }

    /// The system messages, in order (O(their number), not the list's length).
    pub fn system_messages(&self) -> impl Iterator<Item = &Message> + Clone + '_ {
        self.systems
            .indices()
            .filter_map(|index| self.messages.get(index))
    }

    pub fn into_vec(self) -> Vec<Message> {
        self.messages
    }
}

impl Clone for MessageList {
    /// The copy shares the list's lineage (started now if it had none).
    fn clone(&self) -> Self {
        MessageList {
            messages: self.messages.clone(),
            lineage: OnceLock::from(self.lineage().clone()),
            systems: self.systems.clone(),
        }
    }
}

impl Default for MessageList {
    fn default() -> Self {
        MessageList::new(Vec::new())
    }
}

impl std::ops::Deref for MessageList {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

impl From<Vec<Message>> for MessageList {
    fn from(messages: Vec<Message>) -> Self {
        MessageList::new(messages)
    }
}

impl FromIterator<Message> for MessageList {
    fn from_iter<I: IntoIterator<Item = Message>>(messages: I) -> Self {
        MessageList::new(messages.into_iter().collect())
    }
}

impl std::fmt::Debug for MessageList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.messages.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::json;

    fn message(text: &str) -> Message {
        Message::new(json!({"role": "user", "content": text}))
    }

    fn system(text: &str) -> Message {
        Message::new(json!({"role": "system", "content": text}))
    }

    #[test]
    fn a_mark_begins_the_lists_that_grew_from_it() {
        let mut state = MessageList::new(vec![system("s"), message("a")]);
        let before = state.mark();
        let mut context = state.clone();
        let (b, c) = (message("b"), message("c"));
        context.push(b.clone());
        context.push(c.clone());
        // The state receives the same messages: it stays in the lineage.
        state.push(b);
        assert!(state.begins_with(&before) && context.begins_with(&before));
        assert!(state.begins_with(&context.mark()) || state.len() < context.len());
        state.push(c);
        assert!(state.begins_with(&context.mark()));
        assert!(context.begins_with(&state.mark()));
        // A longer mark does not begin a shorter list.
        let mut short = state.clone();
        short.edit(|m| m.truncate(1));
        assert!(!short.begins_with(&before));
    }

    #[test]
    fn lists_that_append_different_messages_part() {
        let mut state = MessageList::new(vec![message("a")]);
        let start = state.mark();
        let mut context = state.clone();
        context.push(message("x"));
        state.push(message("y"));
        // One of them left the lineage: neither begins the other.
        assert!(!state.begins_with(&context.mark()));
        assert!(!context.begins_with(&state.mark()));
        // What both had still begins the one that kept the lineage; the other is not checked
        // against it any more (a walk would be needed).
        assert!(context.begins_with(&start));
        assert!(!state.begins_with(&start));
        // A list that left the lineage starts one of its own: its clones follow it.
        let mut copy = state.clone();
        let z = message("z");
        copy.push(z.clone());
        state.push(z);
        assert!(copy.begins_with(&state.mark()) && state.begins_with(&copy.mark()));
    }

    #[test]
    fn an_edit_starts_a_lineage() {
        let mut list = MessageList::new(vec![message("a"), message("b")]);
        let mark = list.mark();
        let kept = list[1].clone();
        list.edit(|m| m[1] = message("B"));
        assert!(!list.begins_with(&mark));
        // Even back to the same messages: an edit is not checked, only appends are.
        list.edit(|m| m[1] = kept);
        assert!(!list.begins_with(&mark));
    }

    #[test]
    fn the_only_system_message_follows_every_change() {
        let mut list = MessageList::new(vec![message("a")]);
        assert!(list.only_system_message().is_none());
        let s = system("s");
        list.push(s.clone());
        assert!(list.only_system_message().is_some_and(|m| m.ptr_eq(&s)));
        list.push(system("t"));
        assert!(list.only_system_message().is_none());
        list.edit(|m| m.truncate(2));
        assert!(list.only_system_message().is_some_and(|m| m.ptr_eq(&s)));
        list.edit(|m| m.remove(1));
        assert!(list.only_system_message().is_none());
    }

    #[test]
    fn the_system_messages_are_found_in_order_after_every_change() {
        let texts = |list: &MessageList| -> Vec<String> {
            list.system_messages()
                .map(|m| m.text().to_string())
                .collect()
        };
        let (s, t, u) = (system("s"), system("t"), system("u"));
        let mut list = MessageList::new(vec![message("a"), s.clone(), message("b"), t.clone()]);
        assert_eq!(texts(&list), [s.text(), t.text()]);
        list.push(message("c"));
        list.push(u.clone());
        assert_eq!(texts(&list), [s.text(), t.text(), u.text()]);
        list.edit(|m| m.remove(1));
        assert_eq!(texts(&list), [t.text(), u.text()]);
        let copy = list.clone();
        assert_eq!(texts(&copy), [t.text(), u.text()]);
        list.edit(|m| m.retain(|m| !m.is_system()));
        assert!(texts(&list).is_empty() && list.only_system_message().is_none());
    }

    /// Two lists of one lineage appended to on two threads at once (the state and a run's
    /// copy): whatever one says begins it, message for message, is what the other holds.
    #[test]
    fn lists_appended_on_two_threads_agree_on_what_they_share() {
        let messages: Vec<Message> = (0..2000).map(|i| message(&i.to_string())).collect();
        for parting_at in [None, Some(700)] {
            let start = MessageList::new(vec![system("s")]);
            let (mut a, mut b) = (start.clone(), start.clone());
            let ours = messages.clone();
            let theirs: Vec<Message> = messages
                .iter()
                .enumerate()
                .map(|(i, m)| match parting_at {
                    Some(at) if i == at => message("other"),
                    _ => m.clone(),
                })
                .collect();
            let go = std::sync::Barrier::new(2);
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    go.wait();
                    a.extend(ours)
                });
                scope.spawn(|| {
                    go.wait();
                    b.extend(theirs)
                });
            });
            let same = |x: &MessageList, y: &MessageList, len: usize| {
                x[..len].iter().zip(&y[..len]).all(|(m, n)| m.ptr_eq(n))
            };
            for (x, y) in [(&a, &b), (&b, &a)] {
                if x.begins_with(&y.mark()) {
                    assert!(
                        same(x, y, y.len()),
                        "a mark that begins a list that differs"
                    );
                }
            }
            match parting_at {
                None => assert!(a.begins_with(&b.mark()) && b.begins_with(&a.mark())),
                Some(_) => assert!(!a.begins_with(&b.mark()) && !b.begins_with(&a.mark())),
            }
            assert!(a.begins_with(&start.mark()) || b.begins_with(&start.mark()));
        }
    }

    #[test]
    fn an_address_freed_and_reused_is_not_taken_for_the_message_that_had_it() {
        // The lineage holds the first message's identity: a message allocated after the list
        // dropped it cannot take its address and pass for it.
        let mut first = MessageList::new(Vec::new());
        let mut second = first.clone();
        first.push(message("a"));
        let mark = first.mark();
        drop(first);
        for _ in 0..64 {
            let mut attempt = second.clone();
            attempt.push(message("b"));
            assert!(!attempt.begins_with(&mark));
        }
        second.push(message("c"));
        assert!(!second.begins_with(&mark));
    }
}
