//! Command-line pieces for Filecoin proofs: `params generate`, `gen-vanilla`, and the inputs
//! of `prove` for the real kinds. Transport-free: they produce files or a `KindRequest`.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use cuzk_core::kinds::params::{self, ParamState};
use cuzk_core::kinds::registered::parse_sector_size;
use cuzk_core::kinds::request::parse_hex;
use cuzk_core::kinds::vectors::{self, parse_kind, Manifest};
use cuzk_core::kinds::virtual_sector;
use cuzk_core::kinds::{KindRequest, SyntheticShape, SyntheticTask};
use cuzk_core::paramgen::{generate_synthetic, synthetic_params_file, Engine};
use cuzk_core::{Error, ProofKind, Result};

/// `cuzk-client params <command>`.
#[derive(Subcommand, Debug)]
pub enum ParamsCmd {
    /// Generate test parameters (random toxic waste: never for real sectors) for small sector
    /// sizes, in the standard cache layout. Existing files are kept.
    Generate(ParamsGenerateArgs),
    /// Generate a synthetic set (benchmark keys) with cuzk's own generator, on the GPU where
    /// there is one, and print where the time went. An existing file is kept unless --force.
    Synthetic(ParamsSyntheticArgs),
}

#[derive(Args, Debug)]
pub struct ParamsSyntheticArgs {
    /// uniform | porep
    #[arg(long, default_value = "porep")]
    pub shape: String,
    /// 2^k constraints per partition.
    #[arg(long)]
    pub log_size: u32,
    /// auto | cpu | gpu (where the query points are made).
    #[arg(long, default_value = "auto")]
    pub engine: String,
    /// Regenerate even if the file exists.
    #[arg(long)]
    pub force: bool,
    /// Parameter directory (default as for `generate`).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ParamsGenerateArgs {
    /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB (or bytes).
    #[arg(long, default_value = "2KiB")]
    pub sector_size: String,
    /// Kinds to generate, comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "porep,winning,window,snap"
    )]
    pub kinds: Vec<String>,
    /// Parameter cache directory (default: $FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters, the proof crates' own default).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// auto | bellperson | recorded. recorded: the real circuit recorded from a virtual
    /// sector, then cuzk's generator, on the GPU where there is one (PoRep only; minutes at
    /// 32 GiB). auto: bellperson's up to 512MiB, recorded above.
    #[arg(long, default_value = "auto")]
    pub generator: String,
}

impl ParamsGenerateArgs {
    pub fn dir(&self) -> PathBuf {
        self.dir.clone().unwrap_or_else(|| {
            std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/var/tmp/filecoin-proof-parameters"))
        })
    }
}

pub fn run_params(cmd: &ParamsCmd) -> Result<()> {
    match cmd {
        ParamsCmd::Generate(a) => params_generate(a),
        ParamsCmd::Synthetic(a) => params_synthetic(a),
    }
}

fn sector_size(s: &str) -> Result<u64> {
    parse_sector_size(s).ok_or_else(|| {
        Error::invalid(
            "sector_size",
            format!("{s:?} is not 2KiB, 8MiB, 512MiB, 32GiB or 64GiB"),
        )
    })
}

pub fn params_generate(a: &ParamsGenerateArgs) -> Result<()> {
    let size = sector_size(&a.sector_size)?;
    let kinds = a
        .kinds
        .iter()
        .map(|k| parse_kind(k))
        .collect::<Result<Vec<_>>>()?;
    let generator = match a.generator.as_str() {
        "auto" => params::Generator::Auto,
        "bellperson" => params::Generator::Bellperson,
        "recorded" => params::Generator::Recorded,
        other => {
            return Err(Error::invalid(
                "generator",
                format!("{other:?} (auto|bellperson|recorded)"),
            ))
        }
    };
    let files =
        params::generate_with(size, &kinds, &a.dir(), generator, &mut |p| match &p.state {
            ParamState::Generating => {
                eprintln!("{}: generating {} ...", p.srs_id, p.path.display())
            }
            ParamState::Generated(t) => {
                eprintln!("{}: generated in {:.1} s", p.srs_id, t.as_secs_f64())
            }
            ParamState::AlreadyPresent => eprintln!("{}: present, {}", p.srs_id, p.path.display()),
        })?;
    for f in files {
        println!("{}", f.display());
    }
    Ok(())
}

pub fn params_synthetic(a: &ParamsSyntheticArgs) -> Result<()> {
    let shape = SyntheticShape::parse(&a.shape)?;
    let engine = match a.engine.as_str() {
        "auto" => Engine::Auto,
        "cpu" => Engine::Cpu,
        "gpu" => Engine::Gpu,
        other => {
            return Err(Error::invalid(
                "engine",
                format!("{other:?} (auto|cpu|gpu)"),
            ))
        }
    };
    // Validates the size for the shape.
    SyntheticTask::new(a.log_size, 1, 0, shape)?;
    let dir = a
        .dir
        .clone()
        .unwrap_or_else(cuzk_core::config::default_param_dir);
    let path = synthetic_params_file(&dir, shape, a.log_size);
    if path.exists() && !a.force {
        eprintln!("present: {}", path.display());
        println!("{}", path.display());
        return Ok(());
    }
    let (r, on) = generate_synthetic(shape, a.log_size, &path, engine)?;
    let secs = |d: std::time::Duration| d.as_secs_f64();
    eprintln!(
        "{} 2^{} on the {on}: {:.1} s, {:.2} GB ({:.2} GB/s), domain {}",
        shape.as_str(),
        a.log_size,
        secs(r.total),
        r.bytes as f64 / 1e9,
        r.bytes as f64 / 1e9 / secs(r.total).max(1e-9),
        r.domain
    );
    eprintln!("  {:<8} {:>12} {:>9}", "phase", "points", "s");
    eprintln!("  {:<8} {:>12} {:>9.2}", "columns", "", secs(r.columns));
    for q in &r.queries {
        eprintln!("  {:<8} {:>12} {:>9.2}", q.name, q.points, secs(q.time));
    }
    eprintln!(
        "  {:<8} {:>12} {:>9.2}  (overlapped)",
        "write",
        "",
        secs(r.write)
    );
    println!("{}", path.display());
    Ok(())
}

/// `cuzk-client gen-vanilla <kind> --sector-size 2KiB --out DIR`.
#[derive(Args, Debug)]
pub struct GenVanillaArgs {
    /// porep, winning, window, snap, or all.
    pub kind: String,
    #[arg(long, default_value = "2KiB")]
    pub sector_size: String,
    /// Output directory: <kind>.json manifests and the payload files they name.
    #[arg(long)]
    pub out: PathBuf,
    /// Make a virtual sector (consistent openings of a sector never sealed; seconds at any
    /// size) instead of sealing one: porep, winning, window. Sizes above 512MiB are always
    /// virtual ("all" then skips snap, which a virtual sector cannot stand in for).
    #[arg(long = "virtual")]
    pub virtual_sector: bool,
}

pub fn gen_vanilla(a: &GenVanillaArgs) -> Result<()> {
    let size = sector_size(&a.sector_size)?;
    let kinds = if a.kind == "all" {
        vec![
            ProofKind::PorepSealCommit,
            ProofKind::WinningPost,
            ProofKind::WindowPostPartition,
            ProofKind::SnapDealsUpdate,
        ]
    } else {
        vec![parse_kind(&a.kind)?]
    };
    let virtual_sector = a.virtual_sector || size > vectors::MAX_VECTOR_SECTOR_SIZE;
    for kind in kinds {
        if virtual_sector && kind == ProofKind::SnapDealsUpdate && a.kind == "all" {
            eprintln!(
                "{kind}: skipped (needs a sealed sector: its challenges follow from comm_r_new)"
            );
            continue;
        }
        let m = if virtual_sector {
            eprintln!("{kind}: a virtual {size}-byte sector ...");
            virtual_sector::generate(kind, size, &a.out)?
        } else {
            eprintln!("{kind}: sealing a fresh {size}-byte sector ...");
            vectors::generate(kind, size, &a.out)?
        };
        println!("{}", a.out.join(format!("{}.json", m.kind)).display());
    }
    Ok(())
}

/// What `prove` sends for a Filecoin kind: either a gen-vanilla manifest, or the fields
/// one by one (as Curio would send them).
#[derive(Args, Debug, Default)]
pub struct ProveInputArgs {
    /// A manifest written by gen-vanilla; every other input is taken from it.
    #[arg(long)]
    pub manifest: Option<PathBuf>,
    /// PoRep: the commit-phase-1 output in Curio's envelope (JSON).
    #[arg(long)]
    pub c1: Option<PathBuf>,
    /// PoSt: one bincode FallbackPoStSectorProof per sector (ascending sector number);
    /// SnapDeals: one bincode PartitionProof per partition. Repeat the flag.
    #[arg(long = "vanilla")]
    pub vanilla: Vec<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub sector_num: u64,
    #[arg(long, default_value_t = 0)]
    pub miner_id: u64,
    /// Go abi registered-proof number (PoSt and SnapDeals need it; PoRep reads it from C1).
    #[arg(long, default_value_t = 0)]
    pub registered_proof: u64,
    /// Sector size (0 or absent: the registered proof's).
    #[arg(long)]
    pub sector_size: Option<String>,
    /// PoSt randomness, 32 bytes hex.
    #[arg(long)]
    pub randomness: Option<String>,
    #[arg(long, default_value_t = 0)]
    pub partition_index: u32,
    #[arg(long)]
    pub comm_r_old: Option<String>,
    #[arg(long)]
    pub comm_r_new: Option<String>,
    #[arg(long)]
    pub comm_d_new: Option<String>,
}

impl ProveInputArgs {
    /// The request for `kind`. Payload checks happen in `build_task`, daemon side.
    pub fn to_request(&self, kind: ProofKind) -> Result<KindRequest> {
        if let Some(path) = &self.manifest {
            let m = Manifest::read(path)?;
            if m.proof_kind()? != kind {
                return Err(Error::invalid(
                    "kind",
                    format!("the manifest is for {}, not {kind}", m.kind),
                ));
            }
            return m.request(path.parent().unwrap_or(Path::new(".")));
        }
        let read = |p: &Path| {
            std::fs::read(p).map_err(|e| Error::Internal(format!("{}: {e}", p.display())))
        };
        let hex = |field, v: &Option<String>| {
            v.as_deref().map_or(Ok(Vec::new()), |s| parse_hex(field, s))
        };
        let mut req = KindRequest::new(kind);
        req.sector_size = match &self.sector_size {
            Some(s) => sector_size(s)?,
            None => 0,
        };
        req.registered_proof = self.registered_proof;
        req.sector_number = self.sector_num;
        req.miner_id = self.miner_id;
        req.partition_index = self.partition_index;
        if let Some(c1) = &self.c1 {
            req.vanilla_proof = read(c1)?;
        }
        req.vanilla_proofs = self
            .vanilla
            .iter()
            .map(|p| read(p))
            .collect::<Result<_>>()?;
        req.randomness = hex("randomness", &self.randomness)?;
        req.comm_r_old = hex("comm_r_old", &self.comm_r_old)?;
        req.comm_r_new = hex("comm_r_new", &self.comm_r_new)?;
        req.comm_d_new = hex("comm_d_new", &self.comm_d_new)?;
        Ok(req)
    }
}
