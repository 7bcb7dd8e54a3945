// Bit-heavy MSMs as batch additions. Filecoin witnesses are mostly 0 and 1 (a real PoRep
// partition's aux assignment: 51% zero, 47% one, 1.6% wider values), and for those
// sum_i s_i P_i is the plain sum of the P_i whose scalar is one plus a small MSM over the
// rest. The host side (src/msm/bits.rs) decides when that pays and runs, per vector:
//   bits_sample    a strided sample's counts of ones and others (the decision, cheaply)
//   bits_classify  one bit per scalar in two bitmaps (one / other) and, per 32-scalar word,
//                  the count of each, which msm_scan_* turns into ranks
//   bits_compact   the ones' indices in order; the others' scalars and bases gathered
//   bits_sum       the ones' bases summed in XYZZ into one partial sum per thread, which
//                  the reduction's sum_level kernels then add up (reduce.cuh)
// Scalars arrive as blstrs keeps them (Montgomery form, reduced): zero is all-zero limbs and
// one is R mod r, which the host passes in, so nothing here hard-codes Fr's constants.
#pragma once
#include "../curve/xyzz.cuh"

// One scalar's four 64-bit limbs, passed by value.
struct fr_words {
    unsigned long long l[4];
};

#define BITS_ZERO 0u
#define BITS_ONE 1u
#define BITS_OTHER 2u

__device__ __forceinline__ uint32_t bits_class(const uint4* scalars, uint64_t i,
                                               const fr_words& one) {
    const uint4 a = scalars[2 * i], b = scalars[2 * i + 1];
    const unsigned long long l[4] = {
        ((unsigned long long)a.y << 32) | a.x, ((unsigned long long)a.w << 32) | a.z,
        ((unsigned long long)b.y << 32) | b.x, ((unsigned long long)b.w << 32) | b.z};
    if ((l[0] | l[1] | l[2] | l[3]) == 0) return BITS_ZERO;
    if (l[0] == one.l[0] && l[1] == one.l[1] && l[2] == one.l[2] && l[3] == one.l[3])
        return BITS_ONE;
    return BITS_OTHER;
}

// counts[0] += ones, counts[1] += others among scalars floor(j n / samples), j < samples.
// A few thousand atomics on two counters: microseconds, for a decision that can skip the
// whole classification of a uniform vector.
__device__ __forceinline__ void bits_sample(const uint4* scalars, uint32_t n, uint32_t samples,
                                            fr_words one, uint32_t* counts) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= samples) return;
    const uint64_t i = (uint64_t)j * n / samples;
    const uint32_t c = bits_class(scalars, i, one);
    if (c == BITS_ONE) atomicAdd(&counts[0], 1u);
    if (c == BITS_OTHER) atomicAdd(&counts[1], 1u);
}

// Scalars [first, end): bit i % 32 of word i / 32 in ones_words / others_words, and that
// word's popcounts in counts[w] (ones) and counts[nwords + w] (others), so one exclusive
// scan of counts gives every one's rank among the ones and, offset by the total of ones,
// every other's rank among the others. One warp writes one word: `first` must be a
// multiple of 32 and blockDim a multiple of 32, so warps never straddle words (the host
// launches one slice of the upload at a time, at multiples of 2^20). Every thread reaches
// the ballots, including those past `end`, which vote false.
__device__ __forceinline__ void bits_classify(const uint4* scalars, uint32_t first, uint32_t end,
                                              uint32_t nwords, fr_words one,
                                              uint32_t* ones_words, uint32_t* others_words,
                                              uint32_t* counts) {
    const uint64_t i = (uint64_t)first + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const bool valid = i < end;
    const uint32_t c = valid ? bits_class(scalars, i, one) : BITS_ZERO;
    const uint32_t ones = __ballot_sync(0xffffffffu, c == BITS_ONE);
    const uint32_t others = __ballot_sync(0xffffffffu, c == BITS_OTHER);
    // Lane 0 holds the warp's first index: valid exactly when the warp has any work.
    if ((threadIdx.x & 31) == 0 && valid) {
        const uint32_t w = (uint32_t)(i >> 5);
        ones_words[w] = ones;
        others_words[w] = others;
        counts[w] = __popc(ones);
        counts[nwords + w] = __popc(others);
    }
}

// Scalars [first, end), after the scan (ranks: 2 nwords + 1 entries): a one's index goes to
// ones_idx[its rank]; an other's scalar to others_scalars[its rank] and its base, read from
// points[i - first] (the resident vector with first = 0, or one uploaded piece of host
// bases), to others_points[its rank]. point_u4: a point's size in 16-byte units (6 in G1,
// 12 in G2). The order of both lists is the order of the input.
__device__ __forceinline__ void bits_compact(const uint4* scalars, uint32_t first, uint32_t end,
                                             uint32_t nwords, const uint32_t* ones_words,
                                             const uint32_t* others_words,
                                             const uint32_t* ranks, const uint4* points,
                                             uint32_t point_u4, uint32_t* ones_idx,
                                             uint4* others_scalars, uint4* others_points) {
    const uint64_t i64 = (uint64_t)first + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i64 >= end) return;
    const uint32_t i = (uint32_t)i64;
    const uint32_t w = i >> 5, bit = i & 31;
    const uint32_t below = (1u << bit) - 1u;
    const uint32_t o = ones_words[w];
    if ((o >> bit) & 1u) {
        ones_idx[ranks[w] + __popc(o & below)] = i;
        return;
    }
    const uint32_t x = others_words[w];
    if (((x >> bit) & 1u) == 0) return;
    const uint64_t r = ranks[nwords + w] - ranks[nwords] + __popc(x & below);
    others_scalars[2 * r] = scalars[2 * (uint64_t)i];
    others_scalars[2 * r + 1] = scalars[2 * (uint64_t)i + 1];
    const uint4* src = points + (uint64_t)(i - first) * point_u4;
    uint4* dst = others_points + r * point_u4;
    for (uint32_t k = 0; k < point_u4; k++) dst[k] = src[k];
}

// partial[t] += sum of the bases of the ones ranked [ranks[word_lo], ranks[word_hi]) that
// fall to thread t: ranks lo + t, lo + t + nthreads, ... (grid-stride rather than one
// contiguous run per thread, so that a warp's 32 index loads are one coalesced line and its
// 32 bases lie close together in the base vector; addition commutes, so any split of the
// list gives the same sum). The ones' indices are global; this launch's bases are
// points[idx - first] (first = 0 for resident bases, the piece's start for host bases).
// Mixed additions are exact in every case (infinity, equal points, opposite points).
template <class F, int U = F::FAST_U>
__device__ __forceinline__ void bits_sum(const affine_t<F>* points, uint32_t first,
                                         const uint32_t* ones_idx, const uint32_t* ranks,
                                         uint32_t word_lo, uint32_t word_hi, uint32_t nthreads,
                                         xyzz_t<F>* partial) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthreads) return;
    const uint32_t lo = ranks[word_lo], hi = ranks[word_hi];
    xyzz_t<F> acc = partial[t];
    // e + nthreads cannot wrap: hi <= n <= 2^31 and nthreads < 2^31 (host bounds).
    for (uint32_t e = lo + t; e < hi; e += nthreads)
        acc.template add_affine<U>(affine_t<F>::load(points + (ones_idx[e] - first)), false);
    partial[t] = acc;
}
