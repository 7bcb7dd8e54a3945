// Bucket reduction: W = sum_d d * B_d over one window's buckets, in parallel levels.
// Cut the buckets into segments of L; segment s holds d = s*L + k, so
//   W = sum_s (sum_k k * B_{sL+k})  +  L * sum_s s * (sum_k B_{sL+k})
//     = Sum(acc)                    +  L * Weighted(run),
// where each thread computes its segment's acc and run with two running sums. Weighted(run)
// is the same problem L times smaller, so the host repeats levels until one segment is
// left, and sums each level's acc (sum_level) down to one point. The host then combines
// the levels with doublings (multiplying by L = 2^l): W = S_0 + L (S_1 + L (S_2 + ...)).
#pragma once
#include "../curve/xyzz.cuh"

// INLINE: full additions inlined (G1) or through the shared out-of-line copy (G2, whose
// inlined formula would not fit the registers); U: their product where inlined.
template <class F, bool INLINE, int U = F::FAST_U>
__device__ __forceinline__ void reduce_level(const xyzz_t<F>* in, uint32_t len, uint32_t L,
                                             uint32_t nwin, uint32_t out_stride,
                                             xyzz_t<F>* acc_out, xyzz_t<F>* run_out) {
    const uint32_t id = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t S = len / L;
    if (id >= S * nwin) return;
    const uint32_t w = id / S, s = id % S;
    const xyzz_t<F>* base = in + (size_t)w * len + (size_t)s * L;
    xyzz_t<F> run = xyzz_t<F>::inf(), acc = xyzz_t<F>::inf();
#ifndef CUZK_REDUCE_CHAINED
    // acc += run_{k+1} and run_k = run_{k+1} + B_k both read run_{k+1} and not each other,
    // so one thread has two independent additions in flight instead of a chain of dependent
    // ones (the level is bound by latency at 2 blocks per SM: kernels/NOTES.md, part 12).
    // The same additions on the same operands as the chained loop below, so the same bits;
    // H's MSM at 2^27 measured 9 ms shorter (part 15).
    run.template add<INLINE, U>(base[L - 1]);
    for (uint32_t k = L - 1; k >= 1; k--) {
        acc.template add<INLINE, U>(run);
        run.template add<INLINE, U>(base[k - 1]);
    }
#else
    for (uint32_t k = L - 1; k >= 1; k--) {
        run.template add<INLINE, U>(base[k]);
        acc.template add<INLINE, U>(run);
    }
    run.template add<INLINE, U>(base[0]);
#endif
    acc_out[(size_t)w * out_stride + s] = acc;
    run_out[(size_t)w * out_stride + s] = run;
}

template <class F, bool INLINE, int U = F::FAST_U>
__device__ __forceinline__ void sum_level(const xyzz_t<F>* in, uint32_t len, uint32_t L,
                                          uint32_t nwin, uint32_t out_stride, xyzz_t<F>* out) {
    const uint32_t id = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t S = len / L;
    if (id >= S * nwin) return;
    const uint32_t w = id / S, s = id % S;
    const xyzz_t<F>* base = in + (size_t)w * len + (size_t)s * L;
    xyzz_t<F> acc = base[0];
    for (uint32_t k = 1; k < L; k++) acc.template add<INLINE, U>(base[k]);
    out[(size_t)w * out_stride + s] = acc;
}

// XYZZ -> Jacobian (X ZZ^2, Y ZZZ^2, ZZZ), blst's projective form, for the host's last
// steps: with ZZ^3 = ZZZ^2, X ZZ^2 / ZZZ^2 = X / ZZ and Y ZZZ^2 / ZZZ^3 = Y / ZZZ.
// Infinity (ZZ = ZZZ = 0) becomes Z = 0, which blst reads as infinity.
template <class F>
__device__ __forceinline__ void xyzz_to_jacobian(const xyzz_t<F>* in, F* out, uint32_t n) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const xyzz_t<F> p = in[i];
    out[3 * i] = p.X * p.ZZ.sqr();
    out[3 * i + 1] = p.Y * p.ZZZ.sqr();
    out[3 * i + 2] = p.ZZZ;
}
