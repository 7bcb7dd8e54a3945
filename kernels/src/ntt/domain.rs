//! Per-domain device tables: twiddles, coset powers and 1/Z, built once on the host per
//! domain size and kept.

use std::sync::Arc;

use blstrs::Scalar;
use ff::{Field, PrimeField};

use super::plan::direct_log;
use super::{to_limbs, Limbs, NttState, MAX_LOG_N};
use crate::device::GpuDevice;
use crate::error::{GpuError, Result};
use crate::memory::DeviceScalars;

/// x^e = lo[e mod 2^bits] * hi[e >> bits], both on the device (cuda/ntt/twiddles.cuh).
pub(super) struct PowTable {
    pub(super) lo: DeviceScalars,
    pub(super) hi: DeviceScalars,
    pub(super) bits: u32,
}

impl PowTable {
    /// The kernels' (lo, hi, bits) arguments for an optional table; all zero for none.
    pub(super) fn args(t: Option<&PowTable>) -> (u64, u64, u32) {
        t.map_or((0, 0, 0), |t| (t.lo.ptr, t.hi.ptr, t.bits))
    }
}

/// Everything a domain of 2^log_n needs on the device, built once and kept.
pub(super) struct Domain {
    pub(super) omega: PowTable,
    pub(super) omega_inv: PowTable,
    /// g^i (coset NTT of natural-order coefficients)
    pub(super) coset: PowTable,
    /// g^i / n (coset NTT straight after an unscaled inverse)
    pub(super) coset_over_n: PowTable,
    /// g^-i / n (inverse coset NTT)
    pub(super) icoset_over_n: PowTable,
    /// 1/n (inverse NTT)
    pub(super) over_n: PowTable,
    /// 1 / (n Z(g)), Z(g) = g^n - 1 (C's share of h)
    pub(super) z_inv_over_n: PowTable,
    /// g^-i / (n Z(g)) (the inverse coset transform of a b, into h)
    pub(super) icoset_z_inv_over_n: PowTable,
    /// w_N^e and w_N^-e for every e < N, for the one four-step boundary whose N is small
    /// enough (the second of three passes): one load instead of a product of two.
    pub(super) direct: Option<DirectTwiddles>,
}

pub(super) struct DirectTwiddles {
    pub(super) log: u32,
    pub(super) fwd: DeviceScalars,
    pub(super) inv: DeviceScalars,
}

/// The root of unity of order 2^log_n that bellperson uses for this domain.
pub(super) fn omega(log_n: u32) -> Scalar {
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        w = w.square();
    }
    w
}

impl NttState {
    pub(super) fn domain(&mut self, dev: &GpuDevice, log_n: u32) -> Result<Arc<Domain>> {
        if log_n > MAX_LOG_N {
            return Err(GpuError::DomainTooLarge(log_n));
        }
        if let Some(d) = self.domains.get(&log_n) {
            return Ok(d.clone());
        }
        let d = Arc::new(self.build_domain(dev, log_n)?);
        self.domains.insert(log_n, d.clone());
        Ok(d)
    }

    fn build_domain(&mut self, dev: &GpuDevice, log_n: u32) -> Result<Domain> {
        // The caller holds the state lock; uploads go through the unlocked helper.
        let w = omega(log_n);
        let w_inv = w.invert().unwrap();
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = g.invert().unwrap();
        let n = 1u64 << log_n;
        let n_inv = Scalar::from(n).invert().unwrap();
        let z_inv = (g.pow_vartime([n]) - Scalar::ONE).invert().unwrap();
        let direct = match direct_log(log_n) {
            Some(log) => {
                let wn = omega(log);
                let powers = |base: Scalar| -> Vec<Limbs> {
                    let mut x = Scalar::ONE;
                    (0..1usize << log)
                        .map(|_| {
                            let l = to_limbs(&x);
                            x *= base;
                            l
                        })
                        .collect()
                };
                Some(DirectTwiddles {
                    log,
                    fwd: self.upload_unlocked(dev, &powers(wn))?,
                    inv: self.upload_unlocked(dev, &powers(wn.invert().unwrap()))?,
                })
            }
            None => None,
        };
        let mut table = |base: Scalar, factor: Scalar| -> Result<PowTable> {
            let bits = log_n.div_ceil(2);
            let (lo, hi) = pow_table_host(base, factor, log_n);
            Ok(PowTable {
                lo: self.upload_unlocked(dev, &lo)?,
                hi: self.upload_unlocked(dev, &hi)?,
                bits,
            })
        };
        Ok(Domain {
            direct,
            omega: table(w, Scalar::ONE)?,
            omega_inv: table(w_inv, Scalar::ONE)?,
            coset: table(g, Scalar::ONE)?,
            coset_over_n: table(g, n_inv)?,
            icoset_over_n: table(g_inv, n_inv)?,
            over_n: table(Scalar::ONE, n_inv)?,
            z_inv_over_n: table(Scalar::ONE, n_inv * z_inv)?,
            icoset_z_inv_over_n: table(g_inv, n_inv * z_inv)?,
        })
    }
}

fn pow_table_host(base: Scalar, factor: Scalar, log_n: u32) -> (Vec<Limbs>, Vec<Limbs>) {
    let bits = log_n.div_ceil(2);
    let lo_len = 1usize << bits;
    let hi_len = 1usize << (log_n - bits);
    let mut lo = Vec::with_capacity(lo_len);
    let mut x = factor;
    for _ in 0..lo_len {
        lo.push(to_limbs(&x));
        x *= base;
    }
    let step = base.pow_vartime([lo_len as u64]);
    let mut hi = Vec::with_capacity(hi_len);
    let mut y = Scalar::ONE;
    for _ in 0..hi_len {
        hi.push(to_limbs(&y));
        y *= step;
    }
    (lo, hi)
}
