//! The work items the pipeline's queues carry between its stages (pipeline.rs), and the
//! guard that turns a stage's panic into its job's error.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use blstrs::Scalar;

use crate::gate::Ticket;
use crate::job::{Error, Result};
use crate::prove::MsmResults;
use crate::record::Job;
use crate::srs::SrsEntry;
use crate::synth::Synthesized;

/// A partition waiting for synthesis.
pub struct PartitionWork {
    pub job: Arc<Job>,
    pub index: usize,
    /// Its device failed once: prove it on the CPU fallback, right after synthesis.
    pub on_cpu: bool,
}

/// A synthesized partition waiting for a device. Its ticket holds a pipeline slot until a
/// device takes it and its bytes until it is dropped.
pub struct SynthesizedWork {
    pub job: Arc<Job>,
    pub index: usize,
    pub synth: Synthesized,
    pub in_flight: InFlight,
    pub(crate) ticket: Ticket,
}

/// A proven partition waiting for assembly and verification (CPU work).
pub struct ProvenWork {
    pub job: Arc<Job>,
    pub index: usize,
    pub(crate) srs: Arc<SrsEntry>,
    pub(crate) msm: MsmResults,
    pub(crate) synthesized_inputs: Vec<Scalar>,
    pub in_flight: InFlight,
}

/// Counts one partition from the moment a synthesis worker takes it until its device step is
/// done or it is dropped (a cancelled job's partition removed from the prove queue drops its
/// guard with it). A graceful shutdown waits for the count to reach zero.
pub struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    pub fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        InFlight(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Run `f`, turning a panic into an error naming what panicked.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        Err(Error::Internal(format!(
            "{what} panicked: {}",
            panic_message(&panic)
        )))
    })
}

pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
