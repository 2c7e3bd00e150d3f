//! From text to terms: the normalisation every field and every request goes through.
//!
//! - **Words** are maximal runs of alphanumeric characters (Unicode `char::is_alphanumeric`),
//!   lowercased with Unicode's full lowercase mapping. Everything else (spaces, punctuation,
//!   symbols, `_`) separates words.
//! - **Identifiers are split and kept whole.** A run is also split at camelCase boundaries
//!   (`parseJSONFile` → `parse json file`), and words joined by `_` or `-` form one identifier
//!   (`snake_case`, `read-modify-write`). Each piece is a word term, and an identifier of two
//!   pieces or more also yields the pieces concatenated (`parsejsonfile`) as one more word term.
//!   So `parse_json_file`, `parseJsonFile`, `parse-json-file`, `ParseJSONFile` and
//!   `parsejsonfile` all share the word term `parsejsonfile`, and the first four share the
//!   pieces as well.
//! - **Trigrams** are taken over each piece's characters, padded with one space on each side
//!   (`" ca"`, `"cat"`, `"at "`), so a one-letter word still has a trigram (`" x "`), typos
//!   keep most of a word's trigrams and prefixes and stems share theirs.
//! - **CJK** (Han, kana, Hangul) runs have no spaces between words: such a run is a piece of
//!   its own (split from adjacent Latin letters), its word terms are its overlapping character
//!   bigrams (the character itself for a one-character run), and its trigrams are taken like
//!   any piece's. Two-character CJK words therefore match inside longer runs.
//!
//! A term is a `u64`: a trigram packs its three code points (21 bits each) into the low 63
//! bits; a word is the FNV-1a hash of its UTF-8 bytes with the top bit set. Both are stable
//! across runs and platforms, which the persisted index relies on.

/// A word or trigram, as stored in posting lists.
pub type Term = u64;

/// The top bit marks word terms; trigram terms never set it.
const WORD_BIT: u64 = 1 << 63;
/// A trigram term's bits, and one character's within them.
const TRIGRAM_MASK: u64 = (1 << 63) - 1;
const CHAR_MASK: u64 = (1 << 21) - 1;
/// The padding character of trigrams.
const PAD: char = ' ';

/// Which kind of term a [`Term`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A whole (normalised) word, or a CJK bigram.
    Word,
    /// Three consecutive characters of a padded word.
    Trigram,
}

/// The kind of a term.
pub fn kind(term: Term) -> Kind {
    if term & WORD_BIT != 0 {
        Kind::Word
    } else {
        Kind::Trigram
    }
}

/// The term of a word (already normalised).
pub fn word_term(word: &str) -> Term {
    fnv1a(word.as_bytes()) | WORD_BIT
}

/// The term of a trigram.
pub fn trigram_term(a: char, b: char, c: char) -> Term {
    ((a as u64) << 42) | ((b as u64) << 21) | (c as u64)
}

/// FNV-1a, 64 bits: tiny, stable and good enough to key words.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Whether `c` belongs to a script written without spaces between words (or, for Hangul,
/// with particles glued to words): Han, Hiragana, Katakana, Hangul and their extensions.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF       // Hangul Jamo
        | 0x2E80..=0x2FDF     // CJK radicals, Kangxi radicals
        | 0x3040..=0x30FF     // Hiragana, Katakana
        | 0x3100..=0x312F     // Bopomofo
        | 0x3130..=0x318F     // Hangul compatibility Jamo
        | 0x31A0..=0x31FF     // Bopomofo extended, CJK strokes, Katakana extensions
        | 0x3400..=0x4DBF     // CJK extension A
        | 0x4E00..=0x9FFF     // CJK unified ideographs
        | 0xA960..=0xA97F     // Hangul Jamo extended A
        | 0xAC00..=0xD7FF     // Hangul syllables, Jamo extended B
        | 0xF900..=0xFAFF     // CJK compatibility ideographs
        | 0xFF66..=0xFF9F     // halfwidth Katakana
        | 0x20000..=0x3FFFF   // CJK extensions B..
    )
}

/// One normalised piece of an identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Lowercased characters.
    pub chars: Vec<char>,
    /// A CJK run (bigram word terms).
    pub cjk: bool,
}

impl Piece {
    /// The piece as a string.
    pub fn text(&self) -> String {
        self.chars.iter().collect()
    }
}

/// Split `text` into identifiers, each a list of pieces, and call `f` on each identifier.
///
/// An identifier is a maximal sequence of alphanumeric runs joined by single `_` or `-`
/// characters; its pieces are the runs split at camelCase and CJK/non-CJK boundaries.
pub fn for_each_identifier(text: &str, mut f: impl FnMut(&[Piece])) {
    let mut pieces: Vec<Piece> = Vec::new();
    let mut current: Vec<char> = Vec::new();
    let mut current_cjk = false;
    // the previous character of the current run, as written (for camelCase boundaries)
    let mut prev: Option<char> = None;
    // a `_` or `-` right after a run: the identifier continues if a run follows at once
    let mut pending_connector = false;
    let mut chars = text.chars().peekable();
    let flush_piece = |current: &mut Vec<char>, cjk: bool, pieces: &mut Vec<Piece>| {
        if !current.is_empty() {
            pieces.push(Piece {
                chars: std::mem::take(current),
                cjk,
            });
        }
    };
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() {
            let cjk = is_cjk(c);
            if pending_connector {
                pending_connector = false;
            }
            let boundary = match prev {
                None => false,
                Some(p) => {
                    cjk != current_cjk
                        || (p.is_lowercase() || p.is_numeric()) && c.is_uppercase()
                        || p.is_uppercase()
                            && c.is_uppercase()
                            && chars.peek().is_some_and(|n| n.is_lowercase())
                }
            };
            if boundary {
                flush_piece(&mut current, current_cjk, &mut pieces);
            }
            current_cjk = cjk;
            current.extend(c.to_lowercase());
            prev = Some(c);
            continue;
        }
        // a separator
        flush_piece(&mut current, current_cjk, &mut pieces);
        let connector = (c == '_' || c == '-')
            && prev.is_some()
            && !pending_connector
            && chars.peek().is_some_and(|n| n.is_alphanumeric());
        if connector {
            pending_connector = true;
        } else {
            if !pieces.is_empty() {
                f(&pieces);
                pieces.clear();
            }
            pending_connector = false;
        }
        prev = None;
    }
    flush_piece(&mut current, current_cjk, &mut pieces);
    if !pieces.is_empty() {
        f(&pieces);
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

#[inline(always)]
fn fnv_char(mut h: u64, c: char) -> u64 {
    if c.is_ascii() {
        return (h ^ c as u64).wrapping_mul(FNV_PRIME);
    }
    let mut buf = [0u8; 4];
    for &b in c.encode_utf8(&mut buf).as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The tokenizer's state within one piece and one identifier.
struct Terms<'o> {
    /// Where the terms go.
    out: &'o mut Vec<Term>,
    /// Characters in the current piece (0: no piece open).
    len: usize,
    cjk: bool,
    /// FNV state of the current piece, and of the identifier's Latin pieces joined.
    piece_hash: u64,
    joined_hash: u64,
    latin_pieces: usize,
    /// The trigram window: the two characters before the next one (`a` is `None` before the
    /// piece's first character).
    a: Option<char>,
    b: char,
    /// The previous character of a CJK piece, for bigrams.
    cjk_prev: Option<char>,
}

impl Terms<'_> {
    fn open(&mut self, cjk: bool) {
        self.len = 0;
        self.cjk = cjk;
        self.piece_hash = FNV_OFFSET;
        self.a = None;
        self.b = PAD;
        self.cjk_prev = None;
    }

    #[inline(always)]
    fn push(&mut self, c: char) {
        self.len += 1;
        self.piece_hash = fnv_char(self.piece_hash, c);
        if self.cjk {
            if let Some(p) = self.cjk_prev {
                self.out
                    .push(fnv_char(fnv_char(FNV_OFFSET, p), c) | WORD_BIT);
            }
            self.cjk_prev = Some(c);
        } else {
            self.joined_hash = fnv_char(self.joined_hash, c);
        }
        self.slide(c);
    }

    /// [`Terms::push`] of each byte of `run` (ASCII lower-case letters and digits) into the
    /// open Latin piece, which has a character already (so each byte ends a trigram): the
    /// piece's state in locals, not written back a byte at a time.
    #[inline(always)]
    fn push_run(&mut self, run: &[u8]) {
        let Some(first) = self.a else {
            // (a piece with no character yet: the caller pushed one, but byte by byte then)
            for &c in run {
                self.push(char::from(c));
            }
            return;
        };
        debug_assert!(self.len != 0 && !self.cjk);
        let (mut piece, mut joined) = (self.piece_hash, self.joined_hash);
        // the window's two characters and the next, packed as a trigram term is
        let mut window = (u64::from(first) << 21) | u64::from(self.b);
        // (a slice's map: the terms written without a capacity check each)
        self.out.extend(run.iter().map(|&c| {
            let c = u64::from(c);
            piece = (piece ^ c).wrapping_mul(FNV_PRIME);
            joined = (joined ^ c).wrapping_mul(FNV_PRIME);
            window = ((window << 21) | c) & TRIGRAM_MASK;
            window
        }));
        let (a, b) = (window >> 21 & CHAR_MASK, window & CHAR_MASK);
        self.len += run.len();
        (self.piece_hash, self.joined_hash) = (piece, joined);
        // (characters the window held, or bytes of the run: never other values)
        self.a = char::from_u32(a as u32);
        self.b = char::from_u32(b as u32).unwrap_or(PAD);
    }

    #[inline(always)]
    fn slide(&mut self, c: char) {
        if let Some(a) = self.a {
            self.out.push(trigram_term(a, self.b, c));
        }
        self.a = Some(self.b);
        self.b = c;
    }

    /// Close the current piece, if one is open (inlined: it is called after every separator
    /// character, and most find nothing open).
    #[inline(always)]
    fn close(&mut self) {
        if self.len != 0 {
            self.close_open();
        }
    }

    /// Close the current piece, which is open.
    #[inline(always)]
    fn close_open(&mut self) {
        self.slide(PAD);
        if !self.cjk {
            self.out.push(self.piece_hash | WORD_BIT);
            self.latin_pieces += 1;
        } else if self.len == 1 {
            self.out.push(self.piece_hash | WORD_BIT);
        }
        self.len = 0;
    }

    /// Close the identifier: its joined word when it has two Latin pieces or more.
    #[inline(always)]
    fn end_identifier(&mut self) {
        self.close();
        // no Latin piece closed: the joined hash is as it was reset (every Latin character
        // pushed since is in a piece, and every piece is closed)
        if self.latin_pieces != 0 {
            self.end_pieces();
        }
    }

    #[inline(always)]
    fn end_pieces(&mut self) {
        if self.latin_pieces >= 2 {
            self.out.push(self.joined_hash | WORD_BIT);
        }
        self.latin_pieces = 0;
        self.joined_hash = FNV_OFFSET;
    }
}

/// Call `f` on every term of `text`, with repetitions: per piece its word term (or CJK
/// bigrams) and padded trigrams, per identifier of two Latin pieces or more the joined word.
/// The same terms as splitting with [`for_each_identifier`] (a test checks).
pub fn for_each_term(text: &str, f: impl FnMut(Term)) {
    let mut out = Vec::new();
    push_terms(text, &mut out);
    out.into_iter().for_each(f);
}

/// [`for_each_term`] into `out` (appended), as the index build and a request gather them.
pub fn push_terms(text: &str, out: &mut Vec<Term>) {
    let mut t = Terms {
        out,
        len: 0,
        cjk: false,
        piece_hash: FNV_OFFSET,
        joined_hash: FNV_OFFSET,
        latin_pieces: 0,
        a: None,
        b: PAD,
        cjk_prev: None,
    };
    let bytes = text.as_bytes();
    let mut prev: Option<char> = None;
    let mut pending_connector = false;
    let mut pos = 0;
    while pos < bytes.len() {
        // between identifiers (no piece open, no connector pending): the plain words and
        // separators from here at once, up to what needs the general path below
        if prev.is_none() && !pending_connector {
            pos = lone_words(bytes, pos, t.out);
        }
        let Some((c, width)) = char_at(text, pos) else {
            break;
        };
        pos += width;
        if c.is_alphanumeric() {
            let cjk = !c.is_ascii() && is_cjk(c);
            pending_connector = false;
            if let Some(p) = prev {
                let boundary = cjk != t.cjk
                    || (p.is_lowercase() || p.is_numeric()) && c.is_uppercase()
                    || p.is_uppercase()
                        && c.is_uppercase()
                        && char_at(text, pos).is_some_and(|(n, _)| n.is_lowercase());
                if boundary {
                    t.close();
                }
            }
            if t.len == 0 {
                t.open(cjk);
            }
            if c.is_ascii() {
                t.push(c.to_ascii_lowercase());
            } else {
                for l in c.to_lowercase() {
                    t.push(l);
                }
            }
            prev = Some(c);
            // the rest of a Latin piece's run of ASCII lower-case letters and digits: none of
            // them starts a piece, so each is only pushed (what the loop above would do)
            if !t.cjk {
                let run = ascii_run(&bytes[pos..]);
                if let Some(&last) = run.last() {
                    t.push_run(run);
                    prev = Some(char::from(last));
                    pos += run.len();
                }
            }
            continue;
        }
        t.close();
        let connector = (c == '_' || c == '-')
            && prev.is_some()
            && !pending_connector
            && char_at(text, pos).is_some_and(|(n, _)| n.is_alphanumeric());
        if connector {
            pending_connector = true;
        } else {
            t.end_identifier();
            pending_connector = false;
        }
        prev = None;
    }
    t.end_identifier();
}

/// From `pos`, between identifiers (no piece open, no connector pending), the terms of each
/// word of ASCII text that is one piece and one identifier (a letter or digit, then lower-case
/// letters and digits, then the end or an ASCII separator other than `_` and `-`) and the
/// separators around them: what the general path gives for them (each word's trigrams, then
/// its word), in a loop of its own. Returns where it stopped: the end, a non-ASCII character,
/// or the start of a word it leaves to the general path (a capital inside it, a connector or
/// a non-ASCII character after it).
fn lone_words(bytes: &[u8], mut pos: usize, out: &mut Vec<Term>) -> usize {
    // a word of n bytes gives n + 1 terms and a separator or the end follows it
    out.reserve(bytes.len() - pos + 1);
    loop {
        // separators: after one, `_` and `-` join nothing either
        while let Some(&b) = bytes.get(pos) {
            if !b.is_ascii() || b.is_ascii_alphanumeric() {
                break;
            }
            pos += 1;
        }
        let Some(&first) = bytes.get(pos) else {
            return pos;
        };
        if !first.is_ascii() {
            return pos;
        }
        let start = pos;
        let rest = ascii_run(&bytes[pos + 1..]);
        pos += 1 + rest.len();
        if let Some(&next) = bytes.get(pos) {
            if !next.is_ascii() || next.is_ascii_alphanumeric() || next == b'_' || next == b'-' {
                return start;
            }
        }
        let first = u64::from(first.to_ascii_lowercase());
        let mut piece = (FNV_OFFSET ^ first).wrapping_mul(FNV_PRIME);
        let mut window = (PAD as u64) << 21 | first;
        // (a slice's map: written without a capacity check each)
        out.extend(rest.iter().map(|&c| {
            let c = u64::from(c);
            piece = (piece ^ c).wrapping_mul(FNV_PRIME);
            window = ((window << 21) | c) & TRIGRAM_MASK;
            window
        }));
        out.push(((window << 21) | PAD as u64) & TRIGRAM_MASK);
        out.push(piece | WORD_BIT);
    }
}

/// The longest prefix of `bytes` of ASCII lower-case letters and digits.
#[inline(always)]
fn ascii_run(bytes: &[u8]) -> &[u8] {
    let n = bytes
        .iter()
        .position(|b| !(b.is_ascii_lowercase() || b.is_ascii_digit()))
        .unwrap_or(bytes.len());
    &bytes[..n]
}

/// The character of `text` at byte `pos` (a character boundary) and its width, if any.
#[inline(always)]
fn char_at(text: &str, pos: usize) -> Option<(char, usize)> {
    let b = *text.as_bytes().get(pos)?;
    if b.is_ascii() {
        return Some((char::from(b), 1));
    }
    let c = text[pos..].chars().next()?;
    Some((c, c.len_utf8()))
}

/// The normalised words of `text` (the pieces, in order), for matching tags against a request.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_identifier(text, |pieces| {
        out.extend(pieces.iter().map(Piece::text));
    });
    out
}

/// A tag in normal form: its words joined by single spaces (`Code_Review` → `code review`).
pub fn tag_key(tag: &str) -> String {
    // ASCII without capitals (most tags): the words are the runs of letters and digits
    if tag.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        let mut key = String::with_capacity(tag.len());
        for word in tag.split(|c: char| !c.is_ascii_alphanumeric()) {
            if !word.is_empty() {
                if !key.is_empty() {
                    key.push(' ');
                }
                key.push_str(word);
            }
        }
        return key;
    }
    words(tag).join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identifiers(text: &str) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        for_each_identifier(text, |p| out.push(p.iter().map(Piece::text).collect()));
        out
    }

    fn terms(text: &str) -> Vec<Term> {
        let mut out = Vec::new();
        for_each_term(text, |t| out.push(t));
        out
    }

    /// The terms by the book: identifiers split into pieces, then each piece's terms.
    fn reference_terms(text: &str) -> Vec<Term> {
        let mut out = Vec::new();
        for_each_identifier(text, |pieces| {
            for piece in pieces {
                piece_terms(piece, &mut |t| out.push(t));
            }
            let latin: Vec<&Piece> = pieces.iter().filter(|p| !p.cjk).collect();
            if latin.len() >= 2 {
                let joined: String = latin.iter().map(|p| p.text()).collect();
                out.push(word_term(&joined));
            }
        });
        out
    }

    fn piece_terms(piece: &Piece, f: &mut impl FnMut(Term)) {
        let chars = &piece.chars;
        if piece.cjk {
            if chars.len() == 1 {
                f(word_term(&piece.text()));
            } else {
                let mut buf = [0u8; 8];
                for pair in chars.windows(2) {
                    let mut s = String::with_capacity(8);
                    s.push_str(pair[0].encode_utf8(&mut buf));
                    s.push_str(pair[1].encode_utf8(&mut buf));
                    f(word_term(&s));
                }
            }
        } else {
            f(word_term(&piece.text()));
        }
        let n = chars.len();
        let at = |i: usize| {
            if i == 0 || i == n + 1 {
                PAD
            } else {
                chars[i - 1]
            }
        };
        for i in 0..n {
            f(trigram_term(at(i), at(i + 1), at(i + 2)));
        }
    }

    proptest::proptest! {
        #[test]
        fn streaming_terms_are_the_reference_terms(
            text in "[a-zA-Z0-9 _.,:'İßÉé数据库连接テスト가나\\-\\n]{0,80}"
        ) {
            let mut fast = terms(&text);
            let mut by_the_book = reference_terms(&text);
            fast.sort_unstable();
            by_the_book.sort_unstable();
            proptest::prop_assert_eq!(fast, by_the_book);
        }

        #[test]
        fn a_tag_key_is_its_words_joined(tag in "[a-zA-Z0-9 _./:É数-]{0,24}") {
            proptest::prop_assert_eq!(tag_key(&tag), words(&tag).join(" "));
        }
    }

    #[test]
    fn identifiers_split_at_case_connectors_and_scripts() {
        assert_eq!(
            identifiers("parseJSONFile snake_case read-modify-write"),
            vec![
                vec!["parse", "json", "file"],
                vec!["snake", "case"],
                vec!["read", "modify", "write"],
            ]
        );
        assert_eq!(
            identifiers("- a list -- item, e.g. x_"),
            vec![
                vec!["a"],
                vec!["list"],
                vec!["item"],
                vec!["e"],
                vec!["g"],
                vec!["x"]
            ]
        );
        assert_eq!(
            identifiers("使用Rust编写"),
            vec![vec!["使用", "rust", "编写"]]
        );
        assert_eq!(
            identifiers("utf8 SHA256"),
            vec![vec!["utf8"], vec!["sha256"]]
        );
        assert_eq!(
            identifiers("ÉCOLE Straße"),
            vec![vec!["école"], vec!["straße"]]
        );
    }

    #[test]
    fn identifier_spellings_share_the_joined_word() {
        let joined = word_term("parsejsonfile");
        for spelling in [
            "parse_json_file",
            "parseJsonFile",
            "ParseJSONFile",
            "parse-json-file",
            "parsejsonfile",
        ] {
            assert!(terms(spelling).contains(&joined), "{spelling}");
        }
        assert!(terms("parseJsonFile").contains(&word_term("json")));
    }

    #[test]
    fn trigrams_are_padded_per_word() {
        let sorted = |mut v: Vec<Term>| {
            v.sort_unstable();
            v
        };
        assert_eq!(
            sorted(terms("Cat")),
            sorted(vec![
                word_term("cat"),
                trigram_term(' ', 'c', 'a'),
                trigram_term('c', 'a', 't'),
                trigram_term('a', 't', ' '),
            ])
        );
        assert_eq!(
            sorted(terms("x")),
            sorted(vec![word_term("x"), trigram_term(' ', 'x', ' ')])
        );
        assert_eq!(kind(word_term("cat")), Kind::Word);
        assert_eq!(kind(trigram_term('\u{10FFFF}', 'a', 'b')), Kind::Trigram);
    }

    #[test]
    fn cjk_runs_give_bigrams() {
        let t = terms("数据库连接");
        assert!(t.contains(&word_term("数据")));
        assert!(t.contains(&word_term("连接")));
        assert!(!t.contains(&word_term("数据库连接")));
        assert!(terms("猫").contains(&word_term("猫")));
    }

    #[test]
    fn tag_keys_normalise_case_and_separators() {
        assert_eq!(tag_key("Code_Review"), "code review");
        assert_eq!(tag_key("code-review"), "code review");
        assert_eq!(tag_key(" CI "), "ci");
    }
}
