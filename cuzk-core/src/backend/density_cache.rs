//! The density bitmaps a device keeps for its selections, with whatever it derived from them
//! (the CUDA backend: the bitmap and its word ranks in device memory).
//!
//! A and B select the aux assignment through their densities in every device step, and a
//! circuit's densities are the same for each of its partitions. Derived and uploaded per
//! step, a 2^27 partition's two selections cost the host the word ranks of 2 x 2M words and
//! the device two pageable uploads of ~24 MB each, with the device idle while the host works
//! (kernels/NOTES.md part 12's profile: ~10-20 ms of the step outside the MSMs). Kept, a
//! selection is one kernel.
//!
//! A bitmap is known again by its shared allocation (`Density`'s clones share it), else by
//! its contents (a partition synthesized in full builds its own). The cache holds the
//! bitmaps it keys on, so a pointer it compares cannot have been freed and reused.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::synth::Density;

/// Bitmaps kept per device: A's and B's of four circuits (PoRep, both PoSts, SnapDeals). At
/// 2^27 a bitmap and its ranks take 24 MB of device memory.
const KEEP: usize = 8;

pub struct DensityCache<V> {
    capacity: usize,
    /// Most recently used last.
    entries: VecDeque<(Arc<Vec<u64>>, usize, Arc<V>)>,
}

impl<V> DensityCache<V> {
    /// A cache of [`KEEP`] bitmaps; `CUZK_DENSITY_CACHE=0` keeps none (every selection
    /// derives its own, as before the cache: the A/B's knob).
    pub fn from_env() -> Self {
        let off = std::env::var("CUZK_DENSITY_CACHE").is_ok_and(|v| v == "0");
        Self::with_capacity(if off { 0 } else { KEEP })
    }

    pub fn with_capacity(capacity: usize) -> Self {
        DensityCache {
            capacity,
            entries: VecDeque::with_capacity(capacity),
        }
    }

    /// What was derived from `density`'s bitmap, derived by `derive` where no bitmap like it
    /// is kept (then kept, the least recently used one dropped beyond the capacity).
    pub fn get_or_derive<E>(
        &mut self,
        density: &Density,
        derive: impl FnOnce() -> Result<V, E>,
    ) -> Result<Arc<V>, E> {
        let words = density.shared_words();
        let len = density.len();
        let at = self
            .entries
            .iter()
            .position(|(w, l, _)| *l == len && Arc::ptr_eq(w, words))
            .or_else(|| {
                self.entries
                    .iter()
                    .position(|(w, l, _)| *l == len && w.as_slice() == words.as_slice())
            });
        if let Some(i) = at {
            let (_, _, v) = self.entries.remove(i).expect("found above");
            // Keyed on the newest holder's allocation: the next partition's clone shares it.
            self.entries.push_back((words.clone(), len, v.clone()));
            return Ok(v);
        }
        let v = Arc::new(derive()?);
        if self.capacity > 0 {
            if self.entries.len() == self.capacity {
                self.entries.pop_front();
            }
            self.entries.push_back((words.clone(), len, v.clone()));
        }
        Ok(v)
    }

    /// How many bitmaps are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Drops every bitmap kept (and with it what was derived, once no selection holds it).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn density(bits: &[usize], len: usize) -> Density {
        let mut words = vec![0u64; len.div_ceil(64)];
        for &i in bits {
            words[i / 64] |= 1 << (i % 64);
        }
        Density::from_words(words, len)
    }

    /// Derives a counter value, counting how often it had to.
    fn get(cache: &mut DensityCache<usize>, d: &Density, derived: &mut usize) -> usize {
        *cache
            .get_or_derive(d, || {
                *derived += 1;
                Ok::<_, Infallible>(*derived)
            })
            .unwrap()
    }

    #[test]
    fn clones_and_equal_bitmaps_are_derived_once() {
        let mut cache = DensityCache::with_capacity(KEEP);
        let mut derived = 0;
        let a = density(&[0, 3, 64, 129], 130);
        assert_eq!(get(&mut cache, &a, &mut derived), 1);
        assert_eq!(get(&mut cache, &a.clone(), &mut derived), 1, "a clone");
        // Built apart (a partition synthesized in full), equal bit for bit.
        let same = density(&[0, 3, 64, 129], 130);
        assert!(!Arc::ptr_eq(a.shared_words(), same.shared_words()));
        assert_eq!(get(&mut cache, &same, &mut derived), 1, "equal contents");
        // One bit apart, or over more variables with the same words: another bitmap.
        assert_eq!(get(&mut cache, &density(&[0, 3, 64], 130), &mut derived), 2);
        assert_eq!(
            get(&mut cache, &density(&[0, 3, 64, 129], 131), &mut derived),
            3
        );
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn the_least_recently_used_goes_first() {
        let mut cache = DensityCache::with_capacity(2);
        let mut derived = 0;
        let (x, y, z) = (density(&[1], 64), density(&[2], 64), density(&[3], 64));
        get(&mut cache, &x, &mut derived);
        get(&mut cache, &y, &mut derived);
        get(&mut cache, &x, &mut derived); // x used last: y goes next
        get(&mut cache, &z, &mut derived);
        assert_eq!(derived, 3);
        assert_eq!(get(&mut cache, &x, &mut derived), 1, "x kept");
        assert_eq!(get(&mut cache, &y, &mut derived), 4, "y derived again");
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn capacity_zero_keeps_nothing_and_errors_keep_nothing() {
        let mut off = DensityCache::with_capacity(0);
        let mut derived = 0;
        let d = density(&[5], 10);
        get(&mut off, &d, &mut derived);
        get(&mut off, &d, &mut derived);
        assert_eq!((derived, off.len()), (2, 0));

        let mut cache = DensityCache::<usize>::with_capacity(2);
        let failed = cache.get_or_derive(&d, || Err("upload failed"));
        assert_eq!(failed.unwrap_err(), "upload failed");
        assert!(cache.is_empty());
        cache.get_or_derive(&d, || Ok::<_, Infallible>(7)).unwrap();
        cache.clear();
        assert!(cache.is_empty());
    }

    #[test]
    fn a_bitmap_changed_after_cloning_is_another() {
        let mut cache = DensityCache::with_capacity(KEEP);
        let mut derived = 0;
        let mut d = density(&[1], 64);
        let kept = d.clone();
        get(&mut cache, &kept, &mut derived);
        // Copy on write: the clone the cache keys on keeps the old bits.
        d.insert(2);
        assert_eq!(get(&mut cache, &d, &mut derived), 2);
        assert_eq!(get(&mut cache, &kept, &mut derived), 1);
    }
}
