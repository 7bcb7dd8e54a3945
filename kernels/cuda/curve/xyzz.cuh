// Extended Jacobian "XYZZ" coordinates: (X, Y, ZZ, ZZZ) stands for the affine point
// (X/ZZ, Y/ZZZ) with ZZ^3 = ZZZ^2. Adding an affine point costs 8M + 2S and needs no
// inversion, which is why buckets accumulate in this form (formulas: Bernstein-Lange EFD,
// "madd-2008-s", "add-2008-s", "dbl-2008-s-1", "mdbl-2008-s-1", for y^2 = x^3 + b).
// The point at infinity is ZZ = ZZZ = 0; all-zero memory is therefore infinity.
//
// Only mixed addition (the bucket loop) is inlined. Doubling is a rare branch there, and
// full addition runs about a thousand times less often than mixed addition, so both are
// out-of-line functions: each inlined copy of a formula is thousands of instructions, and
// inlining them everywhere made the module take many minutes to compile.
#pragma once
#include <type_traits>

#include "affine.cuh"

// Whether the additions under product selector U form Y3 = R (Q - X3) - S1 PPP with
// one reduction (F::mul_sub_mul<U>): where F says so (fp_t::LAZY_Y3); never where F has
// no such product (fp2_t: there U passes through to its fp_t products unchanged).
template <class F, int U, class = void>
struct lazy_y3 : std::false_type {};
template <class F, int U>
struct lazy_y3<F, U, std::void_t<decltype(F::template LAZY_Y3<U>)>>
    : std::bool_constant<F::template LAZY_Y3<U>> {};

template <class F>
struct xyzz_t {
    F X, Y, ZZ, ZZZ;

    CUZK_HD static xyzz_t inf() { return {F::zero(), F::zero(), F::zero(), F::zero()}; }
    CUZK_HD bool is_inf() const { return ZZ.is_zero(); }

    CUZK_HD static xyzz_t from_affine(const affine_t<F>& p) {
        if (p.is_inf()) return inf();
        return {p.x, p.y, F::one(), F::one()};
    }

    // 2 * (x, y) for an affine point that is not infinity.
    CUZK_HD_NOINLINE static xyzz_t dbl_affine(const F& x, const F& y) {
        F U = y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = x * V;
        F xx = x.sqr();
        F M = xx.dbl() + xx;
        F X3 = M.sqr() - S.dbl();
        F Y3 = M * (S - X3) - W * y;
        return {X3, Y3, V, W};
    }

    CUZK_HD_NOINLINE static xyzz_t dbl(const xyzz_t& p) {
        if (p.is_inf()) return p;
        const F& X = p.X;
        const F& Y = p.Y;
        F U = Y.dbl();
        F V = U.sqr();
        F W = U * V;
        F S = X * V;
        F xx = X.sqr();
        F M = xx.dbl() + xx;
        F X3 = M.sqr() - S.dbl();
        F Y3 = M * (S - X3) - W * Y;
        return {X3, Y3, V * p.ZZ, W * p.ZZZ};
    }

    // this += (x, neg ? -y : y). Exact in every case: either side infinity, equal points
    // (doubling), opposite points (infinity).
    template <int U = F::FAST_U>
    CUZK_HD void add_affine(const affine_t<F>& p, bool neg) {
        if (p.is_inf()) return;
        F y2 = neg ? p.y.neg() : p.y;
        if (is_inf()) {
            X = p.x;
            Y = y2;
            ZZ = F::one();
            ZZZ = F::one();
            return;
        }
        F U2 = F::template mul<U>(p.x, ZZ);
        F S2 = F::template mul<U>(y2, ZZZ);
        F P = U2 - X;
        F R = S2 - Y;
        if (P.is_zero()) {
            if (R.is_zero())
                *this = dbl_affine(p.x, y2);
            else
                *this = inf();
            return;
        }
        F PP = F::template square<U>(P);
        F PPP = F::template mul<U>(P, PP);
        F Q = F::template mul<U>(X, PP);
        F X3 = F::template square<U>(R) - PPP - Q.dbl();
        if constexpr (lazy_y3<F, U>::value)
            Y = F::template mul_sub_mul<U>(R, Q - X3, Y, PPP);  // 9 reductions, not 10
        else
            Y = F::template mul<U>(R, Q - X3) - F::template mul<U>(Y, PPP);
        X = X3;
        ZZ = F::template mul<U>(ZZ, PP);
        ZZZ = F::template mul<U>(ZZZ, PPP);
    }

    CUZK_HD xyzz_t dbl() const { return dbl(*this); }
    CUZK_HD void add(const xyzz_t& q) { *this = sum(*this, q); }
    // INLINE: the formula inlined here instead of the shared out-of-line copy (the bucket
    // reduction's G1 kernels, whose loops are nothing but full additions).
    template <bool INLINE, int U = F::FAST_U>
    CUZK_HD void add(const xyzz_t& q) {
        if constexpr (INLINE)
            *this = sum_inline<U>(*this, q);
        else
            *this = sum(*this, q);
    }

    CUZK_HD_NOINLINE static xyzz_t sum(const xyzz_t& p, const xyzz_t& q) { return sum_inline(p, q); }

    // p + q, both in XYZZ.
    template <int U = F::FAST_U>
    CUZK_HD static xyzz_t sum_inline(const xyzz_t& p, const xyzz_t& q) {
        if (q.is_inf()) return p;
        if (p.is_inf()) return q;
        const F& X = p.X;
        const F& Y = p.Y;
        const F& ZZ = p.ZZ;
        const F& ZZZ = p.ZZZ;
        F U1 = F::template mul<U>(X, q.ZZ);
        F U2 = F::template mul<U>(q.X, ZZ);
        F S1 = F::template mul<U>(Y, q.ZZZ);
        F S2 = F::template mul<U>(q.Y, ZZZ);
        F P = U2 - U1;
        F R = S2 - S1;
        if (P.is_zero()) return R.is_zero() ? dbl(p) : inf();
        F PP = F::template square<U>(P);
        F PPP = F::template mul<U>(P, PP);
        F Q = F::template mul<U>(U1, PP);
        F X3 = F::template square<U>(R) - PPP - Q.dbl();
        F Y3;
        if constexpr (lazy_y3<F, U>::value)
            Y3 = F::template mul_sub_mul<U>(R, Q - X3, S1, PPP);  // 13 reductions, not 14
        else
            Y3 = F::template mul<U>(R, Q - X3) - F::template mul<U>(S1, PPP);
        return {X3, Y3, F::template mul<U>(F::template mul<U>(ZZ, q.ZZ), PP), F::template mul<U>(F::template mul<U>(ZZZ, q.ZZZ), PPP)};
    }
};
