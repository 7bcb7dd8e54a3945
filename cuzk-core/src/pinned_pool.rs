//! Page-locked host buffers lent to synthesis workers for the packed aux assignment, so that
//! the device step's upload of it is one DMA with no host copy.
//!
//! Staged through the backend's two 32 MiB pinned buffers, the ~140 MB packed aux of a 2^27
//! partition took 7 ms to upload on an idle H200 host and 31 ms p50 (124 ms at worst) beside
//! two synthesis workers, whose threads the staging copy had to share the cores and memory
//! bus with; all of it inside the device step. A worker that packs into a buffer from here
//! has made the copy off the device lock, and the step only starts the DMA.
//!
//! Measured (H200, 2^27 x 10 partitions, J=2, one call each, docs/h200/pinned/): the upload
//! fell to 3.8 ms p50 (max 8 ms), but the a, b, c evaluation that follows it rose from 26.7
//! to 58-66 ms p50, for reasons not found yet (not the cores: the same with synthesis on 14
//! of 16), and the step came out the same: 1,400.1 against 1,399.6 ms, 1,376.7 against
//! 1,390.8 with 14 threads. Once the device's memory pool kept the step's buffers (NOTES
//! part 15), the same A/B (NOTES part 17, one machine) gave upload 3.7 ms p50, evaluation
//! 33.7 against 29.7, step 1,203.2 against 1,235.6 and 1,240.5 ms for the heap path: the slow
//! evaluation was most likely the pool mapping the step's memory afresh. So a synthesis
//! worker now pins every packed aux of 32 MiB or more (pipeline.rs `pin_packed`;
//! `CUZK_PIN_AUX=1` every size, `=0` none).
//!
//! Page-locking memory per partition does not pay: registering a vector beside a running
//! step slowed that step's H MSM by 100-170 ms (kernels/NOTES.md, part 3). So buffers are
//! allocated once, pinned for every context (any device may prove the partition), returned
//! here when the partition's step is done, and reused; at most `max` exist at a time (lent
//! and free together), and a worker finding none packs on the heap as before.

use std::sync::Arc;

use cuzk_kernels::{GpuDevice, Limbs, PinnedScalars};
use parking_lot::Mutex;

/// Buffers are allocated in multiples of this many elements (32 MiB), so that partitions of
/// one shape, whose packed sizes differ by their wide values, reuse each other's.
const GRAIN: usize = 1 << 20;

pub struct PinnedPool {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    max: usize,
}

#[derive(Default)]
struct State {
    free: Vec<PinnedScalars>,
    /// Buffers in existence (lent, free, or being allocated).
    count: usize,
}

/// A buffer lent by a [`PinnedPool`]; back to the pool when dropped.
pub struct PinnedBuf {
    buf: Option<PinnedScalars>,
    home: Arc<Inner>,
}

impl PinnedPool {
    pub fn new(max: usize) -> Self {
        PinnedPool {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                max,
            }),
        }
    }

    /// A buffer of at least `len` elements: the smallest free one that holds them, else a
    /// new one (replacing a free one too small, when the pool is full); None when every
    /// buffer is lent or the driver refuses the memory.
    pub fn take(&self, dev: &GpuDevice, len: usize) -> Option<PinnedBuf> {
        let mut state = self.inner.state.lock();
        let free = &mut state.free;
        let fits = (0..free.len())
            .filter(|&i| free[i].len() >= len)
            .min_by_key(|&i| free[i].len());
        if let Some(i) = fits {
            let buf = free.swap_remove(i);
            return Some(self.lend(buf));
        }
        if state.count >= self.inner.max {
            // Full: trade the smallest free buffer for one of the size needed.
            let smallest = (0..state.free.len()).min_by_key(|&i| state.free[i].len())?;
            drop(state.free.swap_remove(smallest));
        } else {
            state.count += 1;
        }
        // Counted already; allocated outside the lock (page-locking takes a while).
        drop(state);
        let size = len.next_multiple_of(GRAIN).max(GRAIN);
        match PinnedScalars::alloc_portable(dev, size) {
            Ok(buf) => Some(self.lend(buf)),
            Err(e) => {
                tracing::warn!(error = %e, "pinned buffer refused; packing on the heap");
                self.inner.state.lock().count -= 1;
                None
            }
        }
    }

    fn lend(&self, buf: PinnedScalars) -> PinnedBuf {
        PinnedBuf {
            buf: Some(buf),
            home: self.inner.clone(),
        }
    }
}

impl PinnedBuf {
    pub fn pinned(&self) -> &PinnedScalars {
        self.buf.as_ref().expect("lent until dropped")
    }

    pub fn as_slice(&self) -> &[Limbs] {
        self.pinned().as_slice()
    }

    pub fn as_mut_slice(&mut self) -> &mut [Limbs] {
        self.buf
            .as_mut()
            .expect("lent until dropped")
            .as_mut_slice()
    }
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            self.home.state.lock().free.push(buf);
        }
    }
}
