// Density selection on the device. A Groth16 key stores A and B query points only for the
// variables those queries use (bellperson's density bitmaps), so their MSMs take the aux
// assignment compacted to the set bits, in order. On the host that copy cost 40 ms of a
// 2 KiB PoRep partition's device step (2.7M scalars, mostly first-touch page faults); here
// it is one pass over a vector uploaded once for the L MSM anyway.
#pragma once
#include <stdint.h>

// out[rank(i)] = in[i] for each set bit i of `words`; word_rank[w] = set bits before word w.
__device__ __forceinline__ void select_scalars(const uint4* in, uint32_t n,
                                               const unsigned long long* words,
                                               const uint32_t* word_rank, uint4* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned long long w = words[i >> 6];
    const uint32_t b = i & 63;
    if (((w >> b) & 1) == 0) return;
    const uint32_t r = word_rank[i >> 6] + __popcll(w & ((1ull << b) - 1));
    out[2 * (size_t)r] = in[2 * (size_t)i];
    out[2 * (size_t)r + 1] = in[2 * (size_t)i + 1];
}

// The inverse of a selection, for an assignment that crossed the bus packed (most of a
// Filecoin witness is zeros and ones): out[i] = wide[rank(i)] where bit i of `wide_words` is
// set, else *one (the field's one, Montgomery form) where bit i of `one_words` is, else zero.
// wide_rank[w] = set bits of wide_words before word w.
__device__ __forceinline__ void expand_scalars(uint32_t n, const unsigned long long* wide_words,
                                               const uint32_t* wide_rank, const uint4* wide,
                                               const unsigned long long* one_words,
                                               const uint4* one, uint4* out) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const unsigned long long w = wide_words[i >> 6];
    const uint32_t b = i & 63;
    uint4 lo = make_uint4(0, 0, 0, 0), hi = lo;
    if ((w >> b) & 1) {
        const uint32_t r = wide_rank[i >> 6] + __popcll(w & ((1ull << b) - 1));
        lo = wide[2 * (size_t)r];
        hi = wide[2 * (size_t)r + 1];
    } else if ((one_words[i >> 6] >> b) & 1) {
        lo = one[0];
        hi = one[1];
    }
    out[2 * (size_t)i] = lo;
    out[2 * (size_t)i + 1] = hi;
}
