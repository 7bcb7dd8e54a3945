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

    // Karatsuba: three base-field multiplications instead of four. U as in fp_t::mul.
    template <int U>
    CUZK_HD static fp2_t mul(const fp2_t& a, const fp2_t& b) {
        fp_t t0 = fp_t::mul<U>(a.c0, b.c0);
        fp_t t1 = fp_t::mul<U>(a.c1, b.c1);
        fp_t t2 = fp_t::mul<U>(a.c0 + a.c1, b.c0 + b.c1);
        return {t0 - t1, t2 - t0 - t1};
    }

    // (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u: two multiplications.
    template <int U>
    CUZK_HD static fp2_t square(const fp2_t& a) {
        fp_t t = fp_t::mul<U>(a.c0, a.c1);
        return {fp_t::mul<U>(a.c0 + a.c1, a.c0 - a.c1), t.dbl()};
    }

    // 1 / (c0 + c1 u) = (c0 - c1 u) / (c0^2 + c1^2): one inversion in Fp.
    CUZK_HD fp2_t inv() const {
        const fp_t t = (c0.sqr() + c1.sqr()).inv();
        return {c0 * t, (c1 * t).neg()};
    }

    CUZK_HD friend fp2_t operator*(const fp2_t& a, const fp2_t& b) { return mul<FAST_U>(a, b); }
    CUZK_HD fp2_t sqr() const { return square<FAST_U>(*this); }
    // Fp's even/odd FIOS product, unrolled, in one out-of-line copy: a G2 mixed addition
    // is ~30 Fp products, too much code to inline, and the G2 bucket kernel sits at ~252
    // registers either way. Measured on the H200 (msm_harness, G2 2^22 bucket pass,
    // bit-identical): CIOS rolled 147.0 ms, FIOS 2 / 4 rows per iteration 103.8 / 101.2,
    // FIOS unrolled out of line 94.8.
    static constexpr int FAST_U = fp_t::FIOS_CALL;
};
