// Scalars arrive as blstrs::Scalar: Fr in Montgomery form (R = 2^256), four little-endian
// 64-bit limbs. Pippenger needs the canonical integer, so each scalar is multiplied by 1
// (one Montgomery reduction) once, on the device, before digits are taken.
#pragma once
#include <stdint.h>

namespace fr_canonical {

// r = 0x73eda753...00000001, as eight 32-bit limbs.
__device__ __forceinline__ uint32_t R(int i) {
    const uint32_t r[8] = {0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
                           0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
    return r[i];
}

// t * 2^-256 mod r for t < r. Plain 64-bit arithmetic: this runs once per scalar, far off
// the hot path. -r^-1 mod 2^32 is 0xffffffff because r = 1 mod 2^32.
__device__ __forceinline__ void from_montgomery(uint32_t t[8]) {
    uint32_t a[9];
#pragma unroll
    for (int i = 0; i < 8; i++) a[i] = t[i];
    a[8] = 0;
#pragma unroll
    for (int round = 0; round < 8; round++) {
        const uint32_t m = a[0] * 0xffffffffu;
        uint64_t c = ((uint64_t)m * R(0) + a[0]) >> 32;
#pragma unroll
        for (int j = 1; j < 8; j++) {
            uint64_t s = (uint64_t)m * R(j) + a[j] + c;
            a[j - 1] = (uint32_t)s;
            c = s >> 32;
        }
        uint64_t s = (uint64_t)a[8] + c;
        a[7] = (uint32_t)s;
        a[8] = (uint32_t)(s >> 32);
    }
    // a < 2r now; subtract r once if needed.
    uint32_t d[8];
    uint64_t borrow = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        uint64_t s = (uint64_t)a[j] - R(j) - borrow;
        d[j] = (uint32_t)s;
        borrow = (s >> 63) & 1;
    }
    const bool keep = a[8] == 0 && borrow;  // a < r
#pragma unroll
    for (int j = 0; j < 8; j++) t[j] = keep ? a[j] : d[j];
}

}  // namespace fr_canonical

// Signed windowed digits of a canonical scalar (< r < 2^255): window w holds bits
// [w*c, (w+1)*c) plus the carry from window w-1; a value above 2^(c-1) becomes value - 2^c
// with a carry into the next window. Digits lie in [-(2^(c-1) - 1), 2^(c-1)], so 2^(c-1)
// buckets per window suffice, the sign applied to the point. With nwin*c >= 256 the top
// window's highest bit is zero and the last carry is always absorbed.
struct digit_reader {
    const uint32_t* s;  // eight canonical limbs
    uint32_t c;
    uint32_t carry = 0;

    __device__ __forceinline__ uint32_t bits(uint32_t off) const {
        const uint32_t limb = off >> 5, sh = off & 31;
        const uint32_t lo = limb < 8 ? s[limb] : 0;
        const uint32_t hi = limb + 1 < 8 ? s[limb + 1] : 0;
        const uint64_t v = ((uint64_t)hi << 32) | lo;
        return (uint32_t)(v >> sh) & ((1u << c) - 1);
    }

    // Digit of window w (call for w = 0, 1, 2, ... in order): magnitude and sign.
    __device__ __forceinline__ void next(uint32_t w, uint32_t& mag, bool& neg) {
        uint32_t v = bits(w * c) + carry;
        const uint32_t half = 1u << (c - 1);
        if (v > half) {
            mag = (1u << c) - v;
            neg = true;
            carry = 1;
        } else {
            mag = v;
            neg = false;
            carry = 0;
        }
    }
};
