//! The fast 64-bit checksum the index's files, the lessons' content hashes and a model's
//! identity use: not cryptographic, but it sees every byte and the length, at memory speed
//! (hashing a 90 MB model with SHA-1 took most of a search's time).

const KEY: [u64; 8] = [
    0xbe4b_a423_396c_feb8,
    0x1cad_21f7_2c81_017c,
    0xdb97_9083_e96d_d4de,
    0x1f67_b3b7_a4a4_4072,
    0x78e5_c0cc_4ee6_79cb,
    0x2172_ffcc_7dd0_5a82,
    0x8e24_4380_2be0_d6ec,
    0x1c96_9a56_f6ad_5e3b,
];

/// A fast 64-bit checksum of `bytes`. It detects truncation and damage; it is not a
/// cryptographic hash.
///
/// The shape of XXH3's long-input loop: eight 64-bit lanes, each adding a 64-byte stripe's
/// word and the product of its keyed halves (32 × 32 → 64 bits multiplies, which vector units
/// do several at a time), the lanes scrambled every 1 KiB; then the lanes folded, the tail
/// mixed in a word at a time, and the length.
pub fn checksum(bytes: &[u8]) -> u64 {
    const P32: u64 = 0x9E37_79B1;
    const P64: [u64; 2] = [0x9E37_79B1_85EB_CA87, 0xC2B2_AE3D_27D4_EB4F];
    let mut acc: [u64; 8] = [
        0xC2B2_AE3D,
        P64[0],
        P64[1],
        0x1656_67B1_9E37_79F9,
        0x85EB_CA77_C2B2_AE63,
        0x85EB_CA77,
        0x27D4_EB2F_1656_67C5,
        P32,
    ];
    let mut blocks = bytes.chunks_exact(1024);
    // each lane adds its neighbour's word and the product of its own keyed halves
    #[inline(always)]
    fn stripe(acc: &mut [u64; 8], s: &[u8]) {
        let s: &[u8; 64] = s.try_into().expect("a 64-byte stripe");
        let mut v = [0u64; 8];
        for (i, v) in v.iter_mut().enumerate() {
            *v = u64::from_le_bytes(s[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        }
        let mut swapped = [0u64; 8];
        for (i, w) in swapped.iter_mut().enumerate() {
            *w = v[i ^ 1];
        }
        for i in 0..8 {
            let k = v[i] ^ KEY[i];
            acc[i] = acc[i]
                .wrapping_add(swapped[i])
                .wrapping_add((k & 0xffff_ffff).wrapping_mul(k >> 32));
        }
    }
    for block in &mut blocks {
        for s in block.chunks_exact(64) {
            stripe(&mut acc, s);
        }
        for (a, k) in acc.iter_mut().zip(KEY) {
            *a = (*a ^ (*a >> 47) ^ k).wrapping_mul(P32);
        }
    }
    let rest = blocks.remainder();
    let mut stripes = rest.chunks_exact(64);
    for s in &mut stripes {
        stripe(&mut acc, s);
    }
    let fold = |a: u64, b: u64| {
        let p = u128::from(a).wrapping_mul(u128::from(b));
        (p as u64) ^ ((p >> 64) as u64)
    };
    let mut h = (bytes.len() as u64).wrapping_mul(P64[0]);
    for i in 0..4 {
        h = h.wrapping_add(fold(
            acc[2 * i] ^ KEY[2 * i],
            acc[2 * i + 1] ^ KEY[2 * i + 1],
        ));
    }
    let mut words = stripes.remainder().chunks(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a[..w.len()].copy_from_slice(w);
        h = fold(h ^ u64::from_le_bytes(a), P64[1] ^ w.len() as u64).wrapping_add(P64[0]);
    }
    h ^= h >> 37;
    h = h.wrapping_mul(0x1656_6791_9E37_79F9);
    h ^ (h >> 32)
}
