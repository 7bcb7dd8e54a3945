//! The setup itself, in the order of the file: the QAP columns at tau, then the verifying key
//! and each query, made in chunks by fixed-base multiplication and written as they come.
//! The same semantics as bellperson's `generate_parameters`, so the same toxic waste gives
//! the same bytes:
//!
//! - ic_j = (beta A_j + alpha B_j + C_j) / gamma for the inputs,
//! - h_i = tau^i (tau^m - 1) / delta for i < m - 1,
//! - l_j = (beta A_j + alpha B_j + C_j) / delta for the aux variables (none may be zero),
//! - a_j = A_j, b_j = B_j in G1 and G2, over all variables, leaving out those whose
//!   column is zero at tau (their points would be the identity).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blstrs::{G1Affine, G2Affine, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve};
use rayon::prelude::*;

use super::columns::qap_columns;
use super::domain::{geometric, Domain};
use super::params_file::{encode, ParamsFile, Uncompressed};
use super::{FixedBase, RowSource, Toxic};
use crate::job::{Error, Result};

/// Points made and written at a time: a G2 chunk is 800 MB of bytes, and a GPU wants
/// millions of scalars per call.
const CHUNK: usize = 1 << 22;

/// One query's share of a generation.
#[derive(Clone, Debug)]
pub struct QueryReport {
    /// As bellperson names it: ic, h, l, a, b_g1, b_g2.
    pub name: &'static str,
    pub points: usize,
    /// Scalars, points and their encoding (the write overlaps, except when the disk is
    /// behind: then this includes the wait).
    pub time: Duration,
}

#[derive(Clone, Debug)]
pub struct GenReport {
    pub path: PathBuf,
    /// The evaluation domain's size m.
    pub domain: usize,
    /// The Lagrange basis at tau and the A, B, C columns.
    pub columns: Duration,
    /// In file order.
    pub queries: Vec<QueryReport>,
    /// The writer thread's time writing and syncing (overlapped with the queries).
    pub write: Duration,
    pub bytes: u64,
    pub total: Duration,
}

/// Generate the parameter set of `src` under `toxic` into `path` (bellperson's format).
pub fn generate(
    src: &dyn RowSource,
    toxic: &Toxic,
    fb: &dyn FixedBase,
    path: &Path,
) -> Result<GenReport> {
    let start = Instant::now();
    let at = |phase: &'static str| in_phase(path, phase);
    let rows = src.num_rows() + src.num_inputs();
    let domain = Domain::for_rows(rows).map_err(at("domain"))?;

    let t = Instant::now();
    let cols = domain
        .lagrange_at(&toxic.tau)
        .and_then(|l| qap_columns(src, &l))
        .map_err(at("columns"))?;
    let columns = t.elapsed();

    let gamma_inv = invert(&toxic.gamma, "gamma", path)?;
    let delta_inv = invert(&toxic.delta, "delta", path)?;
    let ext = |j: usize, inv: &Scalar| {
        (toxic.beta * cols.a[j] + toxic.alpha * cols.b[j] + cols.c[j]) * inv
    };
    let (ni, nv) = (cols.num_inputs, cols.num_vars());
    // Before any point is made: a zero l would be the identity, which bellperson refuses
    // (UnconstrainedVariable: the variable's value would not be bound by the proof).
    if let Some(j) = (ni..nv)
        .into_par_iter()
        .find_first(|&j| ext(j, &delta_inv).is_zero().into())
    {
        return Err(Error::Params(format!(
            "generating {}: aux variable {} is unconstrained (it appears in no constraint)",
            path.display(),
            j - ni
        )));
    }

    let mut q = Queries {
        file: ParamsFile::create(path)?,
        fb,
        toxic,
        path,
        reports: Vec::new(),
    };
    q.verifying_key().map_err(at("vk"))?;
    q.g1(
        "ic",
        ni,
        chunks(0..ni, |r| {
            r.into_par_iter().map(|j| ext(j, &gamma_inv)).collect()
        }),
    )
    .map_err(at("ic"))?;

    let h_len = domain.size - 1;
    let h_coeff = domain.z_at(&toxic.tau) * delta_inv;
    q.g1(
        "h",
        h_len,
        chunks(0..h_len, |r| {
            let mut v = vec![Scalar::ZERO; r.len()];
            geometric(
                h_coeff * toxic.tau.pow_vartime([r.start as u64]),
                toxic.tau,
                &mut v,
            );
            v
        }),
    )
    .map_err(at("h"))?;

    q.g1(
        "l",
        nv - ni,
        chunks(ni..nv, |r| {
            r.into_par_iter().map(|j| ext(j, &delta_inv)).collect()
        }),
    )
    .map_err(at("l"))?;

    let a_len = nonzero_count(&cols.a);
    q.g1("a", a_len, nonzero_chunks(&cols.a)).map_err(at("a"))?;
    let b_len = nonzero_count(&cols.b);
    q.g1("b_g1", b_len, nonzero_chunks(&cols.b))
        .map_err(at("b_g1"))?;
    q.g2("b_g2", b_len, nonzero_chunks(&cols.b))
        .map_err(at("b_g2"))?;
    drop(cols);

    let Queries { file, reports, .. } = q;
    let (bytes, write) = file.finish()?;
    Ok(GenReport {
        path: path.to_path_buf(),
        domain: domain.size,
        columns,
        queries: reports,
        write,
        bytes,
        total: start.elapsed(),
    })
}

/// Name the file and the phase in an error.
fn in_phase(path: &Path, phase: &'static str) -> impl Fn(Error) -> Error {
    let p = path.display().to_string();
    move |e| match e {
        Error::Params(m) => Error::Params(format!("generating {p}, {phase}: {m}")),
        other => other,
    }
}

fn invert(x: &Scalar, name: &str, path: &Path) -> Result<Scalar> {
    Option::from(x.invert())
        .ok_or_else(|| Error::Params(format!("generating {}: {name} is zero", path.display())))
}

/// The scalars of `range` in chunks of CHUNK, each made by `make` (in parallel).
fn chunks<'a>(
    range: std::ops::Range<usize>,
    make: impl Fn(std::ops::Range<usize>) -> Vec<Scalar> + 'a,
) -> impl Iterator<Item = Vec<Scalar>> + 'a {
    let end = range.end;
    range
        .step_by(CHUNK)
        .map(move |s| make(s..(s + CHUNK).min(end)))
}

fn nonzero_count(col: &[Scalar]) -> usize {
    col.par_iter().filter(|x| !bool::from(x.is_zero())).count()
}

/// The non-zero entries of a column, in order, about CHUNK at a time.
fn nonzero_chunks(col: &[Scalar]) -> impl Iterator<Item = Vec<Scalar>> + '_ {
    col.chunks(CHUNK).map(|c| {
        c.par_iter()
            .filter(|x| !bool::from(x.is_zero()))
            .copied()
            .collect()
    })
}

/// The file being written and what has been reported of it.
struct Queries<'a> {
    file: ParamsFile,
    fb: &'a dyn FixedBase,
    toxic: &'a Toxic,
    path: &'a Path,
    reports: Vec<QueryReport>,
}

impl Queries<'_> {
    fn verifying_key(&mut self) -> Result<()> {
        let (g1, g2, t) = (self.toxic.g1, self.toxic.g2, self.toxic);
        let g1s = [t.alpha, t.beta].map(|x| (g1 * x).to_affine());
        let g2s = [t.beta, t.gamma].map(|x| (g2 * x).to_affine());
        let (delta_g1, delta_g2) = ((g1 * t.delta).to_affine(), (g2 * t.delta).to_affine());
        let mut bytes = encode(&g1s);
        bytes.extend(encode(&g2s));
        bytes.extend(encode(&[delta_g1]));
        bytes.extend(encode(&[delta_g2]));
        self.file.send(bytes)
    }

    fn g1(
        &mut self,
        name: &'static str,
        len: usize,
        scalars: impl Iterator<Item = Vec<Scalar>>,
    ) -> Result<()> {
        let (fb, base) = (self.fb, self.toxic.g1);
        self.query(name, len, scalars, |s, out: &mut [G1Affine]| {
            fb.g1(&base, s, out)
        })
    }

    fn g2(
        &mut self,
        name: &'static str,
        len: usize,
        scalars: impl Iterator<Item = Vec<Scalar>>,
    ) -> Result<()> {
        let (fb, base) = (self.fb, self.toxic.g2);
        self.query(name, len, scalars, |s, out: &mut [G2Affine]| {
            fb.g2(&base, s, out)
        })
    }

    /// The length, then the points of every chunk of scalars.
    fn query<P: Uncompressed + PrimeCurveAffine>(
        &mut self,
        name: &'static str,
        len: usize,
        scalars: impl Iterator<Item = Vec<Scalar>>,
        times: impl Fn(&[Scalar], &mut [P]) -> Result<()>,
    ) -> Result<()> {
        let t = Instant::now();
        self.file.send_len(name, len)?;
        let mut points = Vec::new();
        let mut made = 0;
        for s in scalars {
            points.resize(s.len(), P::identity());
            times(&s, &mut points)?;
            made += s.len();
            self.file.send(encode(&points))?;
        }
        if made != len {
            return Err(Error::Params(format!(
                "{}: {made} points made for the {len} counted",
                self.path.display()
            )));
        }
        self.reports.push(QueryReport {
            name,
            points: len,
            time: t.elapsed(),
        });
        Ok(())
    }
}
