//! The matrices on disk, next to the parameters, so that a restarted daemon skips the
//! recording run. One file per circuit shape:
//!
//! ```text
//! "CUZKMTX2" | key (u32 length, UTF-8) | inputs, aux, rows (u64)
//! | coefficients (u64 count, 32-byte canonical little-endian each)
//! | A, B, C: unit_start, unit_cols, scaled_start, scaled_cols, scaled_coeffs (u64 count, u32 LE each)
//! | digest
//! ```
//!
//! The trailing digest is `Matrices::digest`: SHA-256 over everything before the arrays'
//! contents and, for each array, its count and the SHA-256 of each 64 MiB block of its bytes.
//! The blocks are hashed in parallel: one SHA-256 over the 7.7 GB of a 2^27 PoRep-shaped
//! shape was seconds on one core (version 1 of the format hashed the stream as written). A
//! file whose digest, key or structure does not check out is refused (and recorded anew by
//! the cache).

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

use blstrs::Scalar;
use ff::PrimeField;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::{Matrices, Matrix, INPUT_COLUMN};

const MAGIC: &[u8; 8] = b"CUZKMTX2";

/// Bytes per block of an array's digest.
const DIGEST_BLOCK: usize = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("not a matrices file of this version")]
    Magic,
    #[error("recorded for {found:?}, wanted {wanted:?}")]
    Key { found: String, wanted: String },
    #[error("corrupt: {0}")]
    Corrupt(String),
}

/// Everything before the arrays: magic, key, counts, coefficients.
fn write_head(m: &Matrices, w: &mut impl Write) -> io::Result<()> {
    w.write_all(MAGIC)?;
    w.write_all(&(m.key.len() as u32).to_le_bytes())?;
    w.write_all(m.key.as_bytes())?;
    for n in [m.num_inputs, m.num_aux, m.num_constraints()] {
        w.write_all(&(n as u64).to_le_bytes())?;
    }
    w.write_all(&(m.coeffs.len() as u64).to_le_bytes())?;
    for k in &m.coeffs {
        w.write_all(k.to_repr().as_ref())?;
    }
    Ok(())
}

fn write_body(m: &Matrices, w: &mut impl Write) -> io::Result<()> {
    write_head(m, w)?;
    for mat in [&m.a, &m.b, &m.c] {
        for v in arrays(mat) {
            w.write_all(&(v.len() as u64).to_le_bytes())?;
            write_u32s(v, w)?;
        }
    }
    Ok(())
}

/// `v` as the file stores it, little-endian: on a little-endian machine its memory as it is,
/// without a conversion (which for GiB-sized matrices cost as much as the hashing).
fn le_bytes(v: &[u32]) -> Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: u32 has no padding and every byte pattern is a valid u8; the slice covers
        // exactly v's memory.
        Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v))
        })
    } else {
        Cow::Owned(v.iter().flat_map(|x| x.to_le_bytes()).collect())
    }
}

fn write_u32s(v: &[u32], w: &mut impl Write) -> io::Result<()> {
    for chunk in v.chunks(1 << 18) {
        w.write_all(&le_bytes(chunk))?;
    }
    Ok(())
}

fn arrays(m: &Matrix) -> [&Vec<u32>; 5] {
    [
        &m.unit_start,
        &m.unit_cols,
        &m.scaled_start,
        &m.scaled_cols,
        &m.scaled_coeffs,
    ]
}

/// The digest of the matrices (see the module comment).
pub(super) fn digest(m: &Matrices) -> [u8; 32] {
    let mut head = Vec::new();
    write_head(m, &mut head).expect("writing to a Vec cannot fail");
    let mut h = Sha256::new();
    h.update(&head);
    for mat in [&m.a, &m.b, &m.c] {
        for v in arrays(mat) {
            h.update((v.len() as u64).to_le_bytes());
            let blocks: Vec<[u8; 32]> = v
                .par_chunks(DIGEST_BLOCK / 4)
                .map(|block| Sha256::digest(le_bytes(block)).into())
                .collect();
            for b in &blocks {
                h.update(b);
            }
        }
    }
    h.finalize().into()
}

/// Write `m` to `path` (through a temporary file renamed into place, so a reader never
/// sees half a file).
pub fn write_matrices(m: &Matrices, path: &Path) -> Result<(), FileError> {
    let tmp = crate::atomic_file::temporary_path(path);
    let result = (|| -> Result<(), FileError> {
        let mut w = BufWriter::new(File::create(&tmp)?);
        write_body(m, &mut w)?;
        w.write_all(&m.digest)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn u64_of(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

fn u32s(r: &mut impl Read, limit: u64) -> Result<Vec<u32>, FileError> {
    let n = u64_of(r)?;
    if n > limit {
        return Err(FileError::Corrupt(format!("an array of {n} entries")));
    }
    let mut out = Vec::with_capacity(n as usize);
    let mut buf = vec![0u8; 1 << 16];
    let mut left = n as usize * 4;
    while left > 0 {
        let take = left.min(buf.len());
        r.read_exact(&mut buf[..take])?;
        out.extend(
            buf[..take]
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes"))),
        );
        left -= take;
    }
    Ok(out)
}

/// Read the matrices of `key` from `path`, checking the digest and every index.
pub fn read_matrices(path: &Path, key: &str) -> Result<Matrices, FileError> {
    let len = std::fs::metadata(path)?.len();
    let mut r = BufReader::new(File::open(path)?);
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic != MAGIC {
        return Err(FileError::Magic);
    }
    let mut b4 = [0u8; 4];
    r.read_exact(&mut b4)?;
    let key_len = u32::from_le_bytes(b4) as usize;
    if key_len as u64 > len {
        return Err(FileError::Corrupt("key length".into()));
    }
    let mut found = vec![0u8; key_len];
    r.read_exact(&mut found)?;
    let found = String::from_utf8_lossy(&found).into_owned();
    if found != key {
        return Err(FileError::Key {
            found,
            wanted: key.to_string(),
        });
    }
    let (inputs, aux, rows) = (u64_of(&mut r)?, u64_of(&mut r)?, u64_of(&mut r)?);
    let n_coeffs = u64_of(&mut r)?;
    if n_coeffs > len / 32 {
        return Err(FileError::Corrupt(format!("{n_coeffs} coefficients")));
    }
    let mut coeffs = Vec::with_capacity(n_coeffs as usize);
    for _ in 0..n_coeffs {
        let mut repr = [0u8; 32];
        r.read_exact(&mut repr)?;
        let k = Option::<Scalar>::from(Scalar::from_repr(repr))
            .ok_or_else(|| FileError::Corrupt("a coefficient is not a field element".into()))?;
        coeffs.push(k);
    }
    let mut mats = Vec::with_capacity(3);
    for _ in 0..3 {
        let limit = len / 4;
        let m = Matrix {
            unit_start: u32s(&mut r, limit)?,
            unit_cols: u32s(&mut r, limit)?,
            scaled_start: u32s(&mut r, limit)?,
            scaled_cols: u32s(&mut r, limit)?,
            scaled_coeffs: u32s(&mut r, limit)?,
        };
        check_matrix(&m, rows, inputs, aux, coeffs.len())?;
        mats.push(m);
    }
    let mut stored = [0u8; 32];
    r.read_exact(&mut stored)?;
    let [a, b, c]: [Matrix; 3] = mats.try_into().expect("three matrices");
    let m = Matrices::new(
        key.to_string(),
        inputs as usize,
        aux as usize,
        [a, b, c],
        coeffs,
    );
    if m.digest != stored {
        return Err(FileError::Corrupt("digest mismatch".into()));
    }
    Ok(m)
}

/// Everything the evaluator indexes must be in range, so a damaged file cannot panic it.
fn check_matrix(
    m: &Matrix,
    rows: u64,
    inputs: u64,
    aux: u64,
    coeffs: usize,
) -> Result<(), FileError> {
    let bad = |what: &str| Err(FileError::Corrupt(what.to_string()));
    for (start, len) in [
        (&m.unit_start, m.unit_cols.len()),
        (&m.scaled_start, m.scaled_cols.len()),
    ] {
        if start.len() as u64 != rows.saturating_add(1)
            || start[0] != 0
            || start.windows(2).any(|w| w[0] > w[1])
            || *start.last().expect("rows + 1 > 0") as usize != len
        {
            return bad("row offsets");
        }
    }
    if m.scaled_coeffs.len() != m.scaled_cols.len()
        || m.scaled_coeffs.iter().any(|&k| k as usize >= coeffs)
    {
        return bad("coefficient indices");
    }
    let in_range = |&c: &u32| {
        if c & INPUT_COLUMN != 0 {
            u64::from(c & !INPUT_COLUMN) < inputs
        } else {
            u64::from(c) < aux
        }
    };
    if !m.unit_cols.iter().chain(&m.scaled_cols).all(in_range) {
        return bad("columns");
    }
    Ok(())
}
