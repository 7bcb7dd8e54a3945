// The one element-wise step of the H polynomial: on the coset, a(x) b(x) - c(x) divided by
// Z(x) = x^n - 1, which is the same constant (g^n - 1) at every point of the coset g<w>.
#pragma once

#include "../field/fr.cuh"

namespace cuzk {

__device__ __forceinline__ void h_pointwise(fr_t* a, const fr_t* b, const fr_t* c, fr_t z_inv,
                                            uint32_t n)
{
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        fr_t x = fr_t::load(a + i) * fr_t::load(b + i) - fr_t::load(c + i);
        (x * z_inv).store(a + i);
    }
}

}  // namespace cuzk
