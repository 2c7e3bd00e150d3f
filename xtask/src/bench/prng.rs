//! SplitMix64: a tiny, fast, seedable generator. Synthetic banks must be identical on every
//! machine and toolchain, so the generator is written here rather than taken from a crate whose
//! output may change between versions.

/// A SplitMix64 generator (Steele, Lea and Flood, 2014).
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator with a fixed seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`), by the multiply-shift method.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent`/100.
    pub fn percent(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// A random element of a non-empty slice.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// `k` distinct elements of `items`, in the order drawn (`k <= items.len()`).
    pub fn sample<'a, T>(&mut self, items: &'a [T], k: usize) -> Vec<&'a T> {
        let mut chosen: Vec<usize> = Vec::with_capacity(k);
        while chosen.len() < k {
            let i = self.below(items.len());
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        chosen.into_iter().map(|i| &items[i]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // First outputs of SplitMix64 seeded with 0, from the reference C implementation.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = SplitMix64::new(7);
        for n in 1..50 {
            assert!(rng.below(n) < n);
        }
        assert_eq!(rng.sample(&[1, 2, 3], 3).len(), 3);
    }
}
