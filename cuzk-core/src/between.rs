//! Work a device step lets in at its pause points: between its phases (prove.rs) and
//! between the stages of its H MSM (the CUDA backend). The pipeline lets waiting CRITICAL
//! partitions in there (pipeline.rs, `UrgentBetween`), so that a WinningPoSt behind
//! a 2^27 PoRep step waits for a part of a phase instead of the whole step.

use std::time::Duration;

/// What a step asks at a pause point.
pub trait Between {
    /// Whether anything waits to be let in. Asked inside MSMs before they stop their
    /// streams for it, so it must be cheap.
    fn waiting(&self) -> bool;
    /// Runs what waits (nothing, if nothing does); returns how long it took, which the
    /// step's own timings leave out.
    fn run(&mut self) -> Duration;
}

/// Lets nothing in.
pub struct Nothing;

impl Between for Nothing {
    fn waiting(&self) -> bool {
        false
    }
    fn run(&mut self) -> Duration {
        Duration::ZERO
    }
}

/// `inner`, with the time it ran added up (the part of a phase's time that was not its own).
pub struct Counted<'a> {
    inner: &'a mut dyn Between,
    pub total: Duration,
}

impl<'a> Counted<'a> {
    pub fn new(inner: &'a mut dyn Between) -> Self {
        Counted {
            inner,
            total: Duration::ZERO,
        }
    }
}

impl Between for Counted<'_> {
    fn waiting(&self) -> bool {
        self.inner.waiting()
    }
    fn run(&mut self) -> Duration {
        let d = self.inner.run();
        self.total += d;
        d
    }
}
