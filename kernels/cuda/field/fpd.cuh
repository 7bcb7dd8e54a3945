// Fp (BLS12-381 base field) on the FP64 pipe: a Montgomery product built from exact 50 x 50-bit
// partial products, two DFMAs and one DADD each (the idea of Emmart, Zheng and Weems, ARITH
// 2018; this code is our own). The integer product (fp.cuh, mul_fios) is bound by the
// IMAD.WIDE pipe; the H200's FP64 pipe (2 warp-DFMA / SM / cycle) is a separate, idle one.
//
// Representation: 8 limbs of 50 bits held in doubles, value = sum v[i] * 2^(50 i), Montgomery
// form with R = 2^400 (element e is held as some V = e * 2^400 mod p, not necessarily
// reduced). 8 x 50 = 400 >= 381 + 19 bits of headroom, which the lazy bounds below use.
//
// Compiles for the host (plain C++17, std::fma) and the device (__fma_rn ...). Only
// round-to-nearest is used, and every operation whose result is used is exact or a rounding
// onto a fixed grid, so the host result is bit-identical to the device's and
// kernels/bench/fpd_host_check.cpp checks it without a GPU.
//
// ---- The exact partial product ------------------------------------------------------------
// For integers a, b held in doubles with |a b| < 2^101:
//   hi  = fma(a, b, C1),     C1 = 1.5 * 2^102. a b + C1 lies in (2^102, 2^103), a binade
//         whose ulp is 2^50, so hi = C1 + K 2^50 with K = round(a b / 2^50), |K| <= 2^51.
//         Inside one binade the bit pattern is linear in the value, so
//         K = bits(hi) - bits(C1) as a (wrapping) 64-bit integer.
//   t   = C12 - hi,          C12 = C1 + C2 = 3 * 2^101 + 3 * 2^51 (exactly representable).
//         The exact value is C2 - K 2^50 = (6 - K) 2^50 with |6 - K| < 2^52: representable,
//         so the subtraction is exact. (One DADD instead of two: sub = hi - C1, C2 - sub.)
//   lo  = fma(a, b, t),      C2 = 1.5 * 2^52. Exact value C2 + (a b - K 2^50), and
//         |a b - K 2^50| <= 2^49, so it lies in [2^52 + 2^50, 2^53 - 2^50], ulp 1: exact.
//         L = bits(lo) - bits(C2) = a b - K 2^50, signed, |L| <= 2^49.
// So a b = K 2^50 + L exactly; K goes to the next column, L to this one. The column sums are
// kept in uint64 as sums of raw bit patterns; the constants bits(C1), bits(C2) are subtracted
// once per column, folded into the column's initial value (the counts of terms per column
// are known at compile time), and the arithmetic wraps mod 2^64, so the interim overflow of
// the raw sums (bits(C1) ~ 0x4658...) does not matter: only the true sums must fit in int64.
#pragma once
#include <stdint.h>
#include <string.h>

#include <cmath>

#include "fp.cuh"

namespace fpd_detail {

CUZK_HD double fma_rn(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
    return __fma_rn(a, b, c);
#else
    return std::fma(a, b, c);
#endif
}
// Explicit round-to-nearest subtract/add: keeps nvcc from contracting or reassociating.
CUZK_HD double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}
CUZK_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}
CUZK_HD uint64_t bits(double x) {
#if defined(__CUDA_ARCH__)
    return (uint64_t)__double_as_longlong(x);
#else
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
#endif
}
CUZK_HD double from_bits(uint64_t u) {
#if defined(__CUDA_ARCH__)
    return __longlong_as_double((long long)u);
#else
    double x;
    memcpy(&x, &u, 8);
    return x;
#endif
}

constexpr double C1 = 0x1.8p102;               // 1.5 * 2^102
constexpr double C2 = 0x1.8p52;                // 1.5 * 2^52
constexpr double C12 = 0x1.8p102 + 0x1.8p52;   // exact: 0x4658000000000006
constexpr double TWO52 = 0x1p52;
constexpr uint64_t B1 = 0x4658000000000000ull;  // bits(C1)
constexpr uint64_t B2 = 0x4338000000000000ull;  // bits(C2)
constexpr uint64_t B52 = 0x4330000000000000ull; // bits(2^52)
constexpr uint64_t MASK = (1ull << 50) - 1;

// Exact product of integers a, b (|a b| < 2^101): lo_col += L + bits(C2), hi_col += K + bits(C1).
CUZK_HD void pp(double a, double b, uint64_t& lo_col, uint64_t& hi_col) {
    const double hi = fma_rn(a, b, C1);
    const double lo = fma_rn(a, b, sub_rn(C12, hi));
    lo_col += bits(lo);
    hi_col += bits(hi);
}

// An integer 0 <= x < 2^52 as a double, exactly: put it in the mantissa of 2^52, subtract 2^52.
CUZK_HD double u52_to_double(uint64_t x) { return sub_rn(from_bits(x | B52), TWO52); }
// A double holding an integer |x| <= 2^51 as int64, exactly (x + C2 lies in [2^52, 2^53]).
CUZK_HD int64_t double_to_i64(double x) { return (int64_t)(bits(add_rn(x, C2)) - B2); }

// dst[k] = bits [DW k - shift, DW (k + 1) - shift) of sum src[m] 2^(SW m), src[m] < 2^SW.
// Re-slicing between 32-bit words and 50-bit limbs; all shifts are compile-time constants.
template <int SW, int NS, int DW, int ND>
CUZK_HD void regroup(const uint64_t* src, uint64_t* dst, int shift) {
#pragma unroll
    for (int k = 0; k < ND; k++) {
        uint64_t acc = 0;
#pragma unroll
        for (int m = 0; m < NS; m++) {
            const int s = SW * m + shift - DW * k;  // where src[m]'s bit 0 lands in dst[k]
            if (s >= DW || s <= -SW) continue;
            acc |= s >= 0 ? src[m] << s : src[m] >> -s;
        }
        dst[k] = acc & ((DW == 64 ? 0 : (1ull << DW)) - 1);
    }
}

}  // namespace fpd_detail

struct fpd_t {
    static constexpr int N = 8;
    static constexpr int W = 50;  // bits per limb
    double v[N];

    // p in 50-bit limbs, and p' = -p^-1 mod 2^50 (host check verifies both against fp_t::P).
    CUZK_HD static double P(int i) {
        const double p[N] = {0x2ffffffffaaab, 0x3ac54ffffee7f, 0x30f6241eabfff, 0x2fd9cc34a83da,
                             0x774b84f38512,  0x1ed90d2eb35d9, 0x397fe69a4b1ba, 0x680447a8};
        return p[i];
    }
    static constexpr uint64_t PINV = 0x3fffcfffcfffdull;
    // 4p, limbs normalized: the offset that keeps a - b non-negative.
    CUZK_HD static double P4(int i) {
        const double p[N] = {0x3fffffffeaaac, 0x2b153ffffb9fe, 0x3d8907aaffff,  0x3f6730d2a0f6b,
                             0x1dd2e13ce144a, 0x3b6434bacd764, 0x25ff9a692c6e9, 0x1a0111ea3};
        return p[i];
    }
    // Plain integers (not Montgomery): R mod p = 2^400 mod p, and 2^384 mod p.
    CUZK_HD static fpd_t r400() {
        return make({0x10003480e6299, 0x9a67ac4a158d, 0x297c988670deb, 0x25c260fa13bd9,
                     0x3e8a053a4e6fe, 0x34c8fb3c9c78, 0x12866eb6385c2, 0x55b691fc});
    }
    CUZK_HD static fpd_t r384() {
        return make({0x100000002fffd, 0x2f10300009d82, 0x758baebf4000, 0x1157d22615d4f,
                     0x3ce5853705257, 0x2a5e895bb1b5d, 0x3a80e4935c071, 0x57d97b0f});
    }
    CUZK_HD static fpd_t make(const double (&x)[N]) {
        fpd_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = x[i];
        return r;
    }
    CUZK_HD static fpd_t zero() {
        fpd_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    CUZK_HD static fpd_t one() { return r400(); }  // R mod p: one in Montgomery form

    // Column k's initial value: minus the bit-pattern offsets of every term it will receive.
    // Terms: the L of each (i, j) with i + j = k and the K of each with i + j = k - 1, once
    // from a * b and once from q * p.
    CUZK_HD static constexpr uint64_t col_init(int k) {
        const int nlo = k <= 2 * N - 2 ? (k < N ? k + 1 : 2 * N - 1 - k) : 0;
        const int nhi = k >= 1 ? (k - 1 < N ? k : 2 * N - k) : 0;
        return 0ull - 2ull * (uint64_t)nlo * fpd_detail::B2 - 2ull * (uint64_t)nhi * fpd_detail::B1;
    }

    // ---- Montgomery product: a b / 2^400 mod p --------------------------------------------
    // Contract: a's limbs |a_i| < 2^51 (lazy sums and differences allowed), b normalized
    // (0 <= b_j < 2^50), both values in [0, 2^9 p). Output normalized, value < 2p.
    // Proofs:
    //  * Every partial product is exact: |a_i b_j| < 2^51 2^50 = 2^101; q_i < 2^50 and
    //    p_j < 2^50 give |q_i p_j| < 2^100.
    //  * Column sums fit in int64: a column gets at most 8 L's and 8 K's from each of a b and
    //    q p, |L| <= 2^49, |K| <= 2^51 + 1, plus a carry: |col| < 2^53 + 2^54.1 + 2^53 + 2^53
    //    + 2^6 < 2^56.
    //  * The result: T = a b + Q p with Q = sum q_i 2^(50 i) < 2^400 = R; each q_i makes
    //    column i zero mod 2^50, so T = R * (columns 8..15) exactly and the result is
    //    T / R < a b / R + p < 2^18 p^2 / 2^400 + p < p 2^18 2^381 / 2^400 + p < 1.5 p.
    //    T >= 0 (a, b >= 0), so the normalization ends with no carry out of limb 7.
    //  Looser operands are fine wherever a b / R + p < 2^400 still holds; the lazy
    //  conversion below uses one operand < 2^16 p against one < p.
    CUZK_HD static fpd_t mul(const fpd_t& a, const fpd_t& b) {
        using namespace fpd_detail;
        uint64_t c[2 * N];
#pragma unroll
        for (int k = 0; k < 2 * N; k++) c[k] = col_init(k);
        // Product scanning: a b's column k, then (k < N) reduction step k, which needs exactly
        // column k's L's and column k-1's K's of a b.
#pragma unroll
        for (int k = 0; k < 2 * N - 1; k++) {
#pragma unroll
            for (int i = 0; i < N; i++) {
                const int j = k - i;
                if (j >= 0 && j < N) pp(a.v[i], b.v[j], c[k], c[k + 1]);
            }
            if (k < N) {
                // q_k = col_k p' mod 2^50 (wrapping mod 2^64 keeps it right mod 2^50); on the
                // integer pipe, which the product otherwise leaves idle.
                const uint64_t q = (c[k] * PINV) & MASK;
                const double qd = u52_to_double(q);
#pragma unroll
                for (int j = 0; j < N; j++) pp(qd, P(j), c[k + j], c[k + j + 1]);
                // Column k is now 0 mod 2^50: carry its quotient (arithmetic shift, signed).
                c[k + 1] += (uint64_t)((int64_t)c[k] >> W);
            }
        }
        return from_columns(c + N);
    }

    // Signed int64 columns worth sum c[k] 2^(50 k), value in [0, 2^400): normalized limbs.
    CUZK_HD static fpd_t from_columns(const uint64_t* c) {
        using namespace fpd_detail;
        fpd_t r;
        int64_t carry = 0;
#pragma unroll
        for (int k = 0; k < N; k++) {
            const int64_t t = (int64_t)c[k] + carry;
            r.v[k] = u52_to_double((uint64_t)t & MASK);
            carry = t >> W;
        }
        return r;
    }

    // ---- Lazy add / sub, normalize --------------------------------------------------------
    // add: limbwise, exact. With normalized inputs the limbs are < 2^51: a valid FIRST
    // operand of mul if the value a + b stays < 2^9 p.
    CUZK_HD friend fpd_t operator+(const fpd_t& a, const fpd_t& b) {
        fpd_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = fpd_detail::add_rn(a.v[i], b.v[i]);
        return r;
    }
    // sub: a - b + 4p limbwise, exact; non-negative when b < 4p. With normalized inputs the
    // limbs lie in (-2^50, 2^51): a valid first operand if a + 4p < 2^9 p.
    CUZK_HD friend fpd_t operator-(const fpd_t& a, const fpd_t& b) {
        fpd_t r;
#pragma unroll
        for (int i = 0; i < N; i++)
            r.v[i] = fpd_detail::sub_rn(fpd_detail::add_rn(a.v[i], P4(i)), b.v[i]);
        return r;
    }
    // Limbs |x_i| <= 2^51, value in [0, 2^400): the same value with limbs in [0, 2^50).
    CUZK_HD fpd_t normalize() const {
        uint64_t c[N];
#pragma unroll
        for (int i = 0; i < N; i++) c[i] = (uint64_t)fpd_detail::double_to_i64(v[i]);
        return from_columns(c);
    }
    // Normalized, value < 2p: is it 0 mod p (0 or p)? Exact compares of integer doubles.
    CUZK_HD bool is_zero_reduced() const {
        bool z = true, e = true;
#pragma unroll
        for (int i = 0; i < N; i++) {
            z = z && v[i] == 0;
            e = e && v[i] == P(i);
        }
        return z || e;
    }
    // Any value within mul's first-operand contract: one product by R mod p (x R / R = x,
    // result < 2p), then the compare. A product's cost, so for tests and rare branches.
    CUZK_HD bool is_zero() const { return mul(*this, r400()).is_zero_reduced(); }

    // ---- Conversions with fp_t (12 x 32 bits, R = 2^384, canonical) -----------------------
    // The bits of X 2^16 re-sliced into 50-bit limbs: X 2^384-form -> X 2^16 = x 2^400 mod p
    // as a representative < 2^16 p (X < p < 2^381, so X 2^16 < 2^397 fits the 8 limbs).
    // Normalized limbs, but outside mul's value contract: fine as ONE operand of a product
    // whose other operand is < 2p, since then a b / R + p < 2^17 p^2 / 2^400 + p < 1.25 p.
    CUZK_HD static fpd_t from_fp_lazy(const fp_t& x) {
        uint64_t w[fp_t::N], l[N];
#pragma unroll
        for (int i = 0; i < fp_t::N; i++) w[i] = x.v[i];
        fpd_detail::regroup<32, fp_t::N, W, N>(w, l, 16);
        fpd_t r;
#pragma unroll
        for (int k = 0; k < N; k++) r.v[k] = fpd_detail::u52_to_double(l[k]);
        return r;
    }
    // Reduced: (X 2^16) (R mod p) / R, normalized, < 2p (bound above).
    CUZK_HD static fpd_t from_fp(const fp_t& x) { return mul(from_fp_lazy(x), r400()); }

    // Back to canonical fp_t: x' (2^384 mod p) / 2^400 = e 2^384 mod p, < 2p (x within mul's
    // first-operand contract, 2^384 mod p < p), re-sliced to 12 words, one conditional
    // subtraction. For tests and the bench's correctness pass.
    CUZK_HD fp_t to_fp() const {
        const fpd_t y = mul(*this, r384());
        uint64_t l[N], w[fp_t::N];
#pragma unroll
        for (int k = 0; k < N; k++) l[k] = (uint64_t)fpd_detail::double_to_i64(y.v[k]);
        fpd_detail::regroup<W, N, 32, fp_t::N>(l, w, 0);  // y < 2p < 2^382: no bits lost
        fp_t r;
#pragma unroll
        for (int i = 0; i < fp_t::N; i++) r.v[i] = (uint32_t)w[i];
        return fp_t::reduce_once(r);
    }
};
