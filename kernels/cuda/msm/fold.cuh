// Precomputed multiples of resident bases: out[i] = 2^c * in[i], in affine form (blst
// layout). With copies P, 2^c P, 2^2c P, ... of the bases on the device, window w of a
// scalar's digits can be added into the same buckets as window 0, against copy w: the
// windows fold into one set of buckets, so the MSM pays one bucket reduction instead of one
// per window, and c can grow (fewer windows, fewer additions) without the reduction's cost
// growing with it (see src/msm.rs, `Fold`).
//
// Each thread takes FOLD_BATCH points (strided by the grid, so loads stay coalesced),
// doubles each c times in XYZZ, and shares one field inversion among them (Montgomery's
// trick): 1/ZZZ for every point from the inverse of their product. With Z the projective
// factor (ZZ = Z^2, ZZZ = Z^3): 1/Z = ZZ / ZZZ, x = X / Z^2, y = Y / ZZZ.
#pragma once
#include "../curve/xyzz.cuh"

#define FOLD_BATCH 16

// scratch holds two field elements (ZZ, ZZZ) per point of the launch.
template <class F>
__device__ __forceinline__ void fold_bases(const affine_t<F>* in, affine_t<F>* out,
                                           F* scratch, uint32_t n, uint32_t c) {
    const uint32_t threads = gridDim.x * blockDim.x;
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    F prefix[FOLD_BATCH];
    F acc = F::one();
#pragma unroll 1
    for (int j = 0; j < FOLD_BATCH; j++) {
        const uint32_t i = t + j * threads;
        if (i >= n) break;
        xyzz_t<F> q = xyzz_t<F>::from_affine(in[i]);
#pragma unroll 1
        for (uint32_t k = 0; k < c; k++) q = xyzz_t<F>::dbl(q);
        out[i] = {q.X, q.Y};  // projective X, Y for now
        scratch[2 * (size_t)i] = q.ZZ;
        scratch[2 * (size_t)i + 1] = q.ZZZ;
        // Infinity (ZZZ = 0) stays out of the product; it is written as (0, 0) below.
        acc = acc * (q.is_inf() ? F::one() : q.ZZZ);
        prefix[j] = acc;
    }
    F inv = acc.inv();  // 1 / (ZZZ_0 ... ZZZ_last)
#pragma unroll 1
    for (int j = FOLD_BATCH - 1; j >= 0; j--) {
        const uint32_t i = t + j * threads;
        if (i >= n) continue;
        const F zz = scratch[2 * (size_t)i];
        const F zzz = scratch[2 * (size_t)i + 1];
        if (zz.is_zero()) {
            out[i] = {F::zero(), F::zero()};
            continue;
        }
        const F zzz_inv = j > 0 ? inv * prefix[j - 1] : inv;
        inv = inv * zzz;
        const F z_inv = zz * zzz_inv;
        const affine_t<F> p = out[i];
        out[i] = {p.x * z_inv.sqr(), p.y * zzz_inv};
    }
}
