//! Segments: the on-disk (and in-memory) form of the index.
//!
//! A **segment** is one byte format for both the immutable **base** and the small **delta**
//! that patches it (new and changed files, the base docs they replace, and new stats for base
//! docs whose file was touched but not changed). An index is a base plus at most one delta; a
//! delta grows until [`super::store::merge_threshold`], then the two are merged into a new base
//! from what the segments hold: nothing is parsed or tokenised again. An in-memory build goes
//! through the same bytes, so a fresh index and a persisted, patched one answer a request
//! identically.
//!
//! The index keeps what ranking and the gates need, and what it takes to notice a change:
//! each doc's path and stat, a lesson's numbers (confidence, counts, field lengths, expiry),
//! its slug, tags, targets and `supersedes`, and the posting lists; and its title, so that
//! `_index.md` can be rendered from the index alone (as `lesson watch` does). What a
//! hit shows (title, description, gist, tags as written) is read from the hit's file, whose
//! hash the index knows, so description and gist are not stored twice.
//!
//! Layout (little-endian; offsets from the start of the file):
//!
//! ```text
//! header     magic "LESSONIX", format version u32, kind u32 (0 base, 1 delta), index id u64
//!            (a delta: the id of the base it patches), generation u64, config hash u64,
//!            docs u32, terms u32, lessons u32, sections u32, field length totals u64 × 8,
//!            then per section: offset u64, length u64, checksum u64; then the checksum of
//!            all that (u64)
//! deleted    base doc ids, u32 each, ascending (a delta only)
//! restat     base doc id u32, size u64, mtime i64, ctime i64, inode u64, hash u64,
//!            settled u8, 3 bytes padding
//! stat       per doc: size u64, ctime i64, inode u64, hash u64
//! rank       per doc: mtime i64 (the file's, for checking it), confidence f64, successes u64,
//!            failures u64, flags u8, outcome u8, the ledger's newest event u48 (seconds since
//!            the epoch, 0 when none: the recency input outside git)
//! priors     per group of PRIOR_GROUP docs: the largest prior of its plain docs and of its
//!            cautions (f64 each, 0 when none); per doc its prior (f64: confidence × count
//!            factor, what its score multiplies its similarity by besides recency and the tag
//!            boost); a bit per doc: a caution (more failures than successes)
//! lens       per length slot (score::slot), per doc: u32
//! paths      per block of 32 docs an offset u32, then the paths in doc order, each the
//!            length of the prefix it shares with the previous one in its block (varint) and
//!            the rest (varint length, bytes)
//! path-index (path hash u64, doc u32, flags u32 (settled: bit 0), size u64, mtime i64,
//!            ctime i64, inode u64) per doc, ascending by hash: a walked file's doc, and whether
//!            its stat says the file is as indexed, without decoding the paths or reading the
//!            stat and rank tables in doc order
//! titles     a lesson's title as written (empty for other files), laid out as the paths are
//! lessons    a bit per doc: a lesson
//! slugs      the slugs that are not their file's name (`x.md` → `x`): count u32, then
//!            (doc u32, offset u32) ascending, then the strings
//! slug-index (slug hash u64, doc u32) per lesson, ascending
//! supersedes count u32, (doc u32, offset u32) ascending, then per doc its list of strings
//! superseded (doc u32, lessons of this segment superseding it u32), ascending
//! superseders (slug hash u64, doc u32) per lesson and each other slug it supersedes
//! targets    the distinct target lists: count u32, each a count and per target a presence
//!            byte and its globs; then count u32 and (doc u32, list u32) ascending
//! expires    (doc u32, expires_at i64 ns) ascending
//! tags       count u32, a bit per doc (tagged), then per tag (ascending): the key, and the
//!            doc ids as a posting list (count and byte length as varints)
//! held       the lessons with error-level findings, laid out as supersedes: per doc the
//!            codes
//! dict       24 bytes per term, ascending: term u64, postings offset u64, docs u32,
//!            checksum of the list u32 (its length: up to the next offset)
//! postings   the lists ([`codec`]'s block format; a term's list of more than one block starts
//!            with its skip table: per block its last id, length and score bounds)
//! ```
//!
//! Opening a segment reads and checks its header only (the file is mapped, not read). A
//! section is checked against its checksum the first time it is used, a posting list each
//! time it is read: a search reads the dictionary, the rank and length tables and the lists
//! of its terms; checking the index against the files reads the paths and stats.

use std::collections::{BTreeMap, HashMap};

use crate::lesson::Outcome;

use super::record::{FileStamp, FileStat, TargetGlobs};
use super::score::{self, TermHasher, LEN_SLOTS};
use super::text::{self, Term};
use crate::walk::path_order;

mod merge;
mod read;
mod write;

pub use merge::{merge, Part};
pub(crate) use read::PriorTable;
pub use read::{Segment, SegmentTags, TargetPairs};
pub use write::{analyse_sharded, encode, Analysed, Encoder, Patch};

/// The on-disk format version; a file of another version is rebuilt.
pub const FORMAT_VERSION: u32 = 8;
const MAGIC: &[u8; 8] = b"LESSONIX";

/// The sections, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sec {
    Deleted,
    Restat,
    Stat,
    Rank,
    Priors,
    Lens,
    Paths,
    PathIndex,
    Titles,
    Lessons,
    Slugs,
    SlugIndex,
    Supersedes,
    Superseded,
    Superseders,
    Targets,
    Expires,
    Tags,
    Held,
    Dict,
    Postings,
}

const SECTIONS: usize = 21;
const FIXED: usize = 120;
const HEAD: usize = FIXED + SECTIONS * 24 + 8;
const RESTAT_ENTRY: usize = 48;
const STAT_ENTRY: usize = 32;
const RANK_ENTRY: usize = 40;
const PATH_INDEX_ENTRY: usize = 48;
const DICT_ENTRY: usize = 24;
/// Docs per group of the priors section: a search's windows are whole groups.
pub(crate) const PRIOR_GROUP: usize = 128;
/// Docs per block of a string column (paths, titles): a lookup decodes at most this many.
const COLUMN_BLOCK: usize = 32;

pub(crate) const F_LESSON: u8 = 1;
pub(crate) const F_SETTLED: u8 = 2;
pub(crate) const F_TAGS: u8 = 4;
pub(crate) const F_TARGETS: u8 = 8;
pub(crate) const F_SUPERSEDES: u8 = 16;
pub(crate) const F_EXPIRES: u8 = 32;
/// A lesson with an error-level finding in its own file: indexed, never served.
pub(crate) const F_HELD: u8 = 64;

pub(crate) type TermMap<V> = HashMap<Term, V, std::hash::BuildHasherDefault<TermHasher>>;

/// Whether a segment is a base or a delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Stands alone.
    Base,
    /// Patches the base whose id it carries.
    Delta,
}

/// Identity of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// A base's random id; for a delta, the id of the base it patches.
    pub index_id: u64,
    /// Incremented on every write (base or delta): a watcher can vouch for a generation.
    pub generation: u64,
    /// Hash of the configuration that shaped the index (a change rebuilds it).
    pub config_hash: u64,
}

/// What the index keeps of a lesson.
#[derive(Debug, Clone, PartialEq)]
pub struct LessonMeta {
    /// Slug.
    pub slug: String,
    /// Title as written (what `_index.md` lists).
    pub title: String,
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
    /// Field lengths, per [`score::slot`].
    pub lens: [u32; LEN_SLOTS],
    /// Tags in normal form, sorted, without repeats.
    pub tag_keys: Vec<String>,
    /// `trigger.targets`.
    pub targets: Vec<TargetGlobs>,
    /// `supersedes`.
    pub supersedes: Vec<String>,
    /// The codes of the error-level findings in its file, sorted: held back when any.
    pub errors: Vec<String>,
    /// Its ledger's newest event, seconds since the epoch.
    pub ledger_at_s: Option<i64>,
}

/// What the index keeps of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// Path relative to the bank root, `/`-separated.
    pub path: String,
    /// Stat and hash when read.
    pub stat: FileStat,
    /// The lesson, when the file is one.
    pub lesson: Option<LessonMeta>,
}

/// The numbers of one doc that ranking reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rank {
    /// The file's modification time (for checking it, never for ranking).
    pub mtime_ns: i64,
    /// Its ledger's newest event, seconds since the epoch (the recency input outside git).
    pub ledger_at_s: Option<i64>,
    /// Confidence.
    pub confidence: f64,
    /// `success_count`.
    pub successes: u64,
    /// `failure_count`.
    pub failures: u64,
    flags: u8,
    outcome: u8,
}

impl Rank {
    /// Whether the file is a lesson.
    pub fn is_lesson(&self) -> bool {
        self.flags & F_LESSON != 0
    }

    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The outcome.
    pub fn outcome(&self) -> Outcome {
        outcome_of(self.outcome)
    }
}

fn outcome_of(b: u8) -> Outcome {
    match b {
        0 => Outcome::Success,
        1 => Outcome::Failure,
        _ => Outcome::Mixed,
    }
}

fn outcome_byte(o: Outcome) -> u8 {
    match o {
        Outcome::Success => 0,
        Outcome::Failure => 1,
        Outcome::Mixed => 2,
    }
}

/// The file name of `path` without `.md`: the slug a lesson is expected to have.
fn stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_suffix(".md").unwrap_or(name)
}

/// A doc's field lengths (title, description, tags, body) for terms of `kind`: what the
/// bounds of a term's skip table are made of (0 for a file that is not a lesson).
pub(crate) fn kind_lens(doc: &Doc, kind: text::Kind) -> [u32; 4] {
    let lens = doc.lesson.as_ref().map_or([0; LEN_SLOTS], |l| l.lens);
    std::array::from_fn(|f| lens[score::slot(f, kind)])
}

/// The hash a slug is looked up by.
pub(crate) fn slug_hash(slug: &str) -> u64 {
    text::fnv1a(slug.as_bytes())
}

/// The hash a path (relative to the root, `/`-separated) is looked up by: a word at a time,
/// since every file of the bank is hashed when a search checks the files.
/// Under test, four bits of it: paths share hashes in every bank a test builds, so that
/// the checks that tell them apart always run.
pub fn path_hash(path: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = crate::walk::PathHasher::default();
    h.write(path.as_bytes());
    match cfg!(test) {
        true => h.finish() & 0xF,
        false => h.finish(),
    }
}

/// A lesson's superseded slugs: distinct, not its own.
pub(crate) fn superseded_slugs<'a>(slug: &str, supersedes: &'a [impl AsRef<str>]) -> Vec<&'a str> {
    let mut out: Vec<&str> = supersedes
        .iter()
        .map(AsRef::as_ref)
        .filter(|s| *s != slug)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::read::Bytes;
    use super::write::write_segment;
    use super::*;
    use crate::retrieve::codec::ListWriter;

    fn lesson(slug: &str, tags: &[&str], supersedes: &[&str]) -> LessonMeta {
        LessonMeta {
            slug: slug.to_string(),
            title: format!("{slug}: a title, ü"),
            outcome: Outcome::Failure,
            confidence: 0.7,
            successes: 3,
            failures: 9,
            expires_ns: (tags.len() == 1).then_some(-5),
            lens: [1, 2, 3, 4, 5, 6, 7, 8],
            tag_keys: tags.iter().map(|s| s.to_string()).collect(),
            targets: if tags.is_empty() {
                Vec::new()
            } else {
                vec![TargetGlobs {
                    operator: None,
                    role: Some("rev*".into()),
                    skill: Some(slug.to_string()),
                }]
            },
            supersedes: supersedes.iter().map(|s| s.to_string()).collect(),
            errors: if supersedes.is_empty() {
                Vec::new()
            } else {
                vec!["S001".to_string()]
            },
            ledger_at_s: (tags.len() == 1).then_some(1_700_000_000),
        }
    }

    fn doc(path: &str, lesson: Option<LessonMeta>) -> Doc {
        Doc {
            path: path.to_string(),
            stat: FileStat {
                size: path.len() as u64,
                mtime_ns: -7,
                ctime_ns: 11,
                ino: 13,
                hash: 17,
                settled: path.len().is_multiple_of(2),
            },
            lesson,
        }
    }

    #[test]
    fn docs_round_trip_through_a_segment() {
        let docs = vec![
            doc("a.md", Some(lesson("a", &["ci", "git"], &["b", "a"]))),
            doc("b.md", Some(lesson("bee", &[], &[]))),
            doc("notes.md", None),
            doc("sub/a.md", Some(lesson("a", &["git"], &[]))),
            doc("sub/b.md", Some(lesson("b", &["ci"], &["a", "a"]))),
        ];
        let mut list = ListWriter::default();
        list.push(0, &[1, 0, 0, 2]);
        list.push(4, &[0, 0, 0, 1]);
        let (count, bytes) = list.finish();
        let patch = Patch {
            deleted: vec![9, 3],
            restat: vec![(2, docs[1].stat)],
        };
        let header = Header {
            index_id: 5,
            generation: 6,
            config_hash: 7,
        };
        let bytes = write_segment(Kind::Delta, header, &patch, &docs, &[(42, count, bytes)]);
        let seg = Segment::parse(bytes).unwrap();
        assert_eq!((seg.kind, seg.header), (Kind::Delta, header));
        assert_eq!(seg.docs().unwrap(), docs);
        assert_eq!(seg.lesson_count(), 4);
        assert_eq!(seg.deleted().unwrap(), [3, 9]);
        assert_eq!(seg.restat().unwrap(), [(2, docs[1].stat)]);
        assert_eq!(seg.slug(1).unwrap(), "bee");
        assert_eq!(seg.path(3).unwrap(), "sub/a.md");
        // `a.md` supersedes `b` (`sub/b.md`; its own slug `a` does not count), and `sub/b.md`
        // both lessons with slug `a`
        assert_eq!(seg.superseded().unwrap(), [(0, 1), (3, 1), (4, 1)]);
        assert_eq!(seg.superseders_of(slug_hash("a")).unwrap(), [4]);
        assert_eq!(seg.docs_with_slug_hash(slug_hash("a")).unwrap(), [0, 3]);
        // the targeted docs read in place: `a.md` and `sub/a.md` share a target list
        let targets = seg.target_pairs().unwrap();
        assert_eq!(targets.iter().collect::<Vec<_>>(), [(0, 0), (3, 0), (4, 1)]);
        assert_eq!((targets.len(), targets.sets), (3, 2));
        let lists: Vec<Option<u32>> = (0..6).map(|d| targets.of(d)).collect();
        assert_eq!(lists, [Some(0), None, None, Some(0), Some(1), None]);
        let list = seg.postings(42).unwrap().unwrap();
        assert_eq!(list.count, 2);
        assert!(list.for_each_posting(|_, _| {}).is_ok());
        assert_eq!(seg.postings(43).unwrap(), None);
    }

    /// The path index, merged with sorted keys, gives each key every doc of its hash (paths
    /// share hashes under test) and nothing else.
    #[test]
    fn the_path_index_joins_every_doc_of_a_key_hash() {
        let paths: Vec<String> = (0..60).map(|i| format!("d{}/l{i}.md", i % 3)).collect();
        let docs: Vec<Doc> = paths.iter().map(|p| doc(p, None)).collect();
        let bytes = write_segment(Kind::Base, Header::default(), &Patch::default(), &docs, &[]);
        let seg = Segment::parse(bytes).unwrap();
        // every third path, and paths of no doc
        let asked: Vec<String> = (0..90)
            .step_by(3)
            .map(|i| format!("d{}/l{i}.md", i % 3))
            .collect();
        let mut keys: Vec<(u64, u32)> = asked
            .iter()
            .enumerate()
            .map(|(i, p)| (path_hash(p), i as u32))
            .collect();
        keys.sort_unstable();
        let mut joined = Vec::new();
        let hashes: Vec<u64> = keys.iter().map(|k| k.0).collect();
        seg.join_path_hashes(&hashes, |i, doc, stamp| {
            assert_eq!(stamp, seg.stat(doc as usize).unwrap().stamp());
            joined.push((keys[i].1, doc))
        })
        .unwrap();
        joined.sort_unstable();
        let mut expected = Vec::new();
        for (k, p) in asked.iter().enumerate() {
            for (d, q) in paths.iter().enumerate() {
                if path_hash(p) == path_hash(q) {
                    expected.push((k as u32, d as u32));
                }
            }
        }
        assert_eq!(joined, expected);
        assert!(expected.len() > 2 * 20, "hashes shared: {}", expected.len());
    }

    #[test]
    fn a_damaged_section_is_found_when_it_is_used() {
        let docs = vec![doc("a.md", Some(lesson("a", &["ci"], &[])))];
        let bytes = write_segment(Kind::Base, Header::default(), &Patch::default(), &docs, &[]);
        let tags_at = {
            let seg = Segment::parse(bytes.clone()).unwrap();
            seg.sections[Sec::Tags as usize].start
        };
        let mut damaged = bytes.clone();
        damaged[tags_at + 4] ^= 1;
        assert!(Segment::parse(damaged.clone()).is_err());
        let seg = Segment::from_bytes(Bytes::Memory(damaged)).unwrap();
        assert!(seg.stat(0).is_ok(), "other sections are fine");
        assert!(seg.tags().is_err());
        let mut truncated = bytes.clone();
        truncated.pop();
        assert!(Segment::from_bytes(Bytes::Memory(truncated)).is_err());
        let mut header = bytes;
        header[50] ^= 1;
        assert!(Segment::from_bytes(Bytes::Memory(header)).is_err());
    }

    #[test]
    fn check_all_finds_damage_anywhere_and_trust_skips_every_check() {
        let docs = vec![doc("a.md", Some(lesson("a", &["ci"], &[])))];
        let mut list = ListWriter::default();
        list.push(0, &[1, 0, 0, 2]);
        let (count, list) = list.finish();
        let lists = [(42, count, list)];
        let bytes = write_segment(
            Kind::Base,
            Header::default(),
            &Patch::default(),
            &docs,
            &lists,
        );
        let sections = Segment::parse(bytes.clone()).unwrap().sections;
        let whole = Segment::from_bytes(Bytes::Memory(bytes.clone())).unwrap();
        assert_eq!(whole.check_all(), Ok(()));
        assert!(whole.postings(42).unwrap().is_some());
        for sec in [Sec::Tags, Sec::Postings] {
            let mut damaged = bytes.clone();
            damaged[sections[sec as usize].start + 1] ^= 1;
            let seg = Segment::from_bytes(Bytes::Memory(damaged.clone())).unwrap();
            assert!(seg.check_all().is_err(), "{sec:?}");
            let seg = Segment::from_bytes(Bytes::Memory(damaged.clone())).unwrap();
            let read = |seg: &Segment| match sec {
                Sec::Tags => seg.tags().map(|_| ()),
                _ => seg.postings(42).map(|_| ()),
            };
            let mismatch = read(&seg).unwrap_err();
            assert!(
                mismatch.0.contains("checksum mismatch"),
                "{sec:?}: {mismatch}"
            );
            // the same bytes taken as checked (what a watcher vouches for) are not checked
            let trusted = Segment::from_bytes(Bytes::Memory(damaged.clone())).unwrap();
            trusted.trust();
            assert_ne!(read(&trusted).err(), Some(mismatch), "{sec:?}");
            // a section found damaged before stays damaged
            if sec != Sec::Postings {
                seg.trust();
                assert_eq!(read(&seg).err(), Some(mismatch), "{sec:?}");
            }
        }
    }

    #[test]
    fn a_list_found_whole_is_remembered_and_a_damaged_one_fails_every_time() {
        let docs = vec![doc("a.md", Some(lesson("a", &["ci"], &[])))];
        let lists: Vec<(Term, u32, Vec<u8>)> = [42, 43]
            .into_iter()
            .map(|t| {
                let mut list = ListWriter::default();
                list.push(0, &[1, 0, 0, t as u32]);
                let (count, list) = list.finish();
                (t, count, list)
            })
            .collect();
        let mut bytes = write_segment(
            Kind::Base,
            Header::default(),
            &Patch::default(),
            &docs,
            &lists,
        );
        // the last byte of the postings: term 43's list
        let postings =
            Segment::parse(bytes.clone()).unwrap().sections[Sec::Postings as usize].clone();
        bytes[postings.end - 1] ^= 1;
        let seg = Segment::from_bytes(Bytes::Memory(bytes)).unwrap();
        let remembered = |i: usize| {
            seg.lists_checked.get().is_some_and(|bits| {
                bits[i / 64].load(std::sync::atomic::Ordering::Relaxed) >> (i % 64) & 1 == 1
            })
        };
        assert!(seg.postings(42).unwrap().is_some());
        assert!(remembered(0));
        for _ in 0..2 {
            let err = seg.postings(43).unwrap_err();
            assert!(err.0.contains("checksum mismatch"), "{err}");
        }
        assert!(!remembered(1));
        assert!(seg.postings(42).unwrap().is_some());
    }

    #[test]
    fn peek_reads_what_the_segment_says_of_itself_and_nothing_damaged() {
        let docs = vec![doc("a.md", Some(lesson("a", &["ci"], &[])))];
        let header = Header {
            index_id: 3,
            generation: 4,
            config_hash: 5,
        };
        let bytes = write_segment(Kind::Delta, header, &Patch::default(), &docs, &[]);
        let seg = Segment::parse(bytes.clone()).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("seg");
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(
            Segment::peek(&path),
            Some((Kind::Delta, header, seg.checksum()))
        );
        // another doc, another checksum
        let other = vec![doc("b.md", Some(lesson("a", &["ci"], &[])))];
        let other = write_segment(Kind::Delta, header, &Patch::default(), &other, &[]);
        assert_ne!(Segment::parse(other).unwrap().checksum(), seg.checksum());
        let mut damaged = bytes;
        damaged[40] ^= 1;
        std::fs::write(&path, &damaged).unwrap();
        assert_eq!(Segment::peek(&path), None);
        std::fs::write(&path, &damaged[..10]).unwrap();
        assert_eq!(Segment::peek(&path), None);
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn lower_bound_and_the_string_columns_agree_with_a_scan(
            names in proptest::collection::btree_set("[ab/.-]{1,6}", 0..100),
            probes in proptest::collection::vec("[ab/.-]{0,7}", 1..20),
        ) {
            let mut paths: Vec<String> = names.into_iter().collect();
            paths.sort_by(|a, b| path_order(a, b));
            let docs: Vec<Doc> = paths
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let l = (i % 3 != 0).then(|| LessonMeta {
                        title: format!("{}é {p}", "t".repeat(i % 5)),
                        ..lesson("x", &[], &[])
                    });
                    doc(p, l)
                })
                .collect();
            let bytes = write_segment(Kind::Base, Header::default(), &Patch::default(), &docs, &[]);
            let seg = Segment::parse(bytes).unwrap();
            for probe in paths.iter().chain(&probes) {
                let scan = paths.partition_point(|p| path_order(p, probe).is_lt());
                prop_assert_eq!(seg.lower_bound(probe).unwrap(), scan, "{}", probe);
            }
            let mut titles = Vec::new();
            seg.for_each_title(|_, t| titles.push(t.to_string())).unwrap();
            for (id, d) in docs.iter().enumerate() {
                let title = d.lesson.as_ref().map_or("", |l| l.title.as_str());
                prop_assert_eq!(&titles[id], title);
                prop_assert_eq!(seg.title(id).unwrap(), title);
                prop_assert_eq!(seg.path(id).unwrap(), d.path.as_str());
            }
        }
    }
}
