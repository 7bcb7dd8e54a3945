//! Filecoin parameter sets in the standard cache layout (FIL_PROOFS_PARAMETER_CACHE):
//! `v28-<circuit identifier>.params` and `.vk`, the names the proof crates and paramfetch
//! use, so a directory of production parameters works unchanged.
//!
//! The proof crates read their parameter directory once per process (a lazy global from the
//! environment), and their verifiers load verifying keys from it. cuzk loads the proving keys
//! itself (through `SrsCache`, from the same directory), so the two must agree:
//! `use_parameter_dir` points the crates at the cache directory and says so when it cannot.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use filecoin_proofs::parameters::{
    public_params, window_post_public_params, winning_post_public_params,
};
use filecoin_proofs::DefaultPieceHasher;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{CacheableParameters, VERSION};
use storage_proofs_porep::stacked::{StackedCircuit, StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound,
};

use super::registered::{self, size_label};
use crate::job::{Error, ProofKind, Result};
use crate::srs::{read_params, SrsCache, SrsEntry};

/// Which parameter file a job proves under, and the name it is cached by in `SrsCache`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamSet {
    /// Short circuit id ("porep-2k"), the name PreloadSRS and GetStatus use.
    pub srs_id: String,
    /// The proof crates' cache identifier (the file name without `v28-` and extension).
    pub identifier: String,
}

impl ParamSet {
    pub fn params_file(&self, dir: &Path) -> PathBuf {
        dir.join(format!("v{VERSION}-{}.params", self.identifier))
    }

    pub fn vk_file(&self, dir: &Path) -> PathBuf {
        dir.join(format!("v{VERSION}-{}.vk", self.identifier))
    }
}

/// The registered proof whose parameters a circuit id names: the proof in use on chain today
/// for that kind and size.
enum Canonical {
    Seal(RegisteredSealProof),
    PoSt(RegisteredPoStProof),
    Update(RegisteredUpdateProof),
}

fn canonical(kind: ProofKind, sector_size: u64) -> Option<Canonical> {
    Some(match kind {
        ProofKind::PorepSealCommit => Canonical::Seal(registered::default_seal_proof(sector_size)?),
        ProofKind::WinningPost => Canonical::PoSt(registered::winning_post_proof(sector_size)?),
        ProofKind::WindowPostPartition => {
            Canonical::PoSt(registered::window_post_proof(sector_size)?)
        }
        ProofKind::SnapDealsUpdate => {
            Canonical::Update(registered::update_proof_for_size(sector_size)?)
        }
        ProofKind::Synthetic => return None,
    })
}

/// The proof crates' cache identifier of a circuit, computed as their parameter caches
/// compute it (`CacheableParameters::cache_identifier` over the public parameters).
/// filecoin-proofs-api's `RegisteredUpdateProof::circuit_identifier` returns the PoRep
/// identifier (it goes through a PoRepConfig), so it cannot be used for SnapDeals.
fn identifier_of(c: &Canonical) -> Result<String> {
    let (kind, size) = match c {
        Canonical::Seal(p) => (ProofKind::PorepSealCommit, u64::from(p.sector_size())),
        Canonical::PoSt(p) if p.typ() == filecoin_proofs_api::PoStType::Winning => {
            (ProofKind::WinningPost, u64::from(p.sector_size()))
        }
        Canonical::PoSt(p) => (ProofKind::WindowPostPartition, u64::from(p.sector_size())),
        Canonical::Update(p) => (ProofKind::SnapDealsUpdate, u64::from(p.sector_size())),
    };
    super::with_shape!(size, identifier_shaped, kind, c)
}

fn identifier_shaped<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    kind: ProofKind,
    c: &Canonical,
) -> Result<String> {
    let e = |x: anyhow::Error| Error::Params(format!("{kind} circuit identifier: {x:#}"));
    Ok(match c {
        Canonical::Seal(p) => {
            let pp = public_params::<Tree>(&p.as_v1_config()).map_err(e)?;
            <StackedCompound<Tree, DefaultPieceHasher> as CacheableParameters<
                StackedCircuit<Tree, DefaultPieceHasher>,
                _,
            >>::cache_identifier(&pp)
        }
        Canonical::PoSt(p) => {
            let cfg = p.as_v1_config();
            let pp = if kind == ProofKind::WinningPost {
                winning_post_public_params::<Tree>(&cfg)
            } else {
                window_post_public_params::<Tree>(&cfg)
            }
            .map_err(e)?;
            <FallbackPoStCompound<Tree> as CacheableParameters<FallbackPoStCircuit<Tree>, _>>::cache_identifier(&pp)
        }
        Canonical::Update(p) => {
            let pp =
                storage_proofs_update::PublicParams::from_sector_size(u64::from(p.sector_size()));
            <EmptySectorUpdateCompound<Tree> as CacheableParameters<
                EmptySectorUpdateCircuit<Tree>,
                _,
            >>::cache_identifier(&pp)
        }
    })
}

/// "porep-2k", "winning-32g", ...
pub fn circuit_id(kind: ProofKind, sector_size: u64) -> Option<String> {
    canonical(kind, sector_size)?;
    Some(format!("{}-{}", kind.as_str(), size_label(sector_size)?))
}

/// The parameter set of the canonical proof of `kind` at `sector_size`.
pub fn canonical_set(kind: ProofKind, sector_size: u64) -> Result<ParamSet> {
    let c = canonical(kind, sector_size).ok_or_else(|| {
        Error::invalid(
            "sector_size",
            format!("no {kind} circuit for sector size {sector_size}"),
        )
    })?;
    Ok(ParamSet {
        srs_id: circuit_id(kind, sector_size).expect("canonical exists"),
        identifier: identifier_of(&c)?,
    })
}

/// The parameter set of a job: the canonical set when its circuit is the same (older proof
/// versions mostly share circuits), otherwise a set of its own.
fn set_for(kind: ProofKind, sector_size: u64, identifier: String) -> Result<ParamSet> {
    let canon = canonical_set(kind, sector_size)?;
    if canon.identifier == identifier {
        return Ok(canon);
    }
    // The identifier ends in the circuit's hash; eight hex digits keep ids readable.
    let tail = &identifier[identifier.len().saturating_sub(8)..];
    Ok(ParamSet {
        srs_id: format!("{}-{tail}", canon.srs_id),
        identifier,
    })
}

pub fn seal_set(p: RegisteredSealProof) -> Result<ParamSet> {
    let id = identifier_of(&Canonical::Seal(p))?;
    set_for(ProofKind::PorepSealCommit, u64::from(p.sector_size()), id)
}

pub fn post_set(kind: ProofKind, p: RegisteredPoStProof) -> Result<ParamSet> {
    let id = identifier_of(&Canonical::PoSt(p))?;
    set_for(kind, u64::from(p.sector_size()), id)
}

pub fn update_set(p: RegisteredUpdateProof) -> Result<ParamSet> {
    let id = identifier_of(&Canonical::Update(p))?;
    set_for(ProofKind::SnapDealsUpdate, u64::from(p.sector_size()), id)
}

/// Load (or share the loaded copy of) a parameter set from the cache directory.
pub fn load(srs: &SrsCache, set: &ParamSet) -> Result<(Arc<SrsEntry>, bool)> {
    let path = set.params_file(srs.dir());
    srs.get_or_load(&set.srs_id, || {
        if !path.exists() {
            return Err(Error::Params(format!(
                "{} needs parameter file {}, which is missing; fetch the production parameters \
                 into {} or, for test sizes, run `cuzk-client params generate`",
                set.srs_id,
                path.display(),
                srs.dir().display()
            )));
        }
        // The stock verifiers (verify_job) read the verifying key from the crates' own
        // directory; keys from two directories would check proofs against another circuit.
        check_parameter_dir(srs.dir())?;
        read_params(&path)
    })
}

/// Resolve a Filecoin circuit id ("porep-2k", "snap-32g") for PreloadSRS; None when `id` is
/// not one.
pub fn by_circuit_id(srs: &SrsCache, id: &str) -> Option<Result<(Arc<SrsEntry>, bool)>> {
    let (kind, size) = id.split_once('-')?;
    let kind = ProofKind::ALL
        .into_iter()
        .find(|k| *k != ProofKind::Synthetic && k.as_str() == kind)?;
    let size = registered::parse_sector_size(size)?;
    Some(canonical_set(kind, size).and_then(|set| load(srs, &set)))
}

const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// Point the proof crates at `dir` for this process. Call once at startup, before any proof
/// crate function runs; fails when the crates already read another directory.
pub fn use_parameter_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Params(format!("creating {}: {e}", dir.display())))?;
    if std::env::var_os(PARAMETER_CACHE_ENV).as_deref() != Some(dir.as_os_str()) {
        // Startup-time only: the crates read it into a global on first use.
        std::env::set_var(PARAMETER_CACHE_ENV, dir);
    }
    check_parameter_dir(dir)
}

/// The proof crates' verifiers read verifying keys from their own directory; a proof checked
/// against keys from elsewhere would be checked against the wrong circuit.
pub fn check_parameter_dir(dir: &Path) -> Result<()> {
    let theirs = storage_proofs_core::parameter_cache::parameter_cache_dir();
    let same = match (theirs.canonicalize(), dir.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => theirs == dir,
    };
    if same {
        return Ok(());
    }
    Err(Error::Params(format!(
        "the Filecoin proof crates use parameter directory {} but the cache is {}; set {PARAMETER_CACHE_ENV}={} \
         before the first proof (they read it once per process)",
        theirs.display(),
        dir.display(),
        dir.display()
    )))
}

/// What `generate` reports as it goes.
#[derive(Clone, Debug)]
pub struct ParamProgress {
    pub kind: ProofKind,
    pub srs_id: String,
    pub path: PathBuf,
    pub state: ParamState,
}

#[derive(Clone, Debug)]
pub enum ParamState {
    Generating,
    Generated(Duration),
    AlreadyPresent,
}

/// Which generator makes a set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Generator {
    /// bellperson's up to 512 MiB sectors, the recorded circuit above.
    Auto,
    /// bellperson's `generate_random_parameters`, through the proof crates' cache code.
    Bellperson,
    /// The real circuit recorded from a virtual sector, then cuzk's generator (PoRep only).
    Recorded,
}

/// Generate test parameters (random toxic waste, fixed seed: worthless for anything of value)
/// for `kinds` at `sector_size` into `dir`, in the standard layout. Files already present are
/// kept, so a second run costs nothing. Returns the parameter files.
pub fn generate(
    sector_size: u64,
    kinds: &[ProofKind],
    dir: &Path,
    progress: &mut dyn FnMut(&ParamProgress),
) -> Result<Vec<PathBuf>> {
    generate_with(sector_size, kinds, dir, Generator::Auto, progress)
}

/// `generate` with the generator chosen.
pub fn generate_with(
    sector_size: u64,
    kinds: &[ProofKind],
    dir: &Path,
    generator: Generator,
    progress: &mut dyn FnMut(&ParamProgress),
) -> Result<Vec<PathBuf>> {
    use_parameter_dir(dir)?;
    let mut out = Vec::new();
    for &kind in kinds {
        let set = canonical_set(kind, sector_size)?;
        let path = set.params_file(dir);
        let mut report = |state| {
            progress(&ParamProgress {
                kind,
                srs_id: set.srs_id.clone(),
                path: path.clone(),
                state,
            })
        };
        if path.exists() && set.vk_file(dir).exists() {
            report(ParamState::AlreadyPresent);
            out.push(path);
            continue;
        }
        report(ParamState::Generating);
        let t = Instant::now();
        let seed = 0x6375_7a6b_6669_6c00 ^ sector_size ^ kind as u64;
        let recorded = match generator {
            Generator::Auto => sector_size > BELLPERSON_MAX_SECTOR_SIZE,
            Generator::Bellperson => false,
            Generator::Recorded => true,
        };
        if recorded {
            generate_recorded(kind, sector_size, &set, dir, seed)?;
        } else {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            super::with_shape!(sector_size, generate_one, kind, sector_size, &mut rng)?;
        }
        if !path.exists() {
            return Err(Error::Params(format!(
                "generated {} but {} did not appear (identifier mismatch?)",
                set.srs_id,
                path.display()
            )));
        }
        report(ParamState::Generated(t.elapsed()));
        out.push(path);
    }
    Ok(out)
}

/// The largest sector size whose parameters bellperson's generator makes in minutes; above
/// it (a 32 GiB PoRep partition is 2^27 constraints) the real circuit is recorded and cuzk's
/// own generator makes the set, on the GPU where there is one.
const BELLPERSON_MAX_SECTOR_SIZE: u64 = registered::SECTOR_SIZE_512_MIB;

/// Generate `set` from the real circuit: record partition 0's matrices from a virtual sector
/// (one synthesis; PoRep, WinningPoSt and WindowPoSt), then run cuzk's generator (`paramgen`) over them. Writes the `.params`
/// file in bellperson's format and its verifying key as the `.vk` the stock verifiers read.
fn generate_recorded(
    kind: ProofKind,
    sector_size: u64,
    set: &ParamSet,
    dir: &Path,
    seed: u64,
) -> Result<()> {
    use crate::paramgen::{generate as generate_rows, Engine, RecordedRows, Toxic};
    let req = super::virtual_sector::request(kind, sector_size)?;
    let task = super::build_task(&req)?;
    let t = Instant::now();
    let m = task.record_matrices(0)?;
    tracing::info!(
        srs_id = %set.srs_id,
        secs = t.elapsed().as_secs_f64(),
        rows = m.num_constraints(),
        aux = m.num_aux,
        bytes = m.size_bytes(),
        "recorded the real circuit"
    );
    // Kept beside the set, so a daemon reading its matrices from this directory
    // (CUZK_MATRIX_DIR) skips recording them again on its first proof.
    let matrices = crate::matrices::MatrixCache::file(dir, &set.identifier);
    if let Err(e) = crate::matrices::write_matrices(&m, &matrices) {
        tracing::warn!("writing {}: {e}", matrices.display());
    }
    let (fb, on) = Engine::Auto.open()?;
    let path = set.params_file(dir);
    let partial = crate::atomic_file::temporary_path(&path);
    let report = generate_rows(
        &RecordedRows::new(&m)?,
        &Toxic::from_seed(seed),
        fb.as_ref(),
        &partial,
    )?;
    drop(m);
    tracing::info!(
        srs_id = %set.srs_id,
        on,
        secs = report.total.as_secs_f64(),
        bytes = report.bytes,
        "generated from the recorded circuit"
    );
    // The verifying key is the head of the parameter file.
    let io = |p: &Path, e: std::io::Error| Error::Params(format!("{}: {e}", p.display()));
    let vk = bellperson::groth16::VerifyingKey::<blstrs::Bls12>::read(std::io::BufReader::new(
        std::fs::File::open(&partial).map_err(|e| io(&partial, e))?,
    ))
    .map_err(|e| io(&partial, e))?;
    let vk_path = set.vk_file(dir);
    let mut vk_bytes = Vec::new();
    vk.write(&mut vk_bytes).map_err(|e| io(&vk_path, e))?;
    let vk_partial = crate::atomic_file::temporary_path(&vk_path);
    std::fs::write(&vk_partial, &vk_bytes).map_err(|e| io(&vk_partial, e))?;
    std::fs::rename(&vk_partial, &vk_path).map_err(|e| io(&vk_path, e))?;
    std::fs::rename(&partial, &path).map_err(|e| io(&path, e))?;
    Ok(())
}

/// Generate through the crates' own cache code (`CacheableParameters::get_groth_params` and
/// `get_verifying_key`), so names and format are exactly theirs.
fn generate_one<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    kind: ProofKind,
    sector_size: u64,
    rng: &mut ChaCha20Rng,
) -> Result<()> {
    let e = |what: &str, err: anyhow::Error| {
        Error::Params(format!("generating {kind} {what}: {err:#}"))
    };
    match canonical(kind, sector_size) {
        Some(Canonical::Seal(p)) => {
            let pp = public_params::<Tree>(&p.as_v1_config()).map_err(|x| e("setup", x))?;
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
                StackedDrg<'_, Tree, DefaultPieceHasher>,
                _,
            >>::groth_params(Some(&mut *rng), &pp)
            .map_err(|x| e("params", x))?;
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
                StackedDrg<'_, Tree, DefaultPieceHasher>,
                _,
            >>::verifying_key(Some(rng), &pp)
            .map_err(|x| e("vk", x))?;
        }
        Some(Canonical::PoSt(p)) => {
            let cfg = p.as_v1_config();
            let pp = if kind == ProofKind::WinningPost {
                winning_post_public_params::<Tree>(&cfg)
            } else {
                window_post_public_params::<Tree>(&cfg)
            }
            .map_err(|x| e("setup", x))?;
            <FallbackPoStCompound<Tree> as CompoundProof<
                FallbackPoSt<'_, Tree>,
                FallbackPoStCircuit<Tree>,
            >>::groth_params(Some(&mut *rng), &pp)
            .map_err(|x| e("params", x))?;
            <FallbackPoStCompound<Tree> as CompoundProof<
                FallbackPoSt<'_, Tree>,
                FallbackPoStCircuit<Tree>,
            >>::verifying_key(Some(rng), &pp)
            .map_err(|x| e("vk", x))?;
        }
        Some(Canonical::Update(_)) => {
            let pp = storage_proofs_update::PublicParams::from_sector_size(sector_size);
            <EmptySectorUpdateCompound<Tree> as CompoundProof<
                EmptySectorUpdate<Tree>,
                EmptySectorUpdateCircuit<Tree>,
            >>::groth_params(Some(&mut *rng), &pp)
            .map_err(|x| e("params", x))?;
            <EmptySectorUpdateCompound<Tree> as CompoundProof<
                EmptySectorUpdate<Tree>,
                EmptySectorUpdateCircuit<Tree>,
            >>::verifying_key(Some(rng), &pp)
            .map_err(|x| e("vk", x))?;
        }
        None => {
            return Err(Error::invalid(
                "kind",
                format!("{kind} has no Filecoin parameters"),
            ))
        }
    }
    Ok(())
}

/// StackedDrg's public parameters for a PoRep config, as `seal_commit_phase2` sets them up.
pub(crate) fn porep_public_params<Tree: 'static + MerkleTreeTrait>(
    config: &filecoin_proofs::PoRepConfig,
) -> Result<storage_proofs_porep::stacked::PublicParams<Tree>> {
    public_params::<Tree>(config).map_err(|e| Error::Internal(format!("porep setup: {e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_proofs_core::parameter_cache::get_parameter_data_from_id;

    /// Every circuit id resolves to a file the production manifest (the proof crates'
    /// parameters.json) lists, so a directory fetched by paramfetch works unchanged.
    #[test]
    fn identifiers_are_the_production_file_names() {
        let kinds = [
            ProofKind::PorepSealCommit,
            ProofKind::WinningPost,
            ProofKind::WindowPostPartition,
            ProofKind::SnapDealsUpdate,
        ];
        for size in registered::SECTOR_SIZES {
            let mut ids = Vec::new();
            for kind in kinds {
                let set = canonical_set(kind, size).unwrap();
                let file = format!("v{VERSION}-{}.params", set.identifier);
                assert!(
                    get_parameter_data_from_id(&file).is_some(),
                    "{} -> {file}",
                    set.srs_id
                );
                ids.push(set.identifier);
            }
            ids.dedup();
            assert_eq!(ids.len(), kinds.len(), "two kinds share a file at {size}");
        }
    }
}
