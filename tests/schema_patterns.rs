//! ECMAScript `pattern` matching in bounded time (issue 7): linear matching through the `regex`
//! crate where the translation keeps ECMAScript's meaning, a backtracking limit for lookaround and
//! back-references, and the same answers as the ECMAScript engine (regress) for ordinary patterns.
//! The pathological cases run under a watchdog: one that does not finish within WATCHDOG fails
//! (a backtracking engine needs hours for them; the linear engine microseconds).

use agent::args::schema::Pattern;
use agent::args::validate_tool_arguments;
use agent::json::{json, Json};

/// Generous: only a runaway match reaches it.
const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs `work` on its own thread and fails the test if it has not finished within WATCHDOG.
fn within_watchdog<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(work()));
    finished
        .recv_timeout(WATCHDOG)
        .unwrap_or_else(|_| panic!("{what} did not finish within {WATCHDOG:?}"))
}

fn call(arguments: Json) -> Json {
    json!({"id": "c1", "name": "t", "arguments": arguments})
}

/// `^(a+)+$` against 30 `a` and `!` ran for about a minute in the backtracking engine; it is
/// matched in linear time now, and rejected with the ordinary pattern error.
#[test]
fn catastrophic_pattern_is_rejected_as_a_plain_mismatch() {
    // 40 `a`: 2^40 paths for a backtracking engine.
    let text = format!("{}!", "a".repeat(40));
    for pattern in [
        r"^(a+)+$",
        r"^(a*)*b$",
        r"^(\w+\s?)*$",
        r"^(a|aa)+$",
        r"(x+x+)+y",
    ] {
        let subject = text.clone();
        let answer = within_watchdog(pattern, move || {
            Pattern::new(pattern).unwrap().is_match(&subject)
        });
        assert_eq!(answer, Ok(false), "{pattern}");
    }
    let parameters =
        json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}});
    let subject = text.clone();
    let error = within_watchdog("the validation", move || {
        validate_tool_arguments("t", &parameters, &call(json!({"s": subject})))
    })
    .unwrap_err();
    assert!(
        error.starts_with("Validation failed for tool \"t\":\n  - s: expected to match ^(a+)+$\n"),
        "{error}"
    );
}

/// A pattern that needs the backtracking engine (lookaround) and exceeds its step limit fails
/// the validation with a sentence naming the pattern.
#[test]
fn backtracking_limit_fails_the_validation_with_a_clear_error() {
    let text = format!("{}!", "a".repeat(30));
    let message = "The pattern /^(a|a)+(?=!)$/ needs too much backtracking to match this value.";
    let subject = text.clone();
    let answer = within_watchdog("the step-limited match", move || {
        Pattern::new("^(a|a)+(?=!)$").unwrap().is_match(&subject)
    });
    assert_eq!(answer, Err(message.to_string()));
    let parameters = json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|a)+(?=!)$"}}});
    let error = validate_tool_arguments("t", &parameters, &call(json!({"s": text}))).unwrap_err();
    assert!(
        error.starts_with(&format!(
            "Validation failed for tool \"t\":\n  - s: {message}\n"
        )),
        "{error}"
    );
    // The same pattern still decides ordinary values.
    let pattern = Pattern::new("^(a|a)+(?=!)$").unwrap();
    assert_eq!(pattern.is_match("aaa"), Ok(false));
    let parameters = json!({"type": "string", "pattern": "^(a|b)+(?=c)"});
    assert!(validate_tool_arguments(
        "t",
        &json!({"type": "object", "properties": {"s": parameters}}),
        &call(json!({"s": "abc"}))
    )
    .is_ok());
}

/// `patternProperties` goes through the same bounded matcher.
#[test]
fn pattern_properties_are_bounded_too() {
    let key = format!("{}!", "a".repeat(30));
    let parameters = json!({"type": "object", "patternProperties": {"^(a|a)+(?=!)$": {"type": "integer"}}, "additionalProperties": false});
    let error =
        validate_tool_arguments("t", &parameters, &call(json!({ key.clone(): 1 }))).unwrap_err();
    assert!(
        error.contains(
            "The pattern /^(a|a)+(?=!)$/ needs too much backtracking to match this value."
        ),
        "{error}"
    );
    let parameters = json!({"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}}, "additionalProperties": false});
    let error = validate_tool_arguments("t", &parameters, &call(json!({ key: 1 }))).unwrap_err();
    assert!(error.contains("unknown field"), "{error}");
}

/// Back-references the translation cannot keep exact (to a group inside a quantifier: ECMAScript
/// resets it per iteration) are refused rather than run unbounded.
#[test]
fn untranslatable_patterns_fail_with_a_clear_error() {
    assert_eq!(
        Pattern::new(r"^(?:(a)|b)+\1$").unwrap().is_match("ab"),
        Err("The pattern /^(?:(a)|b)+\\1$/ uses regular-expression features libagent cannot match in bounded time.".to_string())
    );
}

/// Ordinary patterns give exactly the ECMAScript engine's answers (regress with the `u` flag, or
/// without it when the pattern needs the legacy syntax — how the schema compiler reads them).
#[test]
fn ordinary_patterns_match_as_ecmascript_does() {
    let patterns = [
        r"^\d+$",
        r"^\D+$",
        r"^\w+$",
        r"^\W+$",
        r"^\s+$",
        r"^\S+$",
        r"^[a-z]+$",
        r"^[^a-z]+$",
        r"^[\d_-]+$",
        r"^[\w.-]+@[\w-]+\.[a-z]{2,}$",
        r"^[\w-.]+$",
        r"^a.c$",
        r"^.+$",
        r"\bword\b",
        r"\Bor\B",
        r"^(?:ab|cd){2,3}$",
        r"^(ab|cd)*?e$",
        r"^x{2}$",
        r"^x{2,}$",
        r"^x{1,2}$",
        r"a{",
        r"^\$\^\.\*\+\?\(\)\[\]\{\}\|\/$",
        r"^\x41\u0042\u{43}$",
        r"^\u{1F600}$",
        r"^\uD83D\uDE00$",
        r"^\t\n\v\f\r$",
        r"^\cJ$",
        r"^[\b]$",
        r"^\0$",
        r"^[^]$",
        r"^\p{Lu}+$",
        r"^\P{L}+$",
        r"^\p{Script=Greek}+$",
        r"(?<=a)b",
        r"(?<!a)b",
        r"^(?=.*\d)(?=.*[a-z]).{4,}$",
        r"^(?!ab)",
        r"^(['\x22])\w*\1$",
        r"^(?<q>['\x22])\w*\k<q>$",
        r"^\1(a)$",
        r"^(a)?\1b$",
        r"^(?:a|(b))\1c$",
        r"^\/path\/[^/]+$",
        r"é+",
        r"^[À-ÿ]+$",
        r"",
    ];
    let texts = [
        "",
        "123",
        "abc",
        "ABC",
        "a c",
        "abc123",
        "a_b-c.d@ex-ample.org",
        " \t\n",
        "\u{a0}\u{feff}",
        "\u{85}",
        "\u{2028}",
        "a\nc",
        "a\rc",
        "abc",
        "word",
        "a word here",
        "sword",
        "abab",
        "abcdcd",
        "abcde",
        "e",
        "xx",
        "xxx",
        "x",
        "a{",
        "$^.*+?()[]{}|/",
        "ABC",
        "\u{1F600}",
        "😀😀",
        "\t\n\u{b}\u{c}\r",
        "\n",
        "\u{8}",
        "\0",
        "é",
        "ééé",
        "ÀÿÉ",
        "ΑΒΓ",
        "ab",
        "cb",
        "b",
        "a1bc",
        "abcd",
        "'abc'",
        "\"abc'",
        "\"x\"",
        "a",
        "aab",
        "ab",
        "b",
        "bbc",
        "ac",
        "/path/x",
        "/path/x/y",
        "١٢٣",
        "ａｂｃ",
    ];
    for source in patterns {
        let reference = regress::Regex::with_flags(source, "u")
            .or_else(|_| regress::Regex::new(source))
            .unwrap_or_else(|e| panic!("{source}: {e}"));
        let pattern = Pattern::new(source).unwrap();
        for text in texts {
            assert_eq!(
                pattern.is_match(text),
                Ok(reference.find(text).is_some()),
                "/{source}/ against {text:?}"
            );
        }
    }
}

/// Legacy patterns (valid only without the `u` flag) match UTF-16 code units: where that could
/// differ from whole characters, a text beyond U+FFFF is refused rather than answered wrongly.
#[test]
fn legacy_patterns_refuse_what_they_would_see_as_code_units() {
    let pattern = Pattern::new(r"^[\w-.]+😀+$").unwrap();
    assert_eq!(pattern.is_match("a-b"), Ok(false));
    assert!(pattern
        .is_match("a😀😀")
        .unwrap_err()
        .contains("cannot match in bounded time"));
    // Without such constructs the answer stays exact.
    let pattern = Pattern::new(r"^[\w-.]+$").unwrap();
    assert_eq!(pattern.is_match("a😀"), Ok(false));
    assert_eq!(pattern.is_match("a-b.c"), Ok(true));
}

/// Invalid patterns still fail to compile with the ECMAScript engine's error.
#[test]
fn invalid_patterns_keep_their_compile_error() {
    let error = Pattern::new("(").err().unwrap();
    assert!(
        error.starts_with("Invalid regular expression: /(/: "),
        "{error}"
    );
}

/// A small deterministic generator (no dependency): a linear congruential sequence.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

fn random_pattern(rng: &mut Lcg, depth: usize, groups: &mut usize) -> String {
    const ATOMS: &[&str] = &[
        "a", "b", "-", "é", "😀", " ", "1", "_", ".", r"\d", r"\D", r"\w", r"\W", r"\s", r"\S",
        "[ab]", "[^a]", "[a-c]", r"[\d_]", r"[^\s]", r"[\w-]", r"\.", r"\n", "x",
    ];
    const QUANTIFIERS: &[&str] = &[
        "", "", "", "*", "+", "?", "{1,2}", "{2}", "{0,}", "*?", "+?",
    ];
    let mut out = String::new();
    for _ in 0..1 + rng.next(4) {
        let piece = match rng.next(if depth > 2 { 12 } else { 18 }) {
            0 => "^".to_string(),
            1 => "$".to_string(),
            2 => r"\b".to_string(),
            3 if *groups > 0 => format!(r"\{}", 1 + rng.next(*groups)),
            12 | 13 => {
                *groups += 1;
                format!("({})", random_pattern(rng, depth + 1, groups))
            }
            14 => format!("(?:{})", random_pattern(rng, depth + 1, groups)),
            15 => format!(
                "{}|{}",
                random_pattern(rng, depth + 1, groups),
                random_pattern(rng, depth + 1, groups)
            ),
            16 => format!("(?={})", random_pattern(rng, depth + 1, groups)),
            17 => format!("(?<!{})", random_pattern(rng, depth + 1, groups)),
            _ => ATOMS[rng.next(ATOMS.len())].to_string(),
        };
        out.push_str(&piece);
        let quantifiable = !matches!(piece.as_str(), "^" | "$" | r"\b") && !piece.contains('|');
        if quantifiable {
            out.push_str(QUANTIFIERS[rng.next(QUANTIFIERS.len())]);
        }
    }
    out
}

/// Random patterns over the translated constructs give exactly regress's answers.
#[test]
fn random_patterns_match_as_ecmascript_does() {
    let alphabet: Vec<char> = "ab-.xé😀 \n1_A".chars().collect();
    let mut rng = Lcg(11);
    let (mut compared, mut refused) = (0, 0);
    for _ in 0..1500 {
        let source = random_pattern(&mut rng, 0, &mut 0);
        let Ok(reference) = regress::Regex::with_flags(&source, "u") else {
            continue;
        };
        let pattern = Pattern::new(&source).unwrap();
        for _ in 0..12 {
            let text: String = (0..rng.next(7))
                .map(|_| alphabet[rng.next(alphabet.len())])
                .collect();
            match pattern.is_match(&text) {
                Ok(answer) => {
                    compared += 1;
                    assert_eq!(
                        answer,
                        reference.find(&text).is_some(),
                        "/{source}/ against {text:?}"
                    );
                }
                // Refused (back-references into repeated groups, lookbehinds fancy-regex
                // cannot run, ...): an error, never a different answer.
                Err(_) => refused += 1,
            }
        }
    }
    // The generator favours exotic constructs; still most cases are decided.
    assert!(
        compared > 4 * refused,
        "compared {compared}, refused {refused}"
    );
}
