//! Zeroed vectors for a partition's synthesized outputs, on transparent huge pages where
//! Linux offers them.
//!
//! A 2^27 partition writes ~17 GB of fresh memory (a, b, c, the aux assignment). On 4 KiB
//! pages that is ~4.4M page faults per partition, taken by every synthesis thread at once
//! under the process's one memory-map lock; measured on the H200's host, a PoRep-shaped
//! 2^27 partition took 9-12 s to synthesize two at a time, almost all of it first-touch
//! faults. 2 MiB pages cut the faults 512-fold. With THP "madvise" (Ubuntu's default) the
//! kernel needs the hint below; with "always" it is a no-op, with "never" it is ignored.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

/// Below this, the hint is not worth a system call.
const HUGE_PAGE: usize = 2 << 20;

/// `n` zeros, first touched in parallel (so the faults, if any, spread over every core).
pub fn zeroed(n: usize) -> Vec<Scalar> {
    let mut v: Vec<Scalar> = Vec::with_capacity(n);
    advise_huge(v.as_mut_ptr().cast(), n * std::mem::size_of::<Scalar>());
    v.spare_capacity_mut()
        .par_chunks_mut(1 << 16)
        .for_each(|chunk| {
            for x in chunk {
                x.write(Scalar::ZERO);
            }
        });
    // SAFETY: every one of the n elements of the spare capacity was written above.
    unsafe { v.set_len(n) };
    v
}

fn advise_huge(ptr: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
        let end = (ptr as usize + len) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: the range lies inside the allocation just made (rounded inwards to
            // whole huge pages); MADV_HUGEPAGE changes no contents. A failure (THP off, an
            // old kernel) only leaves 4 KiB pages.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_vectors_are_zero_at_every_size() {
        for n in [0usize, 1, 3, 1 << 16, (HUGE_PAGE / 32) * 3 + 5] {
            let v = zeroed(n);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|x| *x == Scalar::ZERO), "n = {n}");
        }
    }
}
