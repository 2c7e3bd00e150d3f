//! The index in memory: a base segment and its delta, what is derived from them when they
//! load (which docs are live candidates, supersession, tags, targets, length statistics), and
//! the search.
//!
//! Loading reads no per-doc table whole: the segments are mapped, and what is derived is
//! either small (tags, targets, expiry, supersession) or a bitset. A search reads the posting
//! lists of its terms, the rank and length tables of the docs they hold, and, for its K hits,
//! their files: what a hit shows (title, description, gist, tags) is parsed from the file,
//! after checking that the file still has the hash the index recorded. A file that does not
//! (changed or gone since the index was checked) is left out of the hits and counted in
//! [`Search::stale`], so that the caller can check the files again.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use globset::GlobMatcher;

use crate::lesson::Outcome;

use super::codec::{self, Block, Corrupt, BODY};
use super::record::{self, FileStamp, FileStat, LessonFields, Record, TargetGlobs};
use super::score::{self, FieldStats, QueryTerms, Settings, LEN_SLOTS};
use super::segment::{self, Header, Kind, Patch, Segment, F_SUPERSEDES};
use super::text::{self, Term};
use super::vectors::Fed;
use super::{Explanation, Gates, Hit, InferredTags, Request, ScoreParts, TagGate, TargetGate};
use crate::walk::path_order;

mod load;
mod prune;
mod query;

pub use query::{Cosines, Semantic};

/// In [`Index`]'s commit times: a lesson that no commit holds yet.
const NOT_COMMITTED: i64 = i64::MIN;
/// A doc whose commit time is not looked up yet.
const NOT_LOOKED_UP: i64 = i64::MAX;

/// A set of targets and, once needed, their compiled globs.
#[derive(Debug)]
struct TargetSet {
    targets: Vec<TargetGlobs>,
    compiled: OnceLock<Vec<[Option<Option<GlobMatcher>>; 3]>>,
}

impl TargetSet {
    fn new(targets: Vec<TargetGlobs>) -> TargetSet {
        TargetSet {
            targets,
            compiled: OnceLock::new(),
        }
    }

    /// The index of the first target whose globs all match the caller, if any.
    fn matching(&self, caller: [Option<&str>; 3]) -> Option<usize> {
        let compiled = self.compiled.get_or_init(|| {
            self.targets
                .iter()
                .map(|t| {
                    [&t.operator, &t.role, &t.skill].map(|g| {
                        g.as_ref()
                            .map(|g| globset::Glob::new(g).ok().map(|g| g.compile_matcher()))
                    })
                })
                .collect()
        });
        compiled.iter().position(|globs| {
            globs.iter().zip(caller).all(|(glob, value)| match glob {
                None => true,
                // an invalid glob never matches (lint reports it)
                Some(None) => false,
                Some(Some(m)) => value.is_some_and(|v| m.is_match(v)),
            })
        })
    }
}

/// A bit per doc.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    /// `n` bits from a segment's little-endian words, the rest of the words cleared.
    fn from_segment(bytes: &[u8], n: usize, capacity: usize) -> Bits {
        let mut bits = Bits::new(capacity);
        for (w, chunk) in bits.0.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut a = [0u8; 8];
            a.copy_from_slice(chunk);
            *w = u64::from_le_bytes(a);
        }
        let words = n.div_ceil(64);
        if !n.is_multiple_of(64) {
            bits.0[words - 1] &= (1u64 << (n % 64)) - 1;
        }
        for w in &mut bits.0[words..] {
            *w = 0;
        }
        bits
    }

    #[inline]
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    /// The 64 bits from bit `i` on, bit `i` lowest (those past the end: 0).
    #[inline]
    fn word_at(&self, i: usize) -> u64 {
        let (w, shift) = (i / 64, i % 64);
        let low = self.0.get(w).copied().unwrap_or(0) >> shift;
        match shift {
            0 => low,
            _ => low | self.0.get(w + 1).copied().unwrap_or(0) << (64 - shift),
        }
    }

    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }

    /// Whether any bit in `lo..hi` is set.
    fn any_in(&self, lo: usize, hi: usize) -> bool {
        if lo >= hi {
            return false;
        }
        let (first, last) = (lo / 64, (hi - 1) / 64);
        (first..=last).any(|w| {
            let mut word = self.0[w];
            if w == first {
                word &= !0u64 << (lo % 64);
            }
            if w == last && !hi.is_multiple_of(64) {
                word &= (1u64 << (hi % 64)) - 1;
            }
            word != 0
        })
    }

    fn count(&self) -> u64 {
        self.0.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// The set bits, ascending.
    fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros() as usize;
                    w &= w - 1;
                    i * 64 + b
                })
            })
        })
    }
}

/// Where a hit's text comes from.
#[derive(Debug)]
enum Fields {
    /// Nowhere (an index that is only checked against the files, never searched).
    None,
    /// Kept from the records the index was built from (an in-memory index).
    Memory(Vec<Option<LessonFields>>),
    /// Read from the files under this root, held open (files are opened below it rather
    /// than by their whole path: a hit's file and ledger are two of a search's few system
    /// calls, and each walked every component of the root).
    Files(PathBuf, crate::walk::RootDir),
}

/// The tags of the live lessons: their keys (each with where its docs are listed) and which
/// docs have tags.
#[derive(Debug, Default)]
struct Tags {
    /// Known tags (normal form), ascending.
    keys: Vec<String>,
    /// Per key: (0 base, 1 delta; its index in that segment's tags).
    lists: Vec<Vec<(usize, usize)>>,
    /// Docs with tags.
    tagged: Bits,
}

/// Inverse length norms per doc and field (index id × 4 + field; title, description, tags,
/// body: a doc's four in one cache line), per term kind (word, trigram), for one `b`: each
/// computed the first time a search scores a posting that needs it.
#[derive(Debug)]
struct Norms {
    b: u64,
    fields: [OnceLock<Box<[AtomicU32]>>; 2],
}

/// Decoded skip tables, by segment (0 base, 1 delta) and term, and how many skips they hold.
#[derive(Debug, Default)]
struct SkipCache {
    lists: HashMap<(u8, Term), Arc<prune::TermSkips>>,
    held: usize,
}

/// One segment's targeted docs ([`Index::targeted`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Targeted<'a> {
    pub(super) pairs: segment::TargetPairs<'a>,
    /// The segment's first doc id.
    pub(super) offset: usize,
    /// Its docs.
    pub(super) local: usize,
    /// Its first target list.
    pub(super) first: usize,
}

impl Targeted<'_> {
    /// The index's number of this segment's list `set`.
    pub(super) fn list(&self, set: u32) -> Result<usize, Corrupt> {
        match set < self.pairs.sets {
            true => Ok(self.first + set as usize),
            false => Err(Corrupt("target list out of range")),
        }
    }

    /// Every targeted doc (its id in the index) and its list.
    pub(super) fn docs(&self) -> impl Iterator<Item = Result<(usize, usize), Corrupt>> + '_ {
        self.pairs
            .iter()
            .map(|(id, set)| match (id as usize) < self.local {
                true => Ok((self.offset + id as usize, self.list(set)?)),
                false => Err(Corrupt("targeted doc out of range")),
            })
    }
}

/// A base and its delta, with what is derived from them at load.
#[derive(Debug)]
pub struct Index {
    base: Arc<Segment>,
    delta: Option<Arc<Segment>>,
    base_count: usize,
    n: usize,
    deleted: Bits,
    deleted_count: usize,
    restat: HashMap<u32, FileStat>,
    /// Each lesson's last commit, when the bank is in git and git holds any lesson: set at
    /// search time from the provenance cache ([`Index::set_provenance`]), never stored in the
    /// index (it moves with HEAD).
    commits: Option<Commits>,
    /// Live lessons that no live lesson supersedes and no error holds back.
    candidates: Bits,
    /// Live lessons held back for error-level findings in their own file, in path order.
    held: Vec<HeldBack>,
    expires: Vec<(u32, i64)>,
    target_sets: OnceLock<Result<Vec<TargetSet>, Corrupt>>,
    /// The docs with targets, once a search without a caller needs them.
    targeted_bits: OnceLock<Result<Bits, Corrupt>>,
    tags: Tags,
    lessons: u64,
    stats: FieldStats,
    norms: Mutex<Option<Arc<Norms>>>,
    /// The skip tables the searches decoded, by segment and term.
    skips: Mutex<SkipCache>,
    /// Whether a search has run (the norms' table is made from the second on).
    searched: AtomicBool,
    /// What bounds each doc's score besides its similarity, once a search needs it.
    priors: OnceLock<Result<prune::Priors, Corrupt>>,
    paths: OnceLock<Result<Paths, Corrupt>>,
    fields: Fields,
    /// The lessons hits were read from, by doc id: a hit whose file still has the bytes indexed
    /// is not parsed again (in a process that keeps the index open, parsing the K files was a
    /// fifth of a search). An index never changes a doc's bytes; a refresh makes a new index.
    parsed: Mutex<HashMap<usize, Arc<LessonFields>>>,
}

/// Parsed hits an index keeps at most ([`Index::parsed`]): past them, the cache starts over.
const PARSED_KEPT: usize = 1024;

/// The provenance a search ranks by, and per doc id the time of the lesson's last commit
/// (seconds; [`NOT_COMMITTED`] when it has none), looked up on a doc's first use
/// ([`Index::commit_time`]): a new process pays for the docs it scores, not for every doc.
#[derive(Debug)]
struct Commits {
    provenance: Arc<crate::git::provenance::Provenance>,
    times: Box<[AtomicI64]>,
}

/// The live docs' paths, decoded once, in path order.
#[derive(Debug)]
struct Paths {
    text: String,
    docs: Vec<(u32, usize, usize)>,
}

/// A live doc, for checking the index against the files.
#[derive(Debug, Clone, Copy)]
pub struct IndexedFile<'a> {
    /// Doc id in the index (base docs first, then delta docs).
    pub id: u32,
    /// Path relative to the bank root.
    pub path: &'a str,
    /// Stat and hash when indexed (or re-stated).
    pub stat: FileStat,
}

/// A live lesson as `_index.md` lists it, read from the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// Path relative to the bank root.
    pub path: String,
    /// Slug.
    pub slug: String,
    /// Title as written.
    pub title: String,
    /// `supersedes`.
    pub supersedes: Vec<String>,
    /// Outcome.
    pub outcome: Outcome,
    /// Confidence (the default filled in).
    pub confidence: f64,
    /// `success_count`.
    pub successes: u64,
    /// `failure_count`.
    pub failures: u64,
    /// `expires_at`, nanoseconds since the epoch.
    pub expires_ns: Option<i64>,
}
/// A lesson that is not served: its own file has error-level findings.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HeldBack {
    /// Slug.
    pub slug: String,
    /// Path relative to the bank root.
    pub path: String,
    /// The codes of its error-level findings, sorted (none when it is only quarantined).
    pub codes: Vec<String>,
    /// For a lesson in quarantine (`metadata.lesson.quarantine`), the rules it tripped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<Vec<String>>,
}

/// What a search found, and how much work it took.
#[derive(Debug, Clone)]
pub struct Search {
    /// Best first, at most K.
    pub hits: Vec<Hit>,
    /// The request's tags (`--tag`), in normal form.
    pub given_tags: Vec<String>,
    /// Known tags found among the request's words.
    pub inferred_tags: Vec<String>,
    /// Lessons in the bank.
    pub lessons: u64,
    /// Lessons that passed the gates.
    pub eligible: u64,
    /// Postings read.
    pub postings: u64,
    /// Request terms left out because nearly every lesson holds them.
    pub skipped_terms: u64,
    /// Paths of the hits left out because their file changed or vanished since the index was
    /// checked.
    pub stale: Vec<String>,
    /// Lessons of the bank never served because their own file has error-level findings
    /// (`lesson lint` lists them), in path order.
    pub held_back: Vec<HeldBack>,
}
