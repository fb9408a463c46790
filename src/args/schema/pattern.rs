//! ECMAScript regular expressions (`pattern`, `patternProperties`) matched in bounded time.
//!
//! `regress` (an ECMAScript backtracking engine) decides what is a valid pattern and gives the
//! compile errors, as before; it has no step limit, so `^(a+)+$` against `aaa…a!` would run for
//! ages on the runtime thread. Matching therefore goes to one of two engines, through a
//! translation of the pattern into their syntax that keeps the ECMAScript meaning (`\d` is
//! `[0-9]`, `\w` is `[0-9A-Za-z_]`, `\s` is ECMAScript's white space, `.` excludes the four line
//! terminators, `\b` is the ASCII word boundary; groups cannot change whether a match exists):
//!
//! 1. the `regex` crate, linear in the text, for every pattern without lookaround and
//!    back-references (nearly all schemas);
//! 2. `fancy-regex` with a backtracking limit for lookaround and back-references (a back-reference
//!    to a group that did not take part matches empty, as in ECMAScript; a back-reference to a
//!    group inside a repeating quantifier or a lookaround is not translated, because ECMAScript
//!    resets such captures per iteration). Past the limit the match fails with [`Pattern::is_match`]'s error.
//!
//! A pattern neither translation covers (legacy octal escapes, lone surrogates, `\p{…}` in a
//! class, …)
//! is not run at all: matching it fails with a clear error. Patterns that are only valid
//! without the `u` flag are translated with their legacy (Annex B) syntax; since those match
//! UTF-16 code units, a text with characters beyond U+FFFF is refused for them when `.`,
//! a negated class, a negated escape or such a character in the pattern could see half of one.

use super::keywords::compile_regex;

/// Backtracking steps `fancy-regex` may take per match (its own default).
const BACKTRACK_LIMIT: usize = 1_000_000;

/// A compiled `pattern`.
pub struct Pattern {
    source: String,
    engine: Engine,
    /// Legacy (non-`u`) pattern that could see half of a character beyond U+FFFF.
    needs_bmp_text: bool,
}

enum Engine {
    Linear(regex::Regex),
    Bounded(fancy_regex::Regex),
    Unsupported,
}

impl Pattern {
    /// Compiles an ECMAScript pattern; the error is regress's compile error (SPEC §5.5.1).
    pub fn new(source: &str) -> Result<Pattern, String> {
        compile_regex(source)?;
        let unicode = regress::Regex::with_flags(source, "u").is_ok();
        let linear = translate(source, unicode, false)
            .and_then(|t| Some((regex::Regex::new(&t.text).ok()?, t.astral_sensitive)));
        let (engine, astral_sensitive) = match linear {
            Some((regex, sensitive)) => (Engine::Linear(regex), sensitive),
            None => {
                let bounded = translate(source, unicode, true).and_then(|t| {
                    let regex = fancy_regex::RegexBuilder::new(&t.text)
                        .backtrack_limit(BACKTRACK_LIMIT)
                        .build()
                        .ok()?;
                    Some((regex, t.astral_sensitive))
                });
                match bounded {
                    Some((regex, sensitive)) => (Engine::Bounded(regex), sensitive),
                    None => (Engine::Unsupported, false),
                }
            }
        };
        Ok(Pattern {
            source: source.to_string(),
            engine,
            needs_bmp_text: !unicode && astral_sensitive,
        })
    }

    /// Whether the pattern matches somewhere in `text`; an error (a short sentence naming the
    /// pattern) when that cannot be decided in bounded time.
    pub fn is_match(&self, text: &str) -> Result<bool, String> {
        let unsupported = || {
            format!(
                "The pattern /{}/ uses regular-expression features libagent cannot match in \
                 bounded time.",
                self.source
            )
        };
        if self.needs_bmp_text && text.chars().any(|c| c > '\u{FFFF}') {
            return Err(unsupported());
        }
        match &self.engine {
            Engine::Linear(regex) => Ok(regex.is_match(text)),
            Engine::Bounded(regex) => regex.is_match(text).map_err(|_| {
                format!(
                    "The pattern /{}/ needs too much backtracking to match this value.",
                    self.source
                )
            }),
            Engine::Unsupported => Err(unsupported()),
        }
    }
}

/// A translated pattern.
struct Translated {
    text: String,
    /// Uses `.`, a negated class or a negated class escape (or, legacy, holds a character beyond
    /// U+FFFF).
    astral_sensitive: bool,
}

/// Translates `source` (a valid ECMAScript pattern, `u` mode when `unicode`) into `regex` syntax,
/// or `fancy-regex` syntax when `fancy` (lookaround and back-references allowed); `None` when
/// the pattern uses something outside the translated subset.
fn translate(source: &str, unicode: bool, fancy: bool) -> Option<Translated> {
    let names = if fancy {
        group_names(source)?
    } else {
        Vec::new()
    };
    let mut t = Translator {
        chars: source.chars().collect(),
        pos: 0,
        unicode,
        fancy,
        out: String::new(),
        astral_sensitive: false,
        names,
        groups: Vec::new(),
        open: Vec::new(),
        next_paren: 0,
        quantified: Vec::new(),
        backrefs: Vec::new(),
        last_group: None,
    };
    t.disjunction()?;
    if t.pos != t.chars.len() {
        return None;
    }
    // A back-reference must see the capture ECMAScript would: not one reset per iteration of an
    // enclosing quantifier, nor one made inside a lookaround.
    for &n in &t.backrefs {
        let group = t.groups.get(n.checked_sub(1)?)?;
        if group.in_lookaround || group.parens.iter().any(|p| t.quantified.contains(p)) {
            return None;
        }
    }
    // Legacy patterns see a character beyond U+FFFF in the pattern as two code units.
    let astral_literal = !unicode && t.chars.iter().any(|&c| c > '\u{FFFF}');
    Some(Translated {
        text: t.out,
        astral_sensitive: t.astral_sensitive || astral_literal,
    })
}

/// The capturing groups' names in order (`None` for unnamed ones); `None` for duplicate names.
fn group_names(source: &str) -> Option<Vec<Option<String>>> {
    let chars: Vec<char> = source.chars().collect();
    let mut names: Vec<Option<String>> = Vec::new();
    let (mut i, mut in_class) = (0, false);
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' => in_class = true,
            ']' => in_class = false,
            '(' if !in_class => {
                if chars.get(i + 1) != Some(&'?') {
                    names.push(None);
                } else if chars.get(i + 2) == Some(&'<')
                    && !matches!(chars.get(i + 3), Some('=' | '!'))
                {
                    let end = chars[i + 3..].iter().position(|&c| c == '>')? + i + 3;
                    let name: String = chars[i + 3..end].iter().collect();
                    if names.iter().any(|n| n.as_deref() == Some(name.as_str())) {
                        return None;
                    }
                    names.push(Some(name));
                }
            }
            _ => {}
        }
        i += 1;
    }
    Some(names)
}

struct Group {
    /// Ids of the parentheses around it, itself included.
    parens: Vec<usize>,
    in_lookaround: bool,
}

struct Translator {
    chars: Vec<char>,
    pos: usize,
    unicode: bool,
    fancy: bool,
    out: String,
    astral_sensitive: bool,
    names: Vec<Option<String>>,
    groups: Vec<Group>,
    /// Open parentheses: (id, is a lookaround).
    open: Vec<(usize, bool)>,
    next_paren: usize,
    /// Ids of quantified parentheses.
    quantified: Vec<usize>,
    /// Group numbers referred to by back-references.
    backrefs: Vec<usize>,
    /// The id of the group just closed, when it is the last atom.
    last_group: Option<usize>,
}

/// A class escape's members in `regex` class syntax, and whether it is negated.
fn class_escape(c: char) -> Option<(&'static str, bool)> {
    const WHITE: &str = r"\t\n\x0B\x0C\r\x20\xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
    Some(match c {
        'd' => ("0-9", false),
        'D' => ("0-9", true),
        'w' => ("0-9A-Za-z_", false),
        'W' => ("0-9A-Za-z_", true),
        's' => (WHITE, false),
        'S' => (WHITE, true),
        _ => return None,
    })
}

/// One member of a character class.
enum ClassAtom {
    Char(u32),
    Escape(&'static str, bool),
}

fn literal(out: &mut String, c: u32) -> Option<()> {
    let ch = char::from_u32(c)?;
    if ch.is_ascii_alphanumeric() || ch == '_' || ch == ' ' {
        out.push(ch);
    } else {
        out.push_str(&format!("\\x{{{c:X}}}"));
    }
    Some(())
}

impl Translator {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn eat(&mut self, text: &str) -> bool {
        let n = text.chars().count();
        let matches = self.pos + n <= self.chars.len()
            && text
                .chars()
                .zip(&self.chars[self.pos..])
                .all(|(a, b)| a == *b);
        if matches {
            self.pos += n;
        }
        matches
    }

    /// Alternatives up to an unmatched `)` or the end.
    fn disjunction(&mut self) -> Option<()> {
        while let Some(c) = self.peek() {
            if c == ')' {
                return Some(());
            }
            self.term()?;
        }
        Some(())
    }

    fn term(&mut self) -> Option<()> {
        let c = self.next()?;
        let mut group = None;
        match c {
            '|' => self.out.push('|'),
            '^' => self.out.push('^'),
            '$' => self.out.push('$'),
            '.' => {
                self.astral_sensitive = true;
                self.out.push_str(r"[^\n\r\x{2028}\x{2029}]");
            }
            '(' => group = Some(self.group()?),
            '[' => self.class()?,
            '\\' => self.atom_escape()?,
            '*' | '+' | '?' => return self.quantifier_tail(c.to_string()),
            '{' => match self.braces() {
                Some(quantifier) => return self.quantifier_tail(quantifier),
                // Annex B: a `{` that starts no quantifier is a literal.
                None if !self.unicode => literal(&mut self.out, '{' as u32)?,
                None => return None,
            },
            '}' | ']' if !self.unicode => literal(&mut self.out, c as u32)?,
            '}' | ']' => return None,
            c => literal(&mut self.out, c as u32)?,
        }
        self.last_group = group;
        Some(())
    }

    /// A quantifier (`*`, `+`, `?` or braces) and its optional lazy `?`.
    fn quantifier_tail(&mut self, quantifier: String) -> Option<()> {
        // At most one iteration: a capture inside is that iteration's, as in ECMAScript.
        let at_most_once = quantifier == "?"
            || quantifier
                .strip_prefix('{')
                .and_then(|q| q.strip_suffix('}'))
                .is_some_and(|q| matches!(q.rsplit(',').next(), Some("0" | "1")));
        if let Some(id) = self.last_group.take() {
            if !at_most_once {
                self.quantified.push(id);
            }
        }
        self.out.push_str(&quantifier);
        if self.eat("?") {
            self.out.push('?');
        }
        Some(())
    }

    /// `{n}`, `{n,}` or `{n,m}` after the `{`; `None` (nothing consumed) if it is not one.
    fn braces(&mut self) -> Option<String> {
        let start = self.pos;
        let number = |t: &mut Self| {
            let from = t.pos;
            while t.peek().is_some_and(|c| c.is_ascii_digit()) {
                t.pos += 1;
            }
            (t.pos > from).then(|| t.chars[from..t.pos].iter().collect::<String>())
        };
        let result = (|| {
            let min = number(self)?;
            let max = if self.eat(",") {
                Some(number(self).unwrap_or_default())
            } else {
                None
            };
            self.eat("}").then_some(())?;
            Some(match max {
                None => format!("{{{min}}}"),
                Some(max) => format!("{{{min},{max}}}"),
            })
        })();
        if result.is_none() {
            self.pos = start;
        }
        result
    }

    /// After `(`: the group, translated; returns its id.
    fn group(&mut self) -> Option<usize> {
        let id = self.next_paren;
        self.next_paren += 1;
        let mut lookaround = false;
        let mut capturing = false;
        if self.eat("?:") {
            self.out.push_str("(?:");
        } else if self.peek() == Some('?') {
            let kind = ["?=", "?!", "?<=", "?<!"].into_iter().find(|k| self.eat(k));
            match kind {
                Some(kind) if self.fancy => {
                    lookaround = true;
                    self.out.push('(');
                    self.out.push_str(kind);
                }
                Some(_) => return None,
                None if self.eat("?<") => {
                    while self.next()? != '>' {}
                    capturing = true;
                }
                // Modifiers such as `(?i:…)`.
                None => return None,
            }
        } else {
            capturing = true;
        }
        if capturing {
            let in_lookaround = self.open.iter().any(|&(_, l)| l);
            let mut parens: Vec<usize> = self.open.iter().map(|&(p, _)| p).collect();
            parens.push(id);
            self.groups.push(Group {
                parens,
                in_lookaround,
            });
            // Captures matter only to back-references.
            self.out.push_str(if self.fancy { "(" } else { "(?:" });
        }
        self.open.push((id, lookaround));
        self.disjunction()?;
        self.open.pop();
        if self.next()? != ')' {
            return None;
        }
        self.out.push(')');
        Some(id)
    }

    /// After a `\` outside a class.
    fn atom_escape(&mut self) -> Option<()> {
        let c = self.peek()?;
        if let Some((members, negated)) = class_escape(c) {
            self.pos += 1;
            self.astral_sensitive |= negated;
            self.out.push_str(if negated { "[^" } else { "[" });
            self.out.push_str(members);
            self.out.push(']');
            return Some(());
        }
        match c {
            'p' | 'P' if self.unicode => {
                // Unicode property escapes (names checked by regress; `regex` knows them too).
                self.pos += 1;
                if !self.eat("{") {
                    return None;
                }
                let mut name = String::new();
                loop {
                    match self.next()? {
                        '}' => break,
                        c if c.is_ascii_alphanumeric() || c == '_' || c == '=' => name.push(c),
                        _ => return None,
                    }
                }
                self.astral_sensitive |= c == 'P';
                self.out.push_str(&format!("\\{c}{{{name}}}"));
                Some(())
            }
            'b' | 'B' => {
                self.pos += 1;
                self.out
                    .push_str(if c == 'b' { r"(?-u:\b)" } else { r"(?-u:\B)" });
                Some(())
            }
            '1'..='9' => {
                let from = self.pos;
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                let n: usize = self.chars[from..self.pos]
                    .iter()
                    .collect::<String>()
                    .parse()
                    .ok()?;
                self.backref(n)
            }
            'k' if self.unicode || self.names.iter().any(Option::is_some) => {
                self.pos += 1;
                if !self.eat("<") {
                    return None;
                }
                let mut name = String::new();
                loop {
                    match self.next()? {
                        '>' => break,
                        c => name.push(c),
                    }
                }
                let index = self
                    .names
                    .iter()
                    .position(|n| n.as_deref() == Some(name.as_str()))?;
                self.backref(index + 1)
            }
            _ => {
                let value = self.character_escape(false)?;
                literal(&mut self.out, value)
            }
        }
    }

    /// Back-reference to group `n`: ECMAScript matches empty when the group did not take part.
    fn backref(&mut self, n: usize) -> Option<()> {
        if !self.fancy || n == 0 || n > self.names.len() {
            return None;
        }
        self.backrefs.push(n);
        self.out.push_str(&format!(r"(?({n})\{n}|)"));
        Some(())
    }

    /// After a `\`: a character escape (the value of the character it denotes).
    fn character_escape(&mut self, in_class: bool) -> Option<u32> {
        let c = self.next()?;
        let value = match c {
            'f' => 0x0C,
            'n' => 0x0A,
            'r' => 0x0D,
            't' => 0x09,
            'v' => 0x0B,
            'b' if in_class => 0x08,
            '0' if !self.peek().is_some_and(|c| c.is_ascii_digit()) => 0,
            'c' => {
                let letter = self.next().filter(char::is_ascii_alphabetic)?;
                letter as u32 % 32
            }
            'x' => self.hex(2)?,
            'u' => self.unicode_escape()?,
            // Identity escapes: syntax characters (and `/`, `-`) in `u` mode, any other
            // non-alphanumeric character or letter in legacy mode; digits are octal there.
            c if c.is_ascii_digit() => return None,
            c if self.unicode && !"^$\\.*+?()[]{}|/-".contains(c) => return None,
            c => c as u32,
        };
        // Lone surrogates cannot occur in the text (valid Unicode); keep them out.
        (!(0xD800..=0xDFFF).contains(&value)).then_some(value)
    }

    fn hex(&mut self, digits: usize) -> Option<u32> {
        let text: String = (0..digits)
            .map(|i| self.peek_at(i))
            .collect::<Option<_>>()?;
        let value = u32::from_str_radix(&text, 16).ok()?;
        if !text.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += digits;
        Some(value)
    }

    /// After `\u`: four hex digits (a surrogate pair in `u` mode is one code point) or `{…}`.
    fn unicode_escape(&mut self) -> Option<u32> {
        if self.unicode && self.eat("{") {
            let from = self.pos;
            while self.peek()? != '}' {
                self.pos += 1;
            }
            let text: String = self.chars[from..self.pos].iter().collect();
            self.pos += 1;
            return u32::from_str_radix(&text, 16).ok();
        }
        let unit = self.hex(4)?;
        if self.unicode && (0xD800..0xDC00).contains(&unit) && self.eat("\\u") {
            let low = self.hex(4)?;
            if (0xDC00..0xE000).contains(&low) {
                return Some(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00));
            }
            return None;
        }
        Some(unit)
    }

    /// After `[`.
    fn class(&mut self) -> Option<()> {
        let negated = self.eat("^");
        self.astral_sensitive |= negated;
        let mut body = String::new();
        while self.peek()? != ']' {
            let first = self.class_atom()?;
            if self.peek() == Some('-') && self.peek_at(1).is_some_and(|c| c != ']') {
                self.pos += 1;
                let second = self.class_atom()?;
                match (first, second) {
                    (ClassAtom::Char(a), ClassAtom::Char(b)) if a <= b => {
                        literal(&mut body, a)?;
                        body.push('-');
                        literal(&mut body, b)?;
                    }
                    // Annex B: a range with a class escape is the two members and `-`.
                    (first, second) if !self.unicode => {
                        self.class_member(&mut body, first)?;
                        literal(&mut body, '-' as u32)?;
                        self.class_member(&mut body, second)?;
                    }
                    _ => return None,
                }
            } else {
                self.class_member(&mut body, first)?;
            }
        }
        self.pos += 1;
        match (negated, body.is_empty()) {
            // `[^]` matches any character; `[]` none (left to regress's error path: not taken).
            (true, true) => self.out.push_str(r"[\x{0}-\x{10FFFF}]"),
            (false, true) => return None,
            (negated, false) => {
                self.out.push_str(if negated { "[^" } else { "[" });
                self.out.push_str(&body);
                self.out.push(']');
            }
        }
        Some(())
    }

    fn class_member(&mut self, body: &mut String, atom: ClassAtom) -> Option<()> {
        match atom {
            ClassAtom::Char(c) => literal(body, c),
            ClassAtom::Escape(members, false) => {
                body.push_str(members);
                Some(())
            }
            ClassAtom::Escape(members, true) => {
                self.astral_sensitive = true;
                body.push_str("[^");
                body.push_str(members);
                body.push(']');
                Some(())
            }
        }
    }

    fn class_atom(&mut self) -> Option<ClassAtom> {
        let c = self.next()?;
        if c != '\\' {
            return Some(ClassAtom::Char(c as u32));
        }
        let next = self.peek()?;
        if let Some((members, negated)) = class_escape(next) {
            self.pos += 1;
            return Some(ClassAtom::Escape(members, negated));
        }
        if self.unicode && (next == 'p' || next == 'P') {
            return None;
        }
        Some(ClassAtom::Char(self.character_escape(true)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(source: &str) -> &'static str {
        match Pattern::new(source).unwrap().engine {
            Engine::Linear(_) => "linear",
            Engine::Bounded(_) => "bounded",
            Engine::Unsupported => "unsupported",
        }
    }

    #[test]
    fn engines_are_chosen_by_features() {
        assert_eq!(engine("^(a+)+$"), "linear");
        assert_eq!(engine(r"^[\w.-]+@[\w-]+\.[a-z]{2,}$"), "linear");
        assert_eq!(engine(r"^[\w-.]+$"), "linear"); // legacy syntax
        assert_eq!(engine(r"^(?=.*\d)\w+$"), "bounded");
        assert_eq!(engine(r"^(['\x22])\w*\1$"), "bounded");
        assert_eq!(engine(r"^(?:(a)|b)+\1$"), "unsupported");
        assert_eq!(engine(r"^\p{L}+$"), "linear");
        assert_eq!(engine(r"^[\p{L}]+$"), "unsupported");
    }
}
