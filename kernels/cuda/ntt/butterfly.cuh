// Radix-2 butterflies. DIF (Gentleman-Sande) takes natural order to bit-reversed order,
// DIT (Cooley-Tukey) takes bit-reversed order back to natural; pairing them lets the H
// polynomial run iNTT -> coset NTT -> iNTT with no permutation pass in between.
#pragma once

#include "../field/fr.cuh"

namespace cuzk {

// (u, v) -> (u + v, (u - v) w)
__device__ __forceinline__ void butterfly_dif(fr_t& u, fr_t& v, const fr_t& w)
{
    fr_t d = u - v;
    u = u + v;
    v = d * w;
}

// (u, v) -> (u + v w, u - v w)
__device__ __forceinline__ void butterfly_dit(fr_t& u, fr_t& v, const fr_t& w)
{
    fr_t t = v * w;
    v = u - t;
    u = u + t;
}

// The first stage's twiddles are all 1: skipping the multiplication saves 1/m of them.
__device__ __forceinline__ void butterfly_plain(fr_t& u, fr_t& v)
{
    fr_t d = u - v;
    u = u + v;
    v = d;
}

}  // namespace cuzk
