//! One file per proof kind. Each turns a validated request into a `ProofTask`: the circuits
//! of its partitions, the parameter set they prove under, and how to check the result.

use std::sync::Arc;

use blstrs::Scalar;

use crate::job::{ProofKind, Result};
use crate::srs::{SrsCache, SrsEntry};
use crate::synth::Synthesized;
use crate::witness::WitnessCs;
use bellpepper_core::SynthesisError;

/// Call `$f::<Tree>(args)` with the merkle tree shape of a published sector size (the
/// generic parameter every proof crate type carries), or fail naming `sector_size`.
macro_rules! with_shape {
    ($size:expr, $f:ident, $($args:expr),* $(,)?) => {{
        use $crate::kinds::registered as r;
        match $size {
            r::SECTOR_SIZE_2_KIB | r::SECTOR_SIZE_8_MIB | r::SECTOR_SIZE_512_MIB => {
                $f::<filecoin_proofs::SectorShapeBase>($($args),*)
            }
            r::SECTOR_SIZE_32_GIB => $f::<filecoin_proofs::SectorShape32GiB>($($args),*),
            r::SECTOR_SIZE_64_GIB => $f::<filecoin_proofs::SectorShape64GiB>($($args),*),
            other => Err($crate::job::Error::invalid(
                "sector_size",
                format!("unsupported sector size {other}"),
            )),
        }
    }};
}
pub(crate) use with_shape;

pub mod limits;
pub mod params;
mod porep;
pub mod porep_shaped;
mod post;
pub mod prover_id;
pub mod registered;
pub mod request;
mod snap;
pub mod synthetic;
mod synthetic_task;
pub mod vectors;
pub mod virtual_sector;
mod window;
mod winning;

pub use porep::{decode_envelope, PorepTask};
pub use request::KindRequest;
pub use snap::SnapTask;
pub use synthetic_task::{SyntheticShape, SyntheticTask};

/// A job's proving work, independent of transport. Implementations are cheap to share:
/// partitions of one job are synthesized concurrently through `&self`.
pub trait ProofTask: Send + Sync {
    fn kind(&self) -> ProofKind;

    /// Number of partitions (one circuit and one 192-byte proof each).
    fn partitions(&self) -> usize;

    /// Load (or fetch the cached) parameter set the partitions prove under.
    fn params(&self, srs: &SrsCache) -> Result<Arc<SrsEntry>>;

    /// Build and synthesize partition `index`'s circuit.
    fn synthesize(&self, index: usize) -> Result<Synthesized>;

    /// The public inputs the verifier uses for partition `index`. The default takes them
    /// from synthesis; kinds that can compute them independently of the witness should, so
    /// that self-verification also catches a witness inconsistent with the public inputs.
    fn public_inputs(&self, _index: usize, synthesized_inputs: &[Scalar]) -> Result<Vec<Scalar>> {
        Ok(synthesized_inputs.to_vec())
    }

    /// Optional whole-job check after all partitions are proven, with the concatenated proof
    /// bytes (e.g. a stock Filecoin verifier). Called only when self-verification is on.
    fn verify_job(&self, _proof: &[u8]) -> Result<()> {
        Ok(())
    }

    /// Record partition `index`'s constraint matrices (one synthesis, witness included), for
    /// parameter generation from the real circuit. Kinds that cannot say so.
    fn record_matrices(&self, _index: usize) -> Result<crate::matrices::Matrices> {
        Err(crate::job::Error::invalid(
            "kind",
            format!("{}: recording its circuit is not supported", self.kind()),
        ))
    }

    /// Kinds whose witness has a native generator (`crate::native_witness`) expose both of
    /// their witness paths here, for benches and tests to compare.
    fn witness_paths(&self) -> Option<&dyn WitnessPaths> {
        None
    }
}

/// Tests: the native witness of sections `run` of partition `index` equals the stock
/// circuit's in every input, aux value and the constraint count.
#[cfg(test)]
pub(crate) fn assert_witness_paths_agree(
    paths: &dyn WitnessPaths,
    index: usize,
    run: std::ops::Range<usize>,
    what: &str,
) {
    let stock = paths.witness(index, run.clone(), false, WitnessCs::with_one());
    let native = paths.witness(index, run, true, WitnessCs::with_one());
    let (stock, native) = (stock.unwrap(), native.unwrap());
    assert_eq!(native.input, stock.input, "{what}: inputs");
    assert_eq!(native.aux.len(), stock.aux.len(), "{what}");
    let first = native.aux.iter().zip(&stock.aux).position(|(a, b)| a != b);
    assert_eq!(first, None, "{what}: first aux that differs");
    assert_eq!(native.constraints, stock.constraints, "{what}");
}

/// A partition's witness is its prefix (the commitments) and independent sections (the
/// challenges); synthesis splits it into runs of sections over the worker threads.
pub trait WitnessPaths: Sync {
    /// Sections of partition `index`.
    fn sections(&self, index: usize) -> usize;

    /// The witness of the prefix and sections `run` of partition `index`, into `cs`: by the
    /// stock circuit, or by the native generator.
    fn witness(
        &self,
        index: usize,
        run: std::ops::Range<usize>,
        native: bool,
        cs: WitnessCs,
    ) -> Result<WitnessCs>;
}

/// Validate a request and build its task. Every check on client input happens here, before
/// anything is queued: a malformed request gets `Error::InvalidArgument` naming the field.
pub fn build_task(req: &KindRequest) -> Result<Arc<dyn ProofTask>> {
    limits::check_sizes(req)?;
    match req.kind {
        ProofKind::Synthetic => Ok(Arc::new(SyntheticTask::new(
            req.synthetic_log_size,
            req.synthetic_partitions,
            req.synthetic_seed,
            req.synthetic_shape,
        )?)),
        ProofKind::PorepSealCommit => porep::build(req),
        ProofKind::WinningPost => winning::build(req),
        ProofKind::WindowPostPartition => window::build(req),
        ProofKind::SnapDealsUpdate => snap::build(req),
    }
}

/// Build and synthesize one partition's circuit, of circuit shape `shape` (the parameter
/// set's identifier: one proving key, one set of constraint matrices). The proof crates'
/// circuit code asserts on shapes it assumes; admission checks the shapes it can, and a
/// panic from a malformed witness that slipped through fails the job instead of the worker
/// thread.
pub(crate) fn synthesize_guarded<C>(
    kind: ProofKind,
    index: usize,
    shape: &str,
    build: impl Fn() -> anyhow::Result<C>,
) -> Result<Synthesized>
where
    C: bellpepper_core::Circuit<Scalar>,
{
    let build = || build().map_err(|e| build_error(kind, index, e));
    guarded(kind, index, || {
        crate::synth::synthesize_shaped(shape, build)
    })
}

/// `synthesize_guarded` for a circuit whose witness can be synthesized in `parts` pieces
/// (`synth::synthesize_split`): `witness_part(j, cs)` writes the j-th into `cs`.
pub(crate) fn synthesize_guarded_split<C>(
    kind: ProofKind,
    index: usize,
    shape: &str,
    build: impl Fn() -> anyhow::Result<C>,
    parts: usize,
    witness_part: impl Fn(usize, WitnessCs) -> anyhow::Result<Result<WitnessCs, SynthesisError>> + Sync,
) -> Result<Synthesized>
where
    C: bellpepper_core::Circuit<Scalar>,
{
    let build = || build().map_err(|e| build_error(kind, index, e));
    let witness_part = |j, cs| witness_part(j, cs).map_err(|e| build_error(kind, index, e));
    guarded(kind, index, || {
        crate::synth::synthesize_shaped_split(shape, build, parts, witness_part)
    })
}

fn build_error(kind: ProofKind, index: usize, e: anyhow::Error) -> crate::job::Error {
    crate::job::Error::Verification(format!(
        "{kind} partition {index}: building the circuit: {e:#}"
    ))
}

fn guarded(
    kind: ProofKind,
    index: usize,
    run: impl FnOnce() -> Result<Synthesized>,
) -> Result<Synthesized> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or_else(|panic| {
        let msg = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        Err(crate::job::Error::Verification(format!(
            "{kind} partition {index}: the circuit rejected its witness ({msg}); the vanilla proof is malformed"
        )))
    })
}
