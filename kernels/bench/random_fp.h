// A uniform-ish canonical Fp element for the host checks and benches: 381 random bits
// (below 2^381 < 8p), reduced by four conditional subtractions.
#pragma once
#include <random>

#include "../cuda/field/fp.cuh"

inline fp_t random_fp(std::mt19937_64& rng) {
    fp_t r;
    for (int i = 0; i < 12; i++) r.v[i] = (uint32_t)rng();
    r.v[11] &= 0x1fffffff;
    for (int k = 0; k < 4; k++) r = fp_t::reduce_once(r);
    return r;
}
