//! A layered search: the bank in front and the banks it includes (`[banks] include`, see
//! [`crate::layers`]), each searched on its own index, the hits merged by score.
//!
//! - **One index per bank.** Each bank keeps its own `.lesson/`. The front bank never writes
//!   an included bank's: an included bank's persisted index is read and checked against its
//!   files (stat walk, hash, parse what changed) and patched in memory only; without one, it
//!   is built in memory. Its lock is never taken, its provenance cache never written.
//! - **One ranking.** Every bank is ranked with the front bank's `[retrieve]` settings, so
//!   scores compare; each bank's own `[lint]` says which of its files are lessons.
//! - **Supersession across banks.** A slug that a live lesson of any bank supersedes is not
//!   retrieved from another bank either. A slug two banks share is one lesson (AIP-11: one
//!   slug, one lesson): the copy in the first bank of the stack is retrieved, the others
//!   not.
//! - **Merge.** Each bank is asked for its top K (plus the lessons it may lose to the rules
//!   above); the hits are merged by score (ties by the stack's order, then slug), the top K
//!   kept, with up to `max-cautions` matching cautions kept in as a single bank keeps them.

use std::collections::HashMap;

use super::store::Retriever;
use super::{Explanation, Hit, Request, RetrieveError, Search};
use crate::bank::BankError;

/// An included bank's index, searched beside the front bank's.
#[derive(Debug)]
pub(crate) struct Included {
    /// The bank's name ([`crate::layers::Layer::name`]).
    pub name: String,
    /// Its index, read-only.
    pub retriever: Retriever,
}

impl Retriever {
    /// Open the banks this one includes, read-only, ranked with this bank's settings.
    pub(super) fn open_layers(&mut self) -> Result<(), RetrieveError> {
        let layers = crate::layers::resolve(self.root(), self.config()).map_err(BankError::from)?;
        for layer in layers {
            let mut retriever = Retriever::open_vouched(&layer.root, true)?;
            retriever.set_settings(self.settings().clone());
            self.layers.push(Included {
                name: layer.name,
                retriever,
            });
        }
        self.layers_checked = true;
        Ok(())
    }

    /// The names of the banks this one includes, in the order they are read (empty for a bank
    /// that includes none).
    pub fn included_banks(&self) -> Vec<&str> {
        self.layers.iter().map(|l| l.name.as_str()).collect()
    }

    /// [`Retriever::search`] across the bank and the banks it includes.
    pub(super) fn search_layered(&mut self, request: &Request) -> Result<Search, RetrieveError> {
        if !std::mem::take(&mut self.layers_checked) {
            for layer in &mut self.layers {
                layer.retriever.refresh()?;
            }
        }
        let k = request.k.unwrap_or(self.settings().k);
        // which bank supersedes what: a slug superseded in one bank is hidden in the others
        let mut superseded: Vec<Vec<(String, String)>> = vec![self.index().supersession()?];
        for layer in &self.layers {
            superseded.push(layer.retriever.index().supersession()?);
        }
        let hidden_in = |bank: usize| -> HashMap<&str, Vec<&str>> {
            let mut map: HashMap<&str, Vec<&str>> = HashMap::new();
            for (other, pairs) in superseded.iter().enumerate() {
                if other != bank {
                    for (old, by) in pairs {
                        map.entry(old.as_str()).or_default().push(by.as_str());
                    }
                }
            }
            map
        };
        let hidden: Vec<Vec<String>> = (0..=self.layers.len())
            .map(|bank| hidden_in(bank).into_keys().map(str::to_string).collect())
            .collect();
        let mut merged: Vec<(usize, Hit)> = Vec::new();
        let mut total = Search {
            hits: Vec::new(),
            given_tags: Vec::new(),
            inferred_tags: Vec::new(),
            lessons: 0,
            eligible: 0,
            postings: 0,
            skipped_terms: 0,
            stale: Vec::new(),
            held_back: Vec::new(),
        };
        for (bank, hidden) in hidden.iter().enumerate() {
            let mut want = k + hidden.len();
            let (found, kept) = loop {
                let asked = Request {
                    k: Some(want),
                    ..request.clone()
                };
                let found = match bank {
                    0 => self.search_own(&asked)?,
                    i => self.layers[i - 1].retriever.search_own(&asked)?,
                };
                let full = found.hits.len() >= want;
                let kept: Vec<Hit> = found
                    .hits
                    .iter()
                    .filter(|h| !hidden.contains(&h.slug) && !self.shadowed(bank, &h.slug))
                    .cloned()
                    .collect();
                if full && kept.len() < k && want < k * 64 {
                    want *= 2;
                    continue;
                }
                break (found, kept);
            };
            let name = match bank {
                0 => crate::layers::FRONT.to_string(),
                i => self.layers[i - 1].name.clone(),
            };
            for mut hit in kept {
                hit.bank = Some(name.clone());
                merged.push((bank, hit));
            }
            if bank == 0 {
                total.given_tags = found.given_tags;
            }
            for tag in found.inferred_tags {
                if !total.inferred_tags.contains(&tag) {
                    total.inferred_tags.push(tag);
                }
            }
            total.lessons += found.lessons;
            total.eligible += found.eligible;
            total.postings += found.postings;
            total.skipped_terms += found.skipped_terms;
            total
                .held_back
                .extend(found.held_back.into_iter().map(|mut h| {
                    if bank > 0 {
                        h.path = format!("{name}/{}", h.path);
                    }
                    h
                }));
        }
        total.inferred_tags.sort();
        let cautions = if request.text.trim().is_empty() {
            0
        } else {
            self.settings().max_cautions
        };
        total.hits = top(merged, k, cautions);
        super::mark_conflicts(&mut total.hits);
        Ok(total)
    }

    /// [`Retriever::explain`] across the stack, from the front bank's own explanation `own`:
    /// the first bank that has a live lesson `slug` explains it, unless a lesson of another
    /// bank supersedes it. A rank is the rank within its own bank.
    pub(super) fn explain_layered(
        &self,
        request: &Request,
        slug: &str,
        own: Explanation,
    ) -> Result<Explanation, RetrieveError> {
        let mut found = (0, own);
        if matches!(found.1, Explanation::Unknown) {
            for (i, layer) in self.layers.iter().enumerate() {
                let why = layer
                    .retriever
                    .index()
                    .explain(request, self.settings(), slug)?;
                if !matches!(why, Explanation::Unknown) {
                    found = (i + 1, why);
                    break;
                }
            }
        }
        let (bank, why) = found;
        if matches!(why, Explanation::Unknown | Explanation::Superseded { .. }) {
            return Ok(why);
        }
        let mut by = Vec::new();
        for (other, index) in std::iter::once(self.index())
            .chain(self.layers.iter().map(|l| l.retriever.index()))
            .enumerate()
        {
            if other != bank {
                let pairs = index.supersession()?;
                by.extend(
                    pairs
                        .into_iter()
                        .filter(|(old, _)| old == slug)
                        .map(|(_, b)| b),
                );
            }
        }
        by.sort();
        by.dedup();
        Ok(match by.is_empty() {
            true => why,
            false => Explanation::Superseded { by },
        })
    }

    /// Whether a bank before `bank` in the stack has a live lesson with `slug`.
    fn shadowed(&self, bank: usize, slug: &str) -> bool {
        (0..bank).any(|before| {
            let index = match before {
                0 => self.index(),
                i => self.layers[i - 1].retriever.index(),
            };
            index
                .slug_lookup(slug)
                .is_ok_and(|(paths, _)| !paths.is_empty())
        })
    }
}

/// The top `k` of hits from several banks by score (ties: the stack's order, then slug), with
/// up to `cautions` matching cautions kept in place of the lowest-ranked others (never the
/// first), listed after them.
fn top(mut hits: Vec<(usize, Hit)>, k: usize, cautions: usize) -> Vec<Hit> {
    hits.sort_by(|(a_bank, a), (b_bank, b)| {
        a.kept_as_caution
            .cmp(&b.kept_as_caution)
            .then(b.score.score.total_cmp(&a.score.score))
            .then(a_bank.cmp(b_bank))
            .then(a.slug.cmp(&b.slug))
    });
    let mut rest = hits.split_off(k.min(hits.len()));
    let mut top: Vec<Hit> = hits.into_iter().map(|(_, h)| h).collect();
    let shown = top.iter().filter(|h| h.caution).count();
    rest.sort_by(|(a_bank, a), (b_bank, b)| {
        b.score
            .score
            .total_cmp(&a.score.score)
            .then(a_bank.cmp(b_bank))
            .then(a.slug.cmp(&b.slug))
    });
    let mut kept = Vec::new();
    let wanted = cautions.saturating_sub(shown);
    for (_, mut hit) in rest.into_iter().filter(|(_, h)| h.caution).take(wanted) {
        // the lowest-ranked hit that is not a caution, never the first
        let Some(out) = (1..top.len()).rev().find(|&i| !top[i].caution) else {
            break;
        };
        top.remove(out);
        hit.kept_as_caution = true;
        kept.push(hit);
    }
    for hit in &mut top {
        hit.kept_as_caution = false;
    }
    top.extend(kept);
    top
}
