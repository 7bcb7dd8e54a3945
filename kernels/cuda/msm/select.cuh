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
// Filecoin witness is zeros and ones): per 64 elements one packed_word, whose bit i % 64 of
// `wide` says element i is wide[rank + set bits of `wide` below it], else of `one` that it
// is *one (the field's one, Montgomery form), else it is zero. A rank that points past the
// nwide values given sets *bad instead of reading there.
struct packed_word {
    unsigned long long wide, one, rank, reserved;
};

__device__ __forceinline__ void expand_scalars(uint32_t n, const packed_word* words,
                                               const uint4* wide, uint32_t nwide,
                                               const uint4* one, uint4* out, uint32_t* bad) {
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const packed_word w = words[i >> 6];
    const uint32_t b = i & 63;
    uint4 lo = make_uint4(0, 0, 0, 0), hi = lo;
    if ((w.wide >> b) & 1) {
        const unsigned long long r = w.rank + __popcll(w.wide & ((1ull << b) - 1));
        if (r < nwide) {
            lo = wide[2 * r];
            hi = wide[2 * r + 1];
        } else {
            atomicOr(bad, 1u);
        }
    } else if ((w.one >> b) & 1) {
        lo = one[0];
        hi = one[1];
    }
    out[2 * (size_t)i] = lo;
    out[2 * (size_t)i + 1] = hi;
}
