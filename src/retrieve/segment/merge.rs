//! Merging segments into one without parsing or tokenising anything again.

use std::collections::HashMap;

use rayon::prelude::*;

use super::write::write_segment;
use super::*;
use crate::retrieve::codec::{Corrupt, ListWriter, Tf};
use crate::retrieve::record::FileStat;

/// One input of [`merge`]: a segment, which of its docs are dead, and new stats for some.
pub struct Part<'a> {
    /// The segment.
    pub segment: &'a Segment,
    /// Per doc of the segment: dropped from the merge.
    pub dead: &'a [bool],
    /// New stats by doc id of the segment.
    pub restat: &'a HashMap<u32, FileStat>,
}

/// Merge the live docs of segments (whose live paths are distinct) into one new segment,
/// without parsing or tokenising anything: docs and posting lists are carried over.
pub fn merge(
    kind: Kind,
    header: Header,
    parts: &[Part],
    patch: &Patch,
) -> Result<Vec<u8>, Corrupt> {
    // the live docs of every part, in path order
    let mut live: Vec<(usize, u32, Doc)> = Vec::new();
    for (p, part) in parts.iter().enumerate() {
        for (id, mut doc) in part.segment.docs()?.into_iter().enumerate() {
            if part.dead.get(id).copied().unwrap_or(false) {
                continue;
            }
            if let Some(stat) = part.restat.get(&(id as u32)) {
                doc.stat = *stat;
            }
            live.push((p, id as u32, doc));
        }
    }
    live.sort_by(|a, b| path_order(&a.2.path, &b.2.path));
    let mut remap: Vec<Vec<Option<u32>>> = parts
        .iter()
        .map(|p| vec![None; p.segment.doc_count()])
        .collect();
    for (new_id, (p, id, _)) in live.iter().enumerate() {
        remap[*p][*id as usize] = Some(new_id as u32);
    }
    let docs: Vec<Doc> = live.into_iter().map(|(_, _, d)| d).collect();

    // every term of every part, ascending; each list's entries remapped and merged by new id
    let mut all_terms: Vec<Term> = Vec::new();
    for part in parts {
        for i in 0..part.segment.term_count() {
            all_terms.push(part.segment.dict_term(i)?);
        }
    }
    all_terms.sort_unstable();
    all_terms.dedup();
    let lists: Vec<Option<(Term, u32, Vec<u8>)>> = all_terms
        .par_iter()
        .map(|&t| -> Result<_, Corrupt> {
            let mut entries: Vec<(u32, Tf)> = Vec::new();
            for (p, part) in parts.iter().enumerate() {
                if let Some(list) = part.segment.postings(t)? {
                    let map = &remap[p];
                    let mut bad = false;
                    list.for_each_posting(|id, tf| match map.get(id as usize) {
                        Some(Some(new_id)) => entries.push((*new_id, *tf)),
                        Some(None) => {}
                        None => bad = true,
                    })?;
                    if bad {
                        return Err(Corrupt("doc id out of range"));
                    }
                }
            }
            if entries.is_empty() {
                return Ok(None);
            }
            entries.sort_unstable_by_key(|(id, _)| *id);
            let mut list = ListWriter::default();
            let kind = text::kind(t);
            for (id, tf) in &entries {
                list.push_scored(*id, tf, &kind_lens(&docs[*id as usize], kind));
            }
            let (count, bytes) = list.finish();
            Ok(Some((t, count, bytes)))
        })
        .collect::<Result<_, _>>()?;
    let lists: Vec<(Term, u32, Vec<u8>)> = lists.into_iter().flatten().collect();
    Ok(write_segment(kind, header, patch, &docs, &lists))
}
