//! An aux assignment packed for the device step: per 64 elements two bitmaps (which are
//! wide, which of the others are one) and a rank (wide elements before them), and the wide
//! values in order.
//!
//! A Filecoin witness is mostly bits: a real 2 KiB PoRep partition's aux is 51.2% zeros,
//! 47.1% ones and 1.6% wider values, and the PoRep-shaped kind follows it. At 2^27 the plain
//! vector is 4.3 GB and its staged upload took ~174 ms of every device step on the H200; packed
//! it is ~140 MB, and the device unpacks it in one pass (cuzk-kernels' `upload_packed`).
//! Packing runs in the synthesis worker, off the device lock, and lets the partition wait
//! for its step holding ~2.5% of the memory.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use cuzk_kernels::msm::PackedWord;
use cuzk_kernels::{Limbs, PinnedScalars};

use crate::limbs::{as_limbs, from_limbs};
use crate::pinned_pool::PinnedBuf;

/// Elements per task of the parallel passes (a multiple of 64: tasks own whole words).
const CHUNK: usize = 1 << 16;

/// Beyond this share of wide elements packing saves too little to be worth a pass.
const MAX_WIDE_SHARE: f64 = 0.25;

#[derive(Default)]
pub struct PackedScalars {
    len: usize,
    /// One per 64 elements, in the layout the device reads (`PackedWord`): which are wide,
    /// which of the others are one, and how many wide elements come before the word.
    words: Vec<PackedWord>,
    wide: Vec<Scalar>,
    /// Set by [`PackedScalars::pin`]: the words and then the wide values moved into
    /// page-locked memory (`words` and `wide` are then empty).
    pinned: Option<Pinned>,
}

struct Pinned {
    buf: PinnedBuf,
    words: usize,
    wide: usize,
}

impl Clone for PackedScalars {
    /// A clone lives on the heap, pinned or not.
    fn clone(&self) -> Self {
        PackedScalars {
            len: self.len,
            words: self.words().to_vec(),
            wide: self.wide().to_vec(),
            pinned: None,
        }
    }
}

impl PartialEq for PackedScalars {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.words() == other.words() && self.wide() == other.wide()
    }
}

impl Eq for PackedScalars {}

impl std::fmt::Debug for PackedScalars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedScalars")
            .field("len", &self.len)
            .field("words", &self.words().len())
            .field("wide", &self.wide().len())
            .field("pinned", &self.pinned.is_some())
            .finish()
    }
}

/// One task's words (ranks counted from the task's start) and wide values.
struct Piece {
    words: Vec<PackedWord>,
    wide: Vec<Scalar>,
}

impl PackedScalars {
    /// `v` packed, or None when more than a quarter of it is wide (a uniform witness).
    pub fn pack(v: &[Scalar]) -> Option<Self> {
        let one = as_limbs(&[Scalar::ONE])[0];
        let pieces: Vec<Piece> = v
            .par_chunks(CHUNK)
            .map(|chunk| {
                let mut p = Piece {
                    words: vec![PackedWord::default(); chunk.len().div_ceil(64)],
                    wide: Vec::new(),
                };
                // Compared as limbs: Scalar's own equality is constant-time, slower.
                for (i, (x, limbs)) in chunk.iter().zip(as_limbs(chunk)).enumerate() {
                    let (w, bit) = (&mut p.words[i / 64], 1u64 << (i % 64));
                    if bit == 1 {
                        w.wide_rank = p.wide.len() as u64;
                    }
                    if *limbs == one {
                        w.one |= bit;
                    } else if *limbs != [0; 4] {
                        w.wide |= bit;
                        p.wide.push(*x);
                    }
                }
                p
            })
            .collect();
        let wide: usize = pieces.iter().map(|p| p.wide.len()).sum();
        if wide as f64 > MAX_WIDE_SHARE * v.len() as f64 {
            return None;
        }
        let mut packed = PackedScalars {
            len: v.len(),
            words: Vec::with_capacity(v.len().div_ceil(64)),
            wide: Vec::with_capacity(wide),
            pinned: None,
        };
        for p in pieces {
            let before = packed.wide.len() as u64;
            packed.words.extend(p.words.iter().map(|w| PackedWord {
                wide_rank: w.wide_rank + before,
                ..*w
            }));
            packed.wide.extend_from_slice(&p.wide);
        }
        Some(packed)
    }

    /// An empty vector with room for `n` elements, to be filled by [`PackedScalars::push`]
    /// (a witness written packed as it is synthesized).
    pub fn with_capacity(n: usize) -> Self {
        PackedScalars {
            words: Vec::with_capacity(n.div_ceil(64)),
            // A Filecoin witness is ~1.5% wide; room for 1/32 of it up front.
            wide: Vec::with_capacity(n / 32),
            ..PackedScalars::default()
        }
    }

    /// Appends `x`.
    #[inline]
    pub fn push(&mut self, x: &Scalar) {
        let i = self.len % 64;
        if i == 0 {
            self.words.push(PackedWord {
                wide_rank: self.wide.len() as u64,
                ..PackedWord::default()
            });
        }
        let w = self.words.last_mut().expect("a word for every element");
        // Compared as limbs: Scalar's own equality is constant-time, slower.
        let limbs = &as_limbs(std::slice::from_ref(x))[0];
        if *limbs == as_limbs(&[Scalar::ONE])[0] {
            w.one |= 1 << i;
        } else if *limbs != [0; 4] {
            w.wide |= 1 << i;
            self.wide.push(*x);
        }
        self.len += 1;
    }

    /// Element `i`.
    pub fn get(&self, i: usize) -> Scalar {
        let w = &self.words()[i / 64];
        let bit = 1u64 << (i % 64);
        if w.wide & bit != 0 {
            self.wide()[w.wide_rank as usize + (w.wide & (bit - 1)).count_ones() as usize]
        } else if w.one & bit != 0 {
            Scalar::ONE
        } else {
            Scalar::ZERO
        }
    }

    /// Appends `src`'s elements from `skip` on, a word at a time where `src` allows.
    pub fn extend_from(&mut self, src: &PackedScalars, skip: usize) {
        let mut i = skip.min(src.len);
        while i < src.len && !i.is_multiple_of(64) {
            self.push(&src.get(i));
            i += 1;
        }
        let (words, wide) = (src.words(), src.wide());
        if i < src.len {
            self.wide
                .extend_from_slice(&wide[words[i / 64].wide_rank as usize..]);
        }
        let shift = self.len % 64;
        while i < src.len {
            let (w, n) = (&words[i / 64], (src.len - i).min(64));
            if shift == 0 {
                let wide_rank = self
                    .words
                    .last()
                    .map_or(0, |l| l.wide_rank + l.wide.count_ones() as u64);
                self.words.push(PackedWord {
                    wide: w.wide,
                    one: w.one,
                    wide_rank,
                    ..PackedWord::default()
                });
            } else {
                let last = self.words.last_mut().expect("a partial word");
                last.wide |= w.wide << shift;
                last.one |= w.one << shift;
                if shift + n > 64 {
                    let wide_rank = last.wide_rank + last.wide.count_ones() as u64;
                    self.words.push(PackedWord {
                        wide: w.wide >> (64 - shift),
                        one: w.one >> (64 - shift),
                        wide_rank,
                        ..PackedWord::default()
                    });
                }
            }
            self.len += n;
            i += n;
        }
    }

    /// The plain vector again (a backend without its own unpacking: the CPU's).
    pub fn unpack(&self) -> Vec<Scalar> {
        let mut out = crate::hugevec::zeroed(self.len);
        let (words, wide) = (self.words(), self.wide());
        out.par_chunks_mut(64).zip(words).for_each(|(chunk, w)| {
            let mut next = w.wide_rank as usize;
            for (i, x) in chunk.iter_mut().enumerate() {
                let bit = 1u64 << i;
                if w.wide & bit != 0 {
                    *x = wide[next];
                    next += 1;
                } else if w.one & bit != 0 {
                    *x = Scalar::ONE;
                }
            }
        });
        out
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn words(&self) -> &[PackedWord] {
        match &self.pinned {
            // SAFETY: PackedWord is four u64s like Limbs (asserted in cuzk-kernels), and any
            // bit pattern is a valid PackedWord.
            Some(p) => unsafe {
                std::slice::from_raw_parts(p.buf.as_slice().as_ptr().cast(), p.words)
            },
            None => &self.words,
        }
    }

    /// The wide elements, in order.
    pub fn wide(&self) -> &[Scalar] {
        match &self.pinned {
            Some(p) => from_limbs(&p.buf.as_slice()[p.words..p.words + p.wide]),
            None => &self.wide,
        }
    }

    /// Host memory held.
    pub fn host_bytes(&self) -> u64 {
        (std::mem::size_of_val(self.words()) + std::mem::size_of_val(self.wide())) as u64
    }

    /// Elements of page-locked memory [`PackedScalars::pin`] needs.
    pub fn pinned_len(&self) -> usize {
        self.words().len() + self.wide().len()
    }

    /// Moves the vector into `buf` (words, then the wide values), freeing the heap copy, so
    /// that a device uploads it by DMA alone; false (and `buf` returned to its pool) when it
    /// does not fit. The copy runs here, on the caller's threads: the synthesis worker's.
    pub fn pin(&mut self, mut buf: PinnedBuf) -> bool {
        let (w, n) = (self.words().len(), self.wide().len());
        if self.pinned.is_some() || buf.as_slice().len() < w + n {
            return false;
        }
        let (dst_words, rest) = buf.as_mut_slice().split_at_mut(w);
        // SAFETY: as in `words`.
        let src_words: &[Limbs] =
            unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast(), w) };
        par_copy(dst_words, src_words);
        par_copy(&mut rest[..n], as_limbs(&self.wide));
        self.words = Vec::new();
        self.wide = Vec::new();
        self.pinned = Some(Pinned {
            buf,
            words: w,
            wide: n,
        });
        true
    }

    /// The page-locked buffer and the counts of words and wide values in it, once pinned.
    pub fn pinned(&self) -> Option<(&PinnedScalars, usize, usize)> {
        self.pinned
            .as_ref()
            .map(|p| (p.buf.pinned(), p.words, p.wide))
    }
}

/// dst = src, in parallel pieces.
fn par_copy(dst: &mut [Limbs], src: &[Limbs]) {
    dst.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-heavy like a witness: zeros, ones, and every 37th element wide (the field's
    /// largest element and small integers among them: neither is zero or one).
    fn witness(n: usize, seed: u64) -> Vec<Scalar> {
        (0..n as u64)
            .map(|i| match (i * 2654435761 + seed) % 37 {
                0 => Scalar::from(i + 2),
                1 => -Scalar::ONE,
                k if k % 2 == 0 => Scalar::ZERO,
                _ => Scalar::ONE,
            })
            .collect()
    }

    #[test]
    fn packs_and_unpacks_every_length() {
        // Empty, one element, around a word, around a task, several tasks and a ragged end.
        for n in [
            0,
            1,
            2,
            63,
            64,
            65,
            127,
            4097,
            CHUNK - 1,
            CHUNK,
            CHUNK + 1,
            3 * CHUNK + 77,
        ] {
            let v = witness(n, n as u64);
            let wide: Vec<Scalar> = v
                .iter()
                .filter(|x| **x != Scalar::ZERO && **x != Scalar::ONE)
                .copied()
                .collect();
            let Some(p) = PackedScalars::pack(&v) else {
                // Only a short vector can be a quarter wide here (one in 37 otherwise).
                assert!(4 * wide.len() > n, "{n}: not packed");
                continue;
            };
            assert_eq!(p.len(), n);
            assert_eq!(p.unpack(), v, "{n}");
            assert_eq!(p.wide(), wide, "{n}");
            let mut before = 0;
            for w in p.words() {
                assert_eq!(w.wide & w.one, 0, "{n}: an element both wide and one");
                assert_eq!(w.wide_rank, before, "{n}");
                before += w.wide.count_ones() as u64;
            }
            assert_eq!(before as usize, p.wide().len());
        }
    }

    /// Pushed one by one, or appended from other vectors at any offset and skip, the result
    /// is what `pack` makes of the plain vector.
    #[test]
    fn pushed_and_appended_equal_packed() {
        let v = witness(1000, 3);
        let mut pushed = PackedScalars::with_capacity(0);
        v.iter().for_each(|x| pushed.push(x));
        assert_eq!(pushed, PackedScalars::pack(&v).unwrap());
        assert!((0..v.len()).all(|i| pushed.get(i) == v[i]));
        for head in [0, 1, 63, 64, 65, 130] {
            for skip in [0, 1, 5, 63, 64, 65, 200, 999, 1000] {
                let mut joined = PackedScalars::with_capacity(0);
                v[..head].iter().for_each(|x| joined.push(x));
                joined.extend_from(&pushed, skip);
                let mut want = v[..head].to_vec();
                want.extend_from_slice(&v[skip..]);
                assert_eq!(joined.unpack(), want, "head {head} skip {skip}");
                let mut ranks = 0;
                for w in joined.words() {
                    assert_eq!(w.wide_rank, ranks, "head {head} skip {skip}");
                    ranks += w.wide.count_ones() as u64;
                }
                assert_eq!(ranks as usize, joined.wide().len());
            }
        }
    }

    #[test]
    fn all_zeros_all_ones_and_a_uniform_vector() {
        let zeros = vec![Scalar::ZERO; 1000];
        let p = PackedScalars::pack(&zeros).unwrap();
        assert!(p.wide().is_empty() && p.words().iter().all(|w| w.one == 0));
        assert_eq!(p.unpack(), zeros);
        let ones = vec![Scalar::ONE; 1000];
        let p = PackedScalars::pack(&ones).unwrap();
        assert!(p.wide().is_empty());
        assert_eq!(p.unpack(), ones);
        assert!(p.host_bytes() <= 16 * 32);
        // Mostly wide: not worth packing.
        let uniform: Vec<Scalar> = (0..1000u64).map(|i| Scalar::from(i + 2)).collect();
        assert_eq!(PackedScalars::pack(&uniform), None);
    }
}
