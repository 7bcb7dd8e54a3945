//! What one partition holds in host memory from the start of its synthesis to the end of its
//! device step: the bytes the engine reserves for it before synthesis (gate.rs) and trims to
//! once it is synthesized. At 32 GiB PoRep (2^27 constraints) a/b/c and the assignments are
//! ~17 GB; the device step's own host copies come on top, and on the CPU backend they are
//! another ~6 GB, so a bound of the synthesized vectors alone let the budget be overrun by a
//! third on every partition proven there.
//!
//! The bound is the largest of the step's phases, each counted from what prove.rs and the
//! backends allocate (audited against backend/cpu.rs, backend/ntt.rs, backend/cuda.rs and the
//! kernels crate). Not counted per partition: the parameters (resident once per set), the
//! recorded matrices (once per shape), the CUDA backend's pinned staging (two 32 MiB buffers
//! per device, allocated once and kept), its pool of pinned buffers for packed aux vectors
//! (at most 8, ~160 MB each at 2^27: a partition holding one is counted by its packed
//! bytes, the idle ones are not) and blst's Pippenger buckets (a few MB per thread): the
//! budget's fixed reserve is for those (budget.rs).

use blstrs::Scalar;

use crate::key::Key;
use crate::synth::Synthesized;

const SCALAR: u64 = std::mem::size_of::<Scalar>() as u64;

/// The sizes that decide a partition's memory, in scalars: from its parameters (an upper
/// bound, known before synthesis) or from the synthesized partition (its real size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionShape {
    /// Constraints, input constraints included (the length of a, b and c).
    pub constraints: usize,
    /// The evaluation domain: the power of two the H polynomial is computed over.
    pub domain: usize,
    /// Public inputs, the leading one included.
    pub inputs: usize,
    pub aux: usize,
    /// Aux variables in the A query, and inputs and aux variables in the B query.
    pub a_aux: usize,
    pub b_inputs: usize,
    pub b_aux: usize,
    /// a, b, c are on the host (false: left to the device step, `Synthesized::deferred`,
    /// which evaluates them where they are used). A bound made before synthesis says true:
    /// the first partition of a shape records its matrices and holds a, b, c.
    pub abc_on_host: bool,
    /// The aux assignment's bytes where the synthesis worker packed it (packed.rs), which
    /// is what a backend unpacking on the device holds of it; None: plain, `aux` scalars.
    pub aux_packed: Option<u64>,
}

impl PartitionShape {
    /// The largest partition `params` can prove: the key has one H point per domain point
    /// but one, one L point per aux variable, one IC point per input; A and B hold points
    /// only for the variables they use.
    pub fn from_key(key: &Key<'_>) -> Self {
        let lens = &key.lens;
        let domain = lens.h + 1;
        let inputs = key.params.vk.ic.len();
        let aux = lens.l;
        PartitionShape {
            constraints: domain,
            domain,
            inputs,
            aux,
            a_aux: lens.a.saturating_sub(inputs).min(aux),
            b_inputs: inputs.min(lens.b_g1),
            b_aux: aux.min(lens.b_g1),
            abc_on_host: true,
            aux_packed: None,
        }
    }

    pub fn of(synth: &Synthesized) -> Self {
        PartitionShape {
            constraints: synth.num_constraints(),
            domain: synth.num_constraints().max(1).next_power_of_two(),
            inputs: synth.input.len(),
            aux: synth.aux_len(),
            a_aux: synth.a_aux_density.total(),
            b_inputs: synth.b_input_density.total(),
            b_aux: synth.b_aux_density.total(),
            abc_on_host: synth.deferred.is_none(),
            aux_packed: synth.packed_aux.as_ref().map(|p| p.host_bytes()),
        }
    }
}

/// Which host copies a backend's device step makes (each backend says which it is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostCopies {
    /// The CPU backend: the NTTs, density selections and MSM scalar encodings on the host.
    Cpu,
    /// The CUDA backend: a/b/c, aux and H go to the device; only B's input selection and a
    /// select's rank table stay on the host.
    Cuda,
}

/// The most host memory one partition of `shape` holds at once, from synthesis to the end of
/// its device step on a backend making `copies`.
pub fn partition_peak_bytes(shape: &PartitionShape, copies: HostCopies) -> u64 {
    let s = |scalars: usize| scalars as u64 * SCALAR;
    let n = shape.domain;
    // Held the whole step: the assignments (prove.rs reads them for every MSM) and the copy
    // of the public inputs the pipeline keeps for finalize. A packed aux is what CUDA holds;
    // the CPU unpacks it beside the packed copy.
    let aux = match (copies, shape.aux_packed) {
        (HostCopies::Cuda, Some(packed)) => packed,
        (HostCopies::Cpu, Some(packed)) => s(shape.aux) + packed,
        (_, None) => s(shape.aux),
    };
    let held = s(2 * shape.inputs) + aux;
    let phases = match copies {
        HostCopies::Cpu => [
            // H: a, b and c zero-padded to the domain in place (ntt.rs), and the twiddle
            // table (n/2 scalars) of each of the three transforms rayon runs at once. The
            // synthesis before it holds a, b, c at their unpadded length: less.
            s(3 * n) + s(3 * (n / 2)),
            // H MSM: h (n - 1 coefficients) and blst's little-endian copy of its scalars
            // (cpu.rs scalar_bytes, 32 bytes a scalar).
            s(2 * n),
            // L MSM: aux in place, its scalar encoding.
            s(shape.aux),
            // A: the aux selection, and the encoding of the larger of it and the inputs.
            s(shape.a_aux + shape.a_aux.max(shape.inputs)),
            // B (G1, then G2 from the same selections): the input and aux selections, and
            // the encoding of the larger.
            s(shape.b_inputs + shape.b_aux + shape.b_aux.max(shape.b_inputs)),
        ],
        HostCopies::Cuda => [
            // H: a, b, c as synthesized, until the upload (through the device's pinned
            // staging) has taken them; padding, transforms and h are on the device. None
            // when they were deferred: the device evaluates them from the uploaded aux.
            if shape.abc_on_host {
                s(3 * shape.constraints)
            } else {
                0
            },
            // The MSMs: aux is uploaded once and selected on the device. On the host: B's
            // input selection, and the rank table of a selection (one u32 per 64 variables).
            s(shape.b_inputs) + shape.aux.div_ceil(64) as u64 * 4,
            0,
            0,
            0,
        ],
    };
    held + phases.into_iter().max().unwrap_or(0)
}

/// The bound reserved before synthesis for a partition proven under `key`.
pub fn partition_bytes_bound(key: &Key<'_>, copies: HostCopies) -> u64 {
    partition_peak_bytes(&PartitionShape::from_key(key), copies)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32 GiB PoRep partition, roughly: 2^27 constraints, ~130M aux variables.
    fn porep_32g() -> PartitionShape {
        PartitionShape {
            constraints: 130_278_869,
            domain: 1 << 27,
            inputs: 329,
            aux: 130_000_000,
            a_aux: 110_000_000,
            b_inputs: 1,
            b_aux: 60_000_000,
            abc_on_host: true,
            aux_packed: None,
        }
    }

    #[test]
    fn cpu_copies_cost_more_than_cuda_and_more_than_the_vectors() {
        let shape = porep_32g();
        let vectors = (3 * shape.domain + shape.inputs + shape.aux) as u64 * SCALAR;
        let cuda = partition_peak_bytes(&shape, HostCopies::Cuda);
        let cpu = partition_peak_bytes(&shape, HostCopies::Cpu);
        // On CUDA the NTT phase is the synthesized vectors, unpadded.
        assert!(
            cuda <= vectors && cuda > vectors - (8 << 30),
            "{cuda} {vectors}"
        );
        // On the CPU the twiddles of three transforms come on top: 1.5 n scalars, 6 GiB.
        assert_eq!(
            cpu,
            vectors + (3 * (shape.domain / 2) + shape.inputs) as u64 * SCALAR
        );
        assert!(cpu - vectors >= 6 << 30);
    }

    /// A partition whose a, b, c the device evaluates holds little more than its assignment
    /// on CUDA (at 32 GiB: ~4 GB instead of ~17 GB); the CPU, which would evaluate them on
    /// the host, still counts them.
    #[test]
    fn deferred_abc_is_not_counted_on_cuda() {
        let host = porep_32g();
        let deferred = PartitionShape {
            abc_on_host: false,
            ..host
        };
        let held = (2 * host.inputs + host.aux) as u64 * SCALAR;
        let rank = host.aux.div_ceil(64) as u64 * 4;
        assert_eq!(
            partition_peak_bytes(&deferred, HostCopies::Cuda),
            held + host.b_inputs as u64 * SCALAR + rank
        );
        assert!(
            partition_peak_bytes(&host, HostCopies::Cuda)
                - partition_peak_bytes(&deferred, HostCopies::Cuda)
                > 11 << 30
        );
        assert_eq!(
            partition_peak_bytes(&deferred, HostCopies::Cpu),
            partition_peak_bytes(&host, HostCopies::Cpu)
        );
    }

    #[test]
    fn later_phases_can_dominate_small_domains() {
        // Many aux variables over a small domain: the A phase is the peak on the CPU.
        let shape = PartitionShape {
            constraints: 4,
            domain: 4,
            inputs: 2,
            aux: 100,
            a_aux: 100,
            b_inputs: 1,
            b_aux: 10,
            abc_on_host: true,
            aux_packed: None,
        };
        let held = (2 + 100 + 2) as u64 * SCALAR;
        assert_eq!(
            partition_peak_bytes(&shape, HostCopies::Cpu),
            held + 200 * SCALAR
        );
        assert_eq!(
            partition_peak_bytes(&shape, HostCopies::Cuda),
            held + 12 * SCALAR
        );
    }

    /// A packed aux (2.5% of a PoRep witness's bytes) is what a CUDA partition holds while it
    /// waits for its step; the CPU would hold both copies.
    #[test]
    fn a_packed_aux_counts_its_own_bytes() {
        let plain = PartitionShape {
            abc_on_host: false,
            ..porep_32g()
        };
        let packed_bytes = plain.aux as u64 * SCALAR / 40;
        let packed = PartitionShape {
            aux_packed: Some(packed_bytes),
            ..plain
        };
        assert_eq!(
            partition_peak_bytes(&plain, HostCopies::Cuda)
                - partition_peak_bytes(&packed, HostCopies::Cuda),
            plain.aux as u64 * SCALAR - packed_bytes
        );
        assert_eq!(
            partition_peak_bytes(&packed, HostCopies::Cpu)
                - partition_peak_bytes(&plain, HostCopies::Cpu),
            packed_bytes
        );
    }
}
