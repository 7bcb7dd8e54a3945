// k * B for many scalars k and one fixed base B: a precomputed table of the base's signed
// window multiples turns each product into nwin - 1 mixed additions and no doublings.
//
// Table row w holds m * 2^(c w) * B for m = 1 .. 2^(c-1), affine (blst layout), built on
// the host once per call (src/fixed_base.rs). A scalar's signed c-bit digits d_w (the MSM's
// digit_reader, msm/scalar.cuh) give k = sum_w d_w 2^(c w), so k * B is the sum over windows
// of +-row_w[|d_w| - 1]. With c = 12 a G1 table is 22 x 2048 points (4.3 MB), which stays in
// the H200's 50 MB L2 while every thread gathers from it at random.
//
// Each thread takes FIXED_BASE_BATCH scalars (strided by the grid, so loads and stores stay
// coalesced), sums each in XYZZ, and converts the batch to affine with one field inversion
// shared by all of them (Montgomery's trick), as fold.cuh does for the MSM's base copies: an
// inversion is ~570 products and one point's window sum ~230, so sharing it among 32 points
// costs ~8% instead of more than twice the sum.
#pragma once
#include "../curve/xyzz.cuh"
#include "../msm/scalar.cuh"

#define FIXED_BASE_BATCH 32

// out[i] = (scalars[i] * B) in affine form for i < n. scalars: Fr in Montgomery form (as
// blstrs::Scalar), 32 bytes each. scratch: two field elements (ZZ, ZZZ) per point.
template <class F, int U = F::FAST_U>
__device__ __forceinline__ void fixed_base_times(const uint4* scalars, uint32_t n,
                                                 const affine_t<F>* table, uint32_t c,
                                                 uint32_t nwin, affine_t<F>* out, F* scratch) {
    const uint32_t threads = gridDim.x * blockDim.x;
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t row = 1u << (c - 1);
    F prefix[FIXED_BASE_BATCH];
    F acc = F::one();
#pragma unroll 1
    for (int j = 0; j < FIXED_BASE_BATCH; j++) {
        const uint32_t i = t + j * threads;
        if (i >= n) break;
        uint32_t s[8];
        const uint4 lo = scalars[2 * (size_t)i], hi = scalars[2 * (size_t)i + 1];
        s[0] = lo.x, s[1] = lo.y, s[2] = lo.z, s[3] = lo.w;
        s[4] = hi.x, s[5] = hi.y, s[6] = hi.z, s[7] = hi.w;
        fr_canonical::from_montgomery(s);
        digit_reader digits{s, c};
        xyzz_t<F> q = xyzz_t<F>::inf();
#pragma unroll 1
        for (uint32_t w = 0; w < nwin; w++) {
            uint32_t mag;
            bool neg;
            digits.next(w, mag, neg);
            // add_affine is exact in every case (infinity, equal or opposite points), so the
            // identity base (an all-infinity table) and k = 0 need nothing special here.
            if (mag != 0)
                q.template add_affine<U>(affine_t<F>::load(table + w * row + (mag - 1)), neg);
        }
        out[i] = {q.X, q.Y};  // projective X, Y until the inversion below
        scratch[2 * (size_t)i] = q.ZZ;
        scratch[2 * (size_t)i + 1] = q.ZZZ;
        // Infinity (ZZZ = 0) stays out of the product; it is written as (0, 0) below.
        acc = acc * (q.is_inf() ? F::one() : q.ZZZ);
        prefix[j] = acc;
    }
    F inv = acc.inv();  // 1 / (ZZZ_0 ... ZZZ_last) over this thread's finite points
#pragma unroll 1
    for (int j = FIXED_BASE_BATCH - 1; j >= 0; j--) {
        const uint32_t i = t + j * threads;
        if (i >= n) continue;
        const F zz = scratch[2 * (size_t)i];
        const F zzz = scratch[2 * (size_t)i + 1];
        if (zz.is_zero()) {
            out[i] = {F::zero(), F::zero()};  // blst's encoding of infinity
            continue;
        }
        // prefix[j - 1] * inv = 1 / ZZZ_j; then inv drops ZZZ_j for the next (earlier) j.
        const F zzz_inv = j > 0 ? inv * prefix[j - 1] : inv;
        inv = inv * zzz;
        // x = X / ZZ = X (ZZ / ZZZ)^2 and y = Y / ZZZ, since ZZ^3 = ZZZ^2.
        const F z_inv = zz * zzz_inv;
        const affine_t<F> p = out[i];
        out[i] = {p.x * z_inv.sqr(), p.y * zzz_inv};
    }
}
