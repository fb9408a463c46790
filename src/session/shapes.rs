//! The shapes of message lines already recognized, learned per thread: a session's lines come in
//! few shapes (the same keys in the same order, strings and numbers in the same places), so a
//! line of a shape seen before is checked against it (its keys and punctuation compared as bytes,
//! its strings and numbers checked as the scanner checks them) instead of scanned token by token.
//!
//! A shape is learned from a line the scanner recognized, so a line that matches one is what the
//! scanner would recognize: the same keys (no repeat, no index key, no more members), the same
//! nesting, a `type` of `message`, the same role, a non-null content; its strings and numbers
//! pass the scanner's own checks. The shapes form a tree of their steps (shared prefixes walked
//! once); a line that matches none is scanned.

use std::ops::Range;

use super::scan::{number_end, string_end, MessageLine, Role};

/// Shapes learned per thread, at most (a file of ever-new shapes stops teaching).
const MAX_SHAPES: usize = 64;
/// Steps per shape, at most (a line with more strings and numbers is not learned).
const MAX_STEPS: usize = 256;
/// The literals' bytes a thread keeps, at most (a line of long keys is not learned): the shapes
/// live as long as the thread.
const MAX_LITERAL_BYTES: usize = 256 << 10;

/// What a step ends with, after its literal bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hole {
    /// Nothing: the line's last step.
    End,
    /// Any string the scanner accepts.
    String,
    /// Any number the scanner accepts.
    Number,
}

/// Where a part of the line is: `delta` bytes into the line's `step`-th step (counted from 1).
#[derive(Clone, Copy)]
struct At {
    step: u16,
    delta: u16,
}

/// What a line of a shape is, in terms of its steps.
#[derive(Clone, Copy)]
struct Ending {
    /// The strings of the entry's `id` and `parentId` (the step whose hole they are, and the
    /// length of its literal); `None` when absent or null.
    id: Option<At>,
    parent: Option<At>,
    message_start: At,
    message_end: At,
    role: Role,
}

const NONE: u32 = u32::MAX;

/// One step of a shape: bytes to compare (keys, punctuation, `true`/`false`/`null`, and the
/// entry's `type` and message's `role` values), at `start` in the pool and `len` long, then a
/// string or a number (or the line's end). The nodes of a shape learned at once follow each
/// other, so a walk reads them in order.
struct Node {
    /// The literal's first 16 bytes (zeros after a shorter one): compared without the pool.
    head: [u8; 16],
    start: u32,
    len: u32,
    hole: Hole,
    first_child: u32,
    next_sibling: u32,
    /// Set (an index into `endings`) when a shape ends here.
    ending: u32,
}

pub(crate) struct Shapes {
    /// The tree: `nodes[0]` is its root (its step unused).
    nodes: Vec<Node>,
    endings: Vec<Ending>,
    /// The literals' bytes, each followed by 16 spare bytes (so a block compare stays inside).
    pool: Vec<u8>,
    /// Where each step of the line being matched starts (kept: no fresh array per line).
    starts: Vec<u32>,
    /// The siblings a walk has yet to try (kept likewise; one per depth at most).
    untried: Vec<Untried>,
}

/// Siblings to try when the walk comes back: from `node` on, at `depth`, from `at` in the line.
struct Untried {
    node: u32,
    depth: u32,
    at: u32,
}

impl Default for Shapes {
    fn default() -> Self {
        Shapes {
            nodes: vec![Node {
                head: [0; 16],
                start: 0,
                len: 0,
                hole: Hole::End,
                first_child: NONE,
                next_sibling: NONE,
                ending: NONE,
            }],
            endings: Vec::new(),
            pool: Vec::new(),
            starts: vec![0; MAX_STEPS + 2],
            untried: Vec::with_capacity(MAX_STEPS + 1),
        }
    }
}

/// Where each step of the line being matched starts: `starts[k]` for step `k` (from 1), and
/// `starts[k + 1]` is where it ends (`MAX_STEPS + 2` of them).
type Starts = [u32];

impl Shapes {
    /// The line read through a shape learned before, if it has one.
    pub(crate) fn find(&mut self, line: &str) -> Option<MessageLine> {
        self.find_at_start(line.as_bytes())
            .and_then(|(found, len)| (len == line.len()).then_some(found))
    }

    /// The line at the start of `bytes` (up to its first newline, or its end), read through a
    /// shape learned before, with the line's length. The line's bytes must be UTF-8 (the walk
    /// does not check it).
    pub(crate) fn find_at_start(&mut self, bytes: &[u8]) -> Option<(MessageLine, usize)> {
        if self.endings.is_empty() || bytes.len() > u32::MAX as usize {
            return None;
        }
        let mut starts = std::mem::take(&mut self.starts);
        let mut untried = std::mem::take(&mut self.untried);
        let mut budget = Budget::default();
        let ending = self.walk(bytes, &mut starts, &mut untried, &mut budget);
        self.untried = untried;
        let found = ending.and_then(|(ending, len)| {
            let found = self.read(&bytes[..len], &starts, ending)?;
            Some((found, len))
        });
        self.starts = starts;
        found
    }

    /// What the line whose steps start at `starts` holds, through the shape that ends at
    /// `ending`.
    fn read(&self, bytes: &[u8], starts: &Starts, ending: u32) -> Option<MessageLine> {
        let ending = &self.endings[ending as usize];
        let start = |at: At| starts[at.step as usize] as usize + at.delta as usize;
        let string =
            |at: Option<At>| at.map(|at| start(at) + 1..starts[at.step as usize + 1] as usize - 1);
        let (id, parent) = (string(ending.id), string(ending.parent));
        // The scanner takes only ids without escapes.
        let plain = |range: &Option<Range<usize>>| {
            range
                .as_ref()
                .is_none_or(|r| bytes[r.clone()].iter().all(|&byte| byte != b'\\'))
        };
        if !plain(&id) || !plain(&parent) {
            return None;
        }
        Some(MessageLine {
            id,
            parent,
            role: ending.role,
            message: start(ending.message_start)..start(ending.message_end),
        })
    }

    /// Matches the line against the shapes, depth first (a branch that fails goes back to the
    /// last sibling not tried); the index of the ending found and where the line ends (at a
    /// newline or the end of `bytes`: no step takes a newline).
    fn walk(
        &self,
        bytes: &[u8],
        starts: &mut Starts,
        untried: &mut Vec<Untried>,
        budget: &mut Budget,
    ) -> Option<(u32, usize)> {
        untried.clear();
        let (mut node, mut depth, mut at) = (0, 0, 0);
        'found: loop {
            // `node`'s step has been taken (it ended at `at`); its children come next.
            starts[depth + 1] = at as u32;
            let here = &self.nodes[node];
            let mut child = NONE;
            if bytes.get(at).is_none_or(|&byte| byte == b'\n') {
                if here.ending != NONE {
                    return Some((here.ending, at));
                }
            } else {
                child = here.first_child;
            }
            let mut from = (depth, at);
            loop {
                while child != NONE {
                    let next = &self.nodes[child as usize];
                    if let Some(after) = self.step(next, bytes, from.1, budget) {
                        if next.next_sibling != NONE {
                            untried.push(Untried {
                                node: next.next_sibling,
                                depth: from.0 as u32,
                                at: from.1 as u32,
                            });
                        }
                        (node, depth, at) = (child as usize, from.0 + 1, after);
                        continue 'found;
                    }
                    child = next.next_sibling;
                }
                let back = untried.pop()?;
                child = back.node;
                from = (back.depth as usize, back.at as usize);
            }
        }
    }

    /// Where `node`'s step ends when taken at `at`, if the line matches it there.
    #[inline(always)]
    fn step(&self, node: &Node, bytes: &[u8], at: usize, budget: &mut Budget) -> Option<usize> {
        if !self.same_bytes(node, bytes, at) {
            return None;
        }
        let len = node.len as usize;
        let hole = at + len;
        let end = match node.hole {
            Hole::String => string_end(bytes, hole)?,
            Hole::Number => match bytes.get(hole) {
                Some(b'-' | b'0'..=b'9') => number_end(bytes, hole)?,
                _ => return None,
            },
            Hole::End => hole,
        };
        budget.spend(at, end)?;
        Some(end)
    }

    /// Whether `bytes[at..]` starts with `node`'s literal.
    #[inline(always)]
    fn same_bytes(&self, node: &Node, bytes: &[u8], at: usize) -> bool {
        let len = node.len as usize;
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY (every block): SSE2 is part of every x86-64 CPU; each load reads 16 bytes
            // inside its array or slice (checked before it; the pool has 16 bytes past each
            // literal).
            let block_mask = |line_at: usize, literal: *const u8| unsafe {
                let line = _mm_loadu_si128(bytes.as_ptr().add(line_at).cast::<__m128i>());
                let want = _mm_loadu_si128(literal.cast::<__m128i>());
                _mm_movemask_epi8(_mm_cmpeq_epi8(line, want)) as u32
            };
            if len <= 16 {
                if at + 16 <= bytes.len() {
                    let wanted = (1u32 << len) - 1;
                    return block_mask(at, node.head.as_ptr()) & wanted == wanted;
                }
            } else if at + len <= bytes.len() {
                let literal = &self.pool[node.start as usize..node.start as usize + len + 16];
                // Whole blocks, the last one ending where the literal ends (overlapping).
                let mut offset = 0;
                while offset + 16 < len {
                    if block_mask(at + offset, literal[offset..].as_ptr()) != 0xffff {
                        return false;
                    }
                    offset += 16;
                }
                return block_mask(at + len - 16, literal[len - 16..].as_ptr()) == 0xffff;
            } else {
                return false;
            }
        }
        let literal = &self.pool[node.start as usize..node.start as usize + len];
        bytes.get(at..at + len) == Some(literal)
    }

    /// Learns the shape of `line`, which the scanner recognized as `found`; `fixed` are the
    /// ranges (with quotes) of its `type` and `role` values, kept as literals.
    pub(crate) fn learn(&mut self, line: &str, found: &MessageLine, fixed: [Range<usize>; 2]) {
        if self.endings.len() >= MAX_SHAPES || line.len() > u32::MAX as usize {
            return;
        }
        let Some(steps) = steps_of(line.as_bytes(), &fixed) else {
            return;
        };
        let literal_bytes: usize = steps.iter().map(|s| s.literal.len() + 16).sum();
        if self.pool.len() + literal_bytes > MAX_LITERAL_BYTES {
            return;
        }
        // The step whose hole is the string `content` (its range without quotes).
        let hole_of = |content: &Option<Range<usize>>| match content {
            None => Some(None),
            Some(r) => steps
                .iter()
                .position(|s| s.hole == Hole::String && s.literal.end + 1 == r.start)
                .and_then(|k| {
                    Some(Some(At {
                        step: k as u16 + 1,
                        delta: u16::try_from(steps[k].literal.len()).ok()?,
                    }))
                }),
        };
        // The step whose literal holds the byte at `offset` (or, `after`, the byte before it).
        let within = |offset: usize, after: bool| {
            let k = steps.iter().position(|s| {
                let r = &s.literal;
                if after {
                    r.start < offset && offset <= r.end
                } else {
                    r.start <= offset && offset < r.end
                }
            })?;
            Some(At {
                step: k as u16 + 1,
                delta: u16::try_from(offset - steps[k].literal.start).ok()?,
            })
        };
        let (Some(id), Some(parent), Some(message_start), Some(message_end)) = (
            hole_of(&found.id),
            hole_of(&found.parent),
            within(found.message.start, false),
            within(found.message.end, true),
        ) else {
            return;
        };
        let mut node = 0;
        for step in &steps {
            node = self.child(node, &line.as_bytes()[step.literal.clone()], step.hole);
        }
        let ending = Ending {
            id,
            parent,
            message_start,
            message_end,
            role: found.role,
        };
        if self.nodes[node].ending == NONE {
            self.nodes[node].ending = self.endings.len() as u32;
            self.endings.push(ending);
        }
    }

    /// The child of `node` taking `literal` then `hole`, added if there is none.
    fn child(&mut self, node: usize, literal: &[u8], hole: Hole) -> usize {
        let mut child = self.nodes[node].first_child;
        let mut last = NONE;
        while child != NONE {
            let c = &self.nodes[child as usize];
            if c.hole == hole && &self.pool[c.start as usize..(c.start + c.len) as usize] == literal
            {
                return child as usize;
            }
            last = child;
            child = c.next_sibling;
        }
        let start = self.pool.len() as u32;
        self.pool.extend_from_slice(literal);
        self.pool.extend_from_slice(&[0; 16]);
        let added = self.nodes.len() as u32;
        let mut head = [0; 16];
        let shown = literal.len().min(16);
        head[..shown].copy_from_slice(&literal[..shown]);
        self.nodes.push(Node {
            head,
            start,
            len: literal.len() as u32,
            hole,
            first_child: NONE,
            next_sibling: NONE,
            ending: NONE,
        });
        if last == NONE {
            self.nodes[node].first_child = added;
        } else {
            self.nodes[last as usize].next_sibling = added;
        }
        added as usize
    }
}

/// What a walk has spent: trying a branch that fails costs bytes compared or scanned in vain.
/// The bytes taken stay within twice the furthest point reached (which is in the line: no step
/// passes a newline) and a little; past that the line is left to the scanner, so a line costs a
/// bounded multiple of its length whatever the shapes learned.
#[derive(Default)]
struct Budget {
    spent: usize,
    furthest: usize,
}

impl Budget {
    #[inline(always)]
    fn spend(&mut self, from: usize, to: usize) -> Option<()> {
        self.spent += to - from;
        self.furthest = self.furthest.max(to);
        (self.spent <= 2 * self.furthest + 512).then_some(())
    }
}

/// A step of a recognized line: its literal bytes, then its hole.
struct LineStep {
    literal: Range<usize>,
    hole: Hole,
}

/// The steps of a recognized line, keys and the `fixed` values taken as literal bytes; `None`
/// when there are too many.
fn steps_of(bytes: &[u8], fixed: &[Range<usize>; 2]) -> Option<Vec<LineStep>> {
    let mut steps = Vec::new();
    let mut literal_start = 0;
    let mut at = 0;
    while at < bytes.len() {
        let hole = match bytes[at] {
            b'"' => {
                let end = string_end(bytes, at)?;
                let is_key = bytes.get(end) == Some(&b':');
                if is_key || fixed.iter().any(|r| r.start == at && r.end == end) {
                    at = end;
                    continue;
                }
                (Hole::String, end)
            }
            b'-' | b'0'..=b'9' => (Hole::Number, number_end(bytes, at)?),
            _ => {
                at += 1;
                continue;
            }
        };
        steps.push(LineStep {
            literal: literal_start..at,
            hole: hole.0,
        });
        at = hole.1;
        literal_start = at;
        if steps.len() >= MAX_STEPS {
            return None;
        }
    }
    steps.push(LineStep {
        literal: literal_start..at,
        hole: Hole::End,
    });
    Some(steps)
}

#[cfg(test)]
mod tests {
    use super::super::scan::{message_line, message_line_scanned};
    use super::super::tests::{mutate, numbers};
    use super::*;

    /// Lines of the shapes a session has (and a few odd ones): roles, null and absent links,
    /// strings with every escape the scanner takes, numbers of every form, non-ASCII text.
    fn seeds() -> Vec<String> {
        let entry = |id: &str, parent: &str, message: &str| {
            format!(
                r#"{{"type":"message","id":{id},"parentId":{parent},"timestamp":"2026-12-01T00:00:00.001Z","message":{message}}}"#
            )
        };
        let messages = [
            r#"{"role":"user","content":[{"type":"text","text":"fix the \"bug\"\nnow\t\u001f é ✓"}],"timestamp":1764633600000}"#,
            r#"{"role":"user","content":"plain","timestamp":1764633600000}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"toolCall","id":"toolu_1","name":"read","arguments":{"path":"src/a.rs"}}],"api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":46602,"output":1813,"cacheRead":0,"cacheWrite":0,"totalTokens":48415,"cost":{"input":0.139806,"output":0.30000000000000004,"cacheRead":0,"cacheWrite":0,"total":1e-7}},"stopReason":"toolUse","timestamp":1764633600001}"#,
            r#"{"role":"toolResult","toolCallId":"toolu_1","toolName":"read","content":[{"type":"text","text":"a\nb\\c"}],"isError":false,"timestamp":-5}"#,
            r#"{"role":"toolResult","toolCallId":"toolu_1","toolName":"read","content":[],"isError":true,"details":{"n":[1.5,-2,1e+21,true,null,{}]},"timestamp":2}"#,
            r#"{"role":"custom","content":{"x":[[[]]]}}"#,
        ];
        let mut lines = Vec::new();
        for message in messages {
            lines.push(entry(r#""00000002""#, r#""00000001""#, message));
            lines.push(entry(r#""a""#, "null", message));
        }
        lines.push(format!(r#"{{"type":"message","message":{}}}"#, messages[1]));
        lines.push(format!(
            r#"{{"type":"message","id":"x","message":{},"extra":[1]}}"#,
            messages[0]
        ));
        lines
    }

    fn learned(lines: &[String]) -> Shapes {
        let mut shapes = Shapes::default();
        for line in lines {
            let Some((found, fixed)) = message_line_scanned(line) else {
                panic!("a seed is recognized: {line}")
            };
            shapes.learn(line, &found, fixed);
        }
        shapes
    }

    /// A line read through a shape is read as the scan reads it: every seed (through its own
    /// shape), and ~40 000 mutations of them (bytes removed, replaced, inserted; cut short), each
    /// either left to the scan or read exactly as the scan reads it.
    #[test]
    fn a_shape_reads_what_the_scan_reads() {
        let lines = seeds();
        let mut shapes = learned(&lines);
        assert_eq!(shapes.endings.len(), lines.len());
        for line in &lines {
            let scanned = message_line_scanned(line).map(|(found, _)| found);
            assert_eq!(shapes.find(line), scanned, "{line}");
        }
        let mut next = numbers(0x2545_f491_4f6c_dd1d);
        let alphabet = b"{}[]\":,\\ 0123456789.-+eEtrufalsn\nxu\t\x01";
        let (mut through_shapes, mut compared) = (0, 0);
        for round in 0..40_000 {
            let mut bytes = lines[next(lines.len())].clone().into_bytes();
            let changes = 1 + next(3);
            mutate(&mut bytes, changes, alphabet, &mut next);
            if round % 7 == 0 {
                bytes.truncate(next(bytes.len()));
            }
            let Ok(line) = String::from_utf8(bytes) else {
                continue;
            };
            compared += 1;
            if let Some(found) = shapes.find(&line) {
                through_shapes += 1;
                let scanned = message_line_scanned(&line).map(|(found, _)| found);
                assert_eq!(Some(found), scanned, "{line}");
            }
        }
        // The mutations inside strings and numbers keep the shape.
        assert!(
            through_shapes > compared / 20,
            "{through_shapes} of {compared}"
        );
    }

    /// The same through `message_line`, which learns as it goes: its answers are the scan's.
    #[test]
    fn message_line_learns_and_answers_as_the_scan() {
        for line in seeds().iter().chain(seeds().iter()) {
            let scanned = message_line_scanned(line).map(|(found, _)| found);
            assert_eq!(message_line(line), scanned, "{line}");
        }
    }

    /// A thread learns at most `MAX_SHAPES` shapes (a file of ever-new shapes stops teaching)
    /// and keeps at most `MAX_LITERAL_BYTES` of their literals; a line of a shape not learned is
    /// still read, by the scan.
    #[test]
    fn learning_stops_at_the_limit() {
        let line = |i: usize| {
            format!(
                r#"{{"type":"message","id":"a","message":{{"role":"user","content":{{"k{i}":"v"}}}}}}"#
            )
        };
        let lines: Vec<String> = (0..MAX_SHAPES + 20).map(line).collect();
        let mut shapes = learned(&lines);
        assert_eq!(shapes.endings.len(), MAX_SHAPES);
        assert!(shapes.find(&lines[MAX_SHAPES - 1]).is_some());
        assert!(shapes.find(&lines[MAX_SHAPES]).is_none());
        let many_steps = format!(
            r#"{{"type":"message","id":"a","message":{{"role":"user","content":[{}1]}}}}"#,
            "1,".repeat(MAX_STEPS)
        );
        let mut shapes = Shapes::default();
        let (found, fixed) = message_line_scanned(&many_steps).unwrap();
        shapes.learn(&many_steps, &found, fixed);
        assert!(
            shapes.endings.is_empty(),
            "a line of too many steps is not learned"
        );
    }
}
