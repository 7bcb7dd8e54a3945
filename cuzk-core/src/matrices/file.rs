//! The matrices on disk, next to the parameters, so that a restarted daemon skips the
//! recording run. One file per circuit shape:
//!
//! ```text
//! "CUZKMTX1" | key (u32 length, UTF-8) | inputs, aux, rows (u64)
//! | coefficients (u64 count, 32-byte canonical little-endian each)
//! | A, B, C: unit_start, unit_cols, scaled_start, scaled_cols, scaled_coeffs (u64 count, u32 LE each)
//! | SHA-256 of everything before
//! ```
//!
//! The trailing digest is `Matrices::digest`; a file whose digest, key or structure does not
//! check out is refused (and recorded anew by the cache).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

use blstrs::Scalar;
use ff::PrimeField;
use sha2::{Digest, Sha256};

use super::{Matrices, Matrix, INPUT_COLUMN};

const MAGIC: &[u8; 8] = b"CUZKMTX1";

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

/// Writes through a SHA-256, so the digest is the bytes exactly as written.
struct Hashing<W> {
    inner: W,
    hash: Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
}

fn write_body(m: &Matrices, w: &mut impl Write) -> io::Result<()> {
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
    for mat in [&m.a, &m.b, &m.c] {
        for v in arrays(mat) {
            w.write_all(&(v.len() as u64).to_le_bytes())?;
            write_u32s(v, w)?;
        }
    }
    Ok(())
}

/// `v` as little-endian bytes. On a little-endian machine that is its memory as it is: no
/// conversion, which for the 7.7 GB of a 2^27 PoRep-shaped shape was as slow as the digest.
fn write_u32s(v: &[u32], w: &mut impl Write) -> io::Result<()> {
    for chunk in v.chunks(1 << 18) {
        if cfg!(target_endian = "little") {
            // SAFETY: u32 has no padding and every byte pattern is a valid u8; the slice
            // covers exactly the chunk's memory.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    chunk.as_ptr().cast::<u8>(),
                    std::mem::size_of_val(chunk),
                )
            };
            w.write_all(bytes)?;
        } else {
            let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
            w.write_all(&bytes)?;
        }
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

/// The digest of the matrices as they would be written.
pub(super) fn digest(m: &Matrices) -> [u8; 32] {
    let mut h = Hashing {
        inner: io::sink(),
        hash: Sha256::new(),
    };
    write_body(m, &mut h).expect("writing to a sink cannot fail");
    h.hash.finalize().into()
}

/// Write `m` to `path` (through a temporary file renamed into place, so a reader never
/// sees half a file).
pub fn write_matrices(m: &Matrices, path: &Path) -> Result<(), FileError> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let result = (|| -> Result<(), FileError> {
        let mut w = Hashing {
            inner: BufWriter::new(File::create(&tmp)?),
            hash: Sha256::new(),
        };
        write_body(m, &mut w)?;
        let digest: [u8; 32] = w.hash.clone().finalize().into();
        w.inner.write_all(&digest)?;
        w.inner
            .into_inner()
            .map_err(|e| e.into_error())?
            .sync_all()?;
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
    let mut r = Hashing {
        inner: BufReader::new(File::open(path)?),
        hash: Sha256::new(),
    };
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
    let expect: [u8; 32] = r.hash.clone().finalize().into();
    let mut stored = [0u8; 32];
    r.inner.read_exact(&mut stored)?;
    if stored != expect {
        return Err(FileError::Corrupt("digest mismatch".into()));
    }
    let [a, b, c]: [Matrix; 3] = mats.try_into().expect("three matrices");
    let m = Matrices::new(
        key.to_string(),
        inputs as usize,
        aux as usize,
        [a, b, c],
        coeffs,
    );
    debug_assert_eq!(m.digest, stored);
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
