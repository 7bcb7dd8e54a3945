// The BLS12-381 scalar field Fr (r = 0x73eda753...00000001, 255 bits), in exactly the
// representation of blst_fr / blstrs::Scalar: Montgomery form with R = 2^256, limbs little
// endian. A device vector of fr_t is byte for byte a host Vec<Scalar>.
#pragma once

#include "mont.cuh"

namespace cuzk {

__device__ __constant__ const uint32_t FR_MOD[8] = {
    0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
    0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753,
};

// R mod r: the Montgomery form of 1.
__device__ __constant__ const uint32_t FR_ONE[8] = {
    0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa,
    0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159,
};

// -r^-1 mod 2^32. r = 1 mod 2^32, so this is 0xffffffff and m = -x[0]; kept in constant
// memory rather than as a literal so the compiler does not restructure the reduction.
__device__ __constant__ const uint32_t FR_M0 = 0xffffffff;

#ifndef FR_P0_IS_ONE
#define FR_P0_IS_ONE 1  // r = 1 mod 2^32: the cheaper reduction row (mont.cuh)
#endif
using fr_t = mont_t<8, FR_MOD, FR_M0, FR_ONE, FR_P0_IS_ONE>;

static_assert(sizeof(fr_t) == 32, "fr_t must be the 32 bytes of a blst_fr");

}  // namespace cuzk
