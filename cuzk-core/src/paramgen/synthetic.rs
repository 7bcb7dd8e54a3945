//! The synthetic kinds' parameter sets (benchmark keys, toxic waste from a fixed seed per
//! shape and size): generated on first use through the row-based generator, on the GPU
//! where there is one.

use std::path::{Path, PathBuf};

use super::gpu::Engine;
use super::{generate, record_rows, GenReport, RecordedRows, Toxic};
use crate::job::Result;
use crate::kinds::porep_shaped::PorepShape;
use crate::kinds::synthetic::SyntheticCircuit;
use crate::kinds::SyntheticShape;

/// The file a synthetic set lives in, under `dir`.
pub fn synthetic_params_file(dir: &Path, shape: SyntheticShape, log_size: u32) -> PathBuf {
    dir.join(format!("cuzk-{}-v1.params", shape.srs_id(log_size)))
}

/// Generate the set of `shape` at 2^log_size into `path` (replacing any file there).
pub fn generate_synthetic(
    shape: SyntheticShape,
    log_size: u32,
    path: &Path,
    engine: Engine,
) -> Result<(GenReport, &'static str)> {
    let (fb, on) = engine.open()?;
    tracing::info!(shape = shape.as_str(), log_size, on, path = %path.display(), "generating synthetic parameters");
    // One seed per shape and size: two processes generating the same set write the same file.
    let seed = 0x6375_7a6b_0000_0000 | (u64::from(shape.code()) << 16) | u64::from(log_size);
    let toxic = Toxic::from_seed(seed);
    let report = match shape {
        SyntheticShape::Porep => generate(&PorepShape::new(log_size), &toxic, fb.as_ref(), path)?,
        SyntheticShape::Uniform => {
            let id = shape.srs_id(log_size);
            let m = record_rows(&id, SyntheticCircuit::new(log_size, 0))?;
            generate(&RecordedRows::new(&m)?, &toxic, fb.as_ref(), path)?
        }
    };
    tracing::info!(
        shape = shape.as_str(),
        log_size,
        on,
        ms = report.total.as_millis() as u64,
        bytes = report.bytes,
        "synthetic parameters written"
    );
    Ok((report, on))
}
