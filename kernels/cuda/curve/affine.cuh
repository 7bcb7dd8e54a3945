// A point in affine coordinates with blst's layout (x then y) and blst's encoding of the
// point at infinity (x = y = 0; no curve point of BLS12-381's G1 or G2 has y = 0).
#pragma once

template <class F>
struct affine_t {
    F x, y;

    CUZK_HD bool is_inf() const { return x.is_zero() && y.is_zero(); }

#if defined(__CUDA_ARCH__)
    // 16-byte loads through the read-only path: the bases are read many times and never
    // written during an MSM. 96 (G1) and 192 (G2) bytes are multiples of 16, and device
    // allocations are 256-byte aligned, so every element is 16-byte aligned.
    __device__ __forceinline__ static affine_t load(const affine_t* p) {
        static_assert(sizeof(affine_t) % 16 == 0, "affine point must be a multiple of 16 bytes");
        affine_t r;
        const uint4* src = reinterpret_cast<const uint4*>(p);
        uint4* dst = reinterpret_cast<uint4*>(&r);
#pragma unroll
        for (int i = 0; i < (int)(sizeof(affine_t) / 16); i++) dst[i] = __ldg(src + i);
        return r;
    }
#else
    static affine_t load(const affine_t* p) { return *p; }
#endif
};
