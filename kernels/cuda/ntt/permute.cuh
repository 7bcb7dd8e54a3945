// Bit-reversal permutation, out of place, with an optional per-element factor indexed by
// the destination (natural) index: the 1/n of an inverse NTT and the g^-i of a coset
// inverse ride along with the one pass that has to touch every element anyway.
#pragma once

#include "twiddles.cuh"

namespace cuzk {

__device__ __forceinline__ void bit_reverse_scaled(fr_t* out, const fr_t* in, uint32_t L,
                                                   pow_table scale)
{
    const uint32_t n = 1u << L;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        // Each element is one 32-byte sector, so the scattered writes waste no DRAM bandwidth
        // on partial sectors; reads stay coalesced.
        uint32_t j = bit_rev(i, L);
        fr_t x = fr_t::load(in + i);
        if (scale.present()) x *= scale(j);
        x.store(out + j);
    }
}

}  // namespace cuzk
