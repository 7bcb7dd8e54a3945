// Powers of a field element from two small tables: x^e = lo[e mod 2^bits] * hi[e >> bits].
//
// A full table of w^e for a 2^24 domain is 512 MiB and its reads would double the memory
// traffic of a pass; two tables of 2^12 entries (128 KiB each) stay in L2/L1 and cost one
// extra multiplication. The host builds them once per domain (ntt.rs) and keeps them.
#pragma once

#include "../field/fr.cuh"

namespace cuzk {

struct pow_table {
    const fr_t* lo;  // x^i, i < 2^bits (times an optional constant folded in by the host)
    const fr_t* hi;  // x^(i 2^bits)
    uint32_t bits;

    __device__ __forceinline__ bool present() const { return lo != nullptr; }

    __device__ __forceinline__ fr_t operator()(uint32_t e) const
    {
        fr_t a = ldg(lo + (e & ((1u << bits) - 1)));
        fr_t b = ldg(hi + (e >> bits));
        return a * b;
    }

    __device__ __forceinline__ static fr_t ldg(const fr_t* p)
    {
        const uint4* q = reinterpret_cast<const uint4*>(p);
        return fr_t::from_halves(__ldg(q), __ldg(q + 1));
    }
};

// Reverses the low `bits` bits of i.
__device__ __forceinline__ uint32_t bit_rev(uint32_t i, uint32_t bits)
{
    return bits == 0 ? 0 : __brev(i) >> (32 - bits);
}

}  // namespace cuzk
