// Fp2 = Fp[u]/(u^2 + 1), the field of G2's coordinates, laid out as blst_fp2: c0 then c1,
// each in blst's Montgomery form, so blstrs G2 points upload without conversion.
#pragma once
#include "fp.cuh"

struct fp2_t {
    fp_t c0, c1;

    CUZK_HD static fp2_t zero() { return {fp_t::zero(), fp_t::zero()}; }
    CUZK_HD static fp2_t one() { return {fp_t::one(), fp_t::zero()}; }

    CUZK_HD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    CUZK_HD bool operator==(const fp2_t& b) const { return c0 == b.c0 && c1 == b.c1; }

    CUZK_HD friend fp2_t operator+(const fp2_t& a, const fp2_t& b) {
        return {a.c0 + b.c0, a.c1 + b.c1};
    }
    CUZK_HD friend fp2_t operator-(const fp2_t& a, const fp2_t& b) {
        return {a.c0 - b.c0, a.c1 - b.c1};
    }
    CUZK_HD fp2_t neg() const { return {c0.neg(), c1.neg()}; }
    CUZK_HD fp2_t dbl() const { return {c0.dbl(), c1.dbl()}; }

    // Karatsuba: three base-field multiplications instead of four. U as in fp_t::mul;
    // under FIOS_CALL_LAZY the three products stay wide and only the two results are
    // reduced (mul_lazy_call).
    template <int U>
    CUZK_HD static fp2_t mul(const fp2_t& a, const fp2_t& b) {
        if constexpr (U == fp_t::FIOS_CALL_LAZY) {
            return mul_lazy_call(a, b);
        } else {
            fp_t t0 = fp_t::mul<U>(a.c0, b.c0);
            fp_t t1 = fp_t::mul<U>(a.c1, b.c1);
            fp_t t2 = fp_t::mul<U>(a.c0 + a.c1, b.c0 + b.c1);
            return {t0 - t1, t2 - t0 - t1};
        }
    }

    // (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u: two multiplications. (A lazy
    // reduction gains nothing here: each product is a result of its own.)
    template <int U>
    CUZK_HD static fp2_t square(const fp2_t& a) {
        fp_t t = fp_t::mul<U>(a.c0, a.c1);
        return {fp_t::mul<U>(a.c0 + a.c1, a.c0 - a.c1), t.dbl()};
    }

    // Lazy reduction: Fp2 products with fewer Montgomery reductions. A reduction is half
    // of an FIOS product's 288 wide multiplies, and the Karatsuba terms can be combined
    // before it: c0 = a0 b0 - a1 b1 and c1 = (a0 + a1)(b0 + b1) - a0 b0 - a1 b1 are each one
    // reduction of a wide value, so a product is 3 x 144 + 2 x 144 multiplies instead of
    // 3 x 288. The wide values must be non-negative and below p R, redc's range: every
    // element is below p, so each wide product is below p^2, and a multiple of p^2
    // offsets a difference (fp_t::P2). The sums a0 + a1 are reduced mod p (operator+), so
    // (a0 + a1)(b0 + b1) - a0 b0 - a1 b1 is a0 b1 + a1 b0 only mod p: as integers it may be
    // negative, down to -2 p^2, hence its offset.
    template <int U>
    static constexpr bool LAZY_Y3 = U == fp_t::FIOS_CALL_LAZY;

    CUZK_HD_NOINLINE static fp2_t mul_lazy_call(fp2_t a, fp2_t b) {
        const wide_t t0 = fp_t::mul_wide_school(a.c0, b.c0);
        const wide_t t1 = fp_t::mul_wide_school(a.c1, b.c1);
        wide_t w1 = p2_times(2);  // 2 p^2 + (a0 + a1)(b0 + b1) - a0 b0 - a1 b1, in (0, 3 p^2)
        wide_add(w1, fp_t::mul_wide_school(a.c0 + a.c1, b.c0 + b.c1));
        wide_sub(w1, t0);
        wide_sub(w1, t1);
        wide_t w0 = p2_times(1);  // p^2 - a1 b1 + a0 b0, in (0, 2 p^2)
        wide_sub(w0, t1);
        wide_add(w0, t0);
        return {fp_t::redc(w0), fp_t::redc(w1)};
    }

    // a b - c d with two reductions instead of the four of two lazy products (the XYZZ
    // additions' Y3, as fp_t::mul_sub_mul). c0's wide value is 2 p^2 + a0 b0 - a1 b1 - c0 d0
    // + c1 d1, in (0, 4 p^2); c1's is 3 p^2 - a0 b0 - a1 b1 + (a0 + a1)(b0 + b1) + c0 d0 +
    // c1 d1 - (c0 + c1)(d0 + d1), in (0, 6 p^2) (the sums are reduced, see above). Both are
    // below p R (6 p < 2^384: p < 0.82 2^381), and the order of the terms keeps every
    // partial value non-negative.
    template <int U>
    CUZK_HD static fp2_t mul_sub_mul(const fp2_t& a, const fp2_t& b, const fp2_t& c,
                                     const fp2_t& d) {
        static_assert(LAZY_Y3<U>, "Fp2's a b - c d is the lazy one only");
        return mul_sub_mul_call(a, b, c, d);
    }
    CUZK_HD_NOINLINE static fp2_t mul_sub_mul_call(fp2_t a, fp2_t b, fp2_t c, fp2_t d) {
        wide_t w0 = p2_times(2), w1 = p2_times(3), t;
        t = fp_t::mul_wide_school(a.c0, b.c0);
        wide_add(w0, t);
        wide_sub(w1, t);
        t = fp_t::mul_wide_school(a.c1, b.c1);
        wide_sub(w0, t);  // w0 > p^2
        wide_sub(w1, t);  // w1 > p^2
        wide_add(w1, fp_t::mul_wide_school(a.c0 + a.c1, b.c0 + b.c1));
        t = fp_t::mul_wide_school(c.c0, d.c0);
        wide_sub(w0, t);  // w0 > 0
        wide_add(w1, t);
        t = fp_t::mul_wide_school(c.c1, d.c1);
        wide_add(w0, t);
        wide_add(w1, t);  // w1 in (p^2, 6 p^2)
        wide_sub(w1, fp_t::mul_wide_school(c.c0 + c.c1, d.c0 + d.c1));
        return {fp_t::redc(w0), fp_t::redc(w1)};
    }

    // k p^2 (k small), in plain arithmetic so that it folds to constants.
    CUZK_HD static wide_t p2_times(uint32_t k) {
        wide_t w;
        uint64_t c = 0;
#pragma unroll
        for (int i = 0; i < 24; i++) {
            const uint64_t t = (uint64_t)k * fp_t::P2(i) + c;
            w.v[i] = (uint32_t)t;
            c = t >> 32;
        }
        return w;
    }
    // w += t and w -= t on 24 limbs: the callers keep w below 2^768 and w >= t.
    CUZK_HD static void wide_add(wide_t& w, const wide_t& t) {
        w.v[0] = carry::add_cc(w.v[0], t.v[0]);
#pragma unroll
        for (int k = 1; k < 23; k++) w.v[k] = carry::addc_cc(w.v[k], t.v[k]);
        w.v[23] = carry::addc(w.v[23], t.v[23]);
    }
    CUZK_HD static void wide_sub(wide_t& w, const wide_t& t) {
        w.v[0] = carry::sub_cc(w.v[0], t.v[0]);
#pragma unroll
        for (int k = 1; k < 23; k++) w.v[k] = carry::subc_cc(w.v[k], t.v[k]);
        w.v[23] = carry::subc(w.v[23], t.v[23]);
    }

    // 1 / (c0 + c1 u) = (c0 - c1 u) / (c0^2 + c1^2): one inversion in Fp.
    CUZK_HD fp2_t inv() const {
        const fp_t t = (c0.sqr() + c1.sqr()).inv();
        return {c0 * t, (c1 * t).neg()};
    }

    CUZK_HD friend fp2_t operator*(const fp2_t& a, const fp2_t& b) { return mul<FAST_U>(a, b); }
    CUZK_HD fp2_t sqr() const { return square<FAST_U>(*this); }
    // G2's products. FIOS_CALL: Fp's even/odd FIOS product, unrolled, in one out-of-line
    // copy (a G2 mixed addition is ~30 Fp products, too much code to inline, and the G2
    // bucket kernel sits at ~252 registers either way; measured on the H200, msm_harness,
    // G2 2^22 bucket pass, bit-identical: CIOS rolled 147.0 ms, FIOS 2 / 4 rows per
    // iteration 103.8 / 101.2, FIOS unrolled out of line 94.8). FIOS_CALL_LAZY (the
    // default): the lazy product and a b - c d above, out of line; squares as FIOS_CALL.
    // -DCUZK_FP2_FAST_U=200 builds the previous FIOS_CALL (the A/B through the daemon).
#ifdef CUZK_FP2_FAST_U
    static constexpr int FAST_U = CUZK_FP2_FAST_U;
#else
    static constexpr int FAST_U = fp_t::FIOS_CALL_LAZY;
#endif
};
