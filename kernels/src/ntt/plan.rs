//! How a transform of 2^log_n splits into radix passes (bits per pass, block shapes).

const LOG_BLOCK: u32 = 10; // NTT_LOG_BLOCK
pub(super) const MAX_LOG_RADIX: u32 = 10; // NTT_MAX_LOG_RADIX
/// Strided passes take at most 2^9 rows so that each block still reads runs of at least
/// two adjacent elements (64 bytes).
const MAX_STRIDED_RADIX: u32 = 9;

/// Points per thread of the register passes: 2^REG_LOG_RADIX (NTT_REG_LOG_RADIX in ntt.cu).
pub(super) const REG_LOG_RADIX: u32 = 2;
/// Largest N = 2^log for which the direct four-step table is built (8 MiB per direction).
const MAX_DIRECT_LOG: u32 = 18;

/// The register passes of a DIF transform of 2^log_n (log_n >= REG_LOG_RADIX), top bits
/// first, as (lo, m, c): the last covers min(log_n, 10) bits, the others at most 9 and at
/// least REG_LOG_RADIX each, balanced (2^24: 7 + 7 + 10, 2^26: 8 + 8 + 10).
pub(super) fn plan_regs(log_n: u32) -> Vec<(u32, u32, u32)> {
    debug_assert!(log_n >= REG_LOG_RADIX);
    let passes = if log_n <= MAX_LOG_RADIX {
        1
    } else {
        1 + (log_n - MAX_LOG_RADIX).div_ceil(MAX_STRIDED_RADIX)
    };
    let last = MAX_LOG_RADIX.min(log_n - REG_LOG_RADIX * (passes - 1));
    let rest = log_n - last;
    let k = passes - 1;
    let mut out = Vec::new();
    let mut lo = log_n;
    for i in 0..k {
        let m = rest / k + u32::from(i < rest % k);
        lo -= m;
        out.push((lo, m, (LOG_BLOCK - m).min(lo)));
    }
    out.push((0, last, 0));
    out
}

/// The N of the boundary that gets a direct twiddle table, if any: after the second of
/// three or more passes, N = 2^(log_n - m_first).
pub(super) fn direct_log(log_n: u32) -> Option<u32> {
    if log_n < REG_LOG_RADIX {
        return None;
    }
    let p = plan_regs(log_n);
    let log = log_n - p[0].1;
    (p.len() >= 3 && log <= MAX_DIRECT_LOG).then_some(log)
}

/// The radix-2 passes (domains below 2^REG_LOG_RADIX), as plan_regs.
pub(super) fn plan(log_n: u32) -> Vec<(u32, u32, u32)> {
    if log_n == 0 {
        return Vec::new();
    }
    let last = log_n.min(MAX_LOG_RADIX);
    let rest = log_n - last;
    let mut passes = Vec::new();
    if rest > 0 {
        let k = rest.div_ceil(MAX_STRIDED_RADIX);
        let mut lo = log_n;
        for i in 0..k {
            // Balanced sizes: earlier passes take the remainder.
            let m = rest / k + u32::from(i < rest % k);
            lo -= m;
            passes.push((lo, m, (LOG_BLOCK - m).min(lo)));
        }
    }
    passes.push((0, last, 0));
    passes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ntt::MAX_LOG_N;

    #[test]
    fn plans_cover_every_bit_once() {
        for log_n in 1..=MAX_LOG_N {
            let p = plan(log_n);
            let mut next = log_n;
            for &(lo, m, c) in &p {
                assert_eq!(lo + m, next, "log_n={log_n} plan={p:?}");
                assert!((1..=MAX_LOG_RADIX).contains(&m));
                assert!(m + c <= LOG_BLOCK && c <= lo);
                next = lo;
            }
            assert_eq!(next, 0);
        }
    }

    #[test]
    fn register_plans_cover_every_bit_once() {
        for log_n in REG_LOG_RADIX..=MAX_LOG_N {
            let p = plan_regs(log_n);
            let mut next = log_n;
            for (i, &(lo, m, c)) in p.iter().enumerate() {
                assert_eq!(lo + m, next, "log_n={log_n} plan={p:?}");
                let max = if i + 1 == p.len() {
                    MAX_LOG_RADIX
                } else {
                    MAX_STRIDED_RADIX
                };
                assert!(
                    (REG_LOG_RADIX..=max).contains(&m),
                    "log_n={log_n} plan={p:?}"
                );
                assert!(m + c <= LOG_BLOCK && c <= lo);
                next = lo;
            }
            assert_eq!(next, 0);
        }
        assert_eq!(plan_regs(24), vec![(17, 7, 3), (10, 7, 3), (0, 10, 0)]);
        assert_eq!(plan_regs(26), vec![(18, 8, 2), (10, 8, 2), (0, 10, 0)]);
        assert_eq!(direct_log(24), Some(17));
        assert_eq!(direct_log(26), Some(18));
        assert_eq!(direct_log(19), None);
    }
}
