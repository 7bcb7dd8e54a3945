// A prime field in Montgomery form over N 32-bit limbs (little endian), R = 2^(32 N).
//
// 32-bit limbs because the GPU's integer multiplier is 32 bits wide: a 64-bit multiply is
// emulated from four 32-bit ones, so 32-bit limbs with explicit carry chains
// (mad.lo.cc / madc.hi.cc) are the cheapest way to a 255-bit product. The bytes are the same
// as 64-bit little-endian limbs, so a vector of blst_fr uploads with no conversion.
//
// Requirement on the modulus: its top limb leaves at least one spare bit (2p < 2^(32N)). The
// multiplication below drops one carry-out that this bound proves zero, and add() relies on
// a+b never overflowing the top limb. BLS12-381's Fr (255 bits) and Fp (381 of 384) qualify.
//
// Inline PTX is volatile throughout: carries flow between separate asm statements through
// the implicit carry flag, which the compiler cannot see, so it must not reorder or drop them.
//
// Multiplication is the interleaved (FIOS) Montgomery product split into an "even" and an
// "odd" accumulator: the products a[j]*b[i] for even j land on disjoint limb pairs, so one
// unbroken carry chain covers them, and likewise for odd j. Two chains of N multiply-adds
// each per row instead of 2N short chains with carry fix-ups; this is the layout of Emmart,
// Zheng and Weems, "Faster modular exponentiation using double precision floating point
// arithmetic on the GPU" (2018), also used by sppark.
#pragma once

#include <cstdint>

namespace cuzk {

// P0_IS_ONE: the modulus is 1 mod 2^32 (then M0 = 2^32 - 1 and the reduction factor of a
// row is just -x[0]); true for BLS12-381's Fr, whose 2-adicity is 32.
template <int N, const uint32_t (&MOD)[N], const uint32_t& M0, const uint32_t (&ONE)[N],
          bool P0_IS_ONE = false>
struct __align__(16) mont_t {
    static_assert(N % 2 == 0 && N >= 4, "mont_t wants an even number of limbs, at least 4");
    static constexpr int LIMBS = N;

    uint32_t w[N];

    __device__ __forceinline__ static mont_t zero()
    {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.w[i] = 0;
        return r;
    }

    __device__ __forceinline__ static mont_t one()
    {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.w[i] = ONE[i];
        return r;
    }

    __device__ __forceinline__ bool is_zero() const
    {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= w[i];
        return acc == 0;
    }

    // Conditionally subtracts the modulus: maps [0, 2p) to [0, p).
    __device__ __forceinline__ void reduce_once()
    {
        uint32_t t[N], borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(w[0]), "r"(MOD[0]));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(t[i]) : "r"(w[i]), "r"(MOD[i]));
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
        // borrow == 0xffffffff: w < p, keep w.
#pragma unroll
        for (int i = 0; i < N; i++) w[i] = borrow ? w[i] : t[i];
    }

    __device__ __forceinline__ friend mont_t operator+(mont_t a, const mont_t& b)
    {
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(a.w[0]) : "r"(b.w[0]));
#pragma unroll
        for (int i = 1; i < N - 1; i++)
            asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(a.w[i]) : "r"(b.w[i]));
        asm volatile("addc.u32 %0, %0, %1;" : "+r"(a.w[N - 1]) : "r"(b.w[N - 1]));
        a.reduce_once();
        return a;
    }

    __device__ __forceinline__ friend mont_t operator-(mont_t a, const mont_t& b)
    {
        uint32_t mask;
        asm volatile("sub.cc.u32 %0, %0, %1;" : "+r"(a.w[0]) : "r"(b.w[0]));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %0, %1;" : "+r"(a.w[i]) : "r"(b.w[i]));
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(mask));
        // On borrow add p back; branch-free so a warp never diverges on data.
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(a.w[0]) : "r"(MOD[0] & mask));
#pragma unroll
        for (int i = 1; i < N - 1; i++)
            asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(a.w[i]) : "r"(MOD[i] & mask));
        asm volatile("addc.u32 %0, %0, %1;" : "+r"(a.w[N - 1]) : "r"(MOD[N - 1] & mask));
        return a;
    }

    __device__ __forceinline__ mont_t operator-() const { return zero() - *this; }

    __device__ __forceinline__ mont_t& operator+=(const mont_t& b) { return *this = *this + b; }
    __device__ __forceinline__ mont_t& operator-=(const mont_t& b) { return *this = *this - b; }

private:
    // acc[j], acc[j+1] = lo, hi of a[j] * bi for j = 0, 2, 4, ...
    __device__ __forceinline__ static void mul_pairs(uint32_t* acc, const uint32_t* a, uint32_t bi)
    {
#pragma unroll
        for (int j = 0; j < N; j += 2)
            asm volatile("mul.lo.u32 %0, %2, %3; mul.hi.u32 %1, %2, %3;"
                : "=r"(acc[j]), "=r"(acc[j + 1])
                : "r"(a[j]), "r"(bi));
    }

    // acc += sum over even j of a[j] * bi << 32j, one carry chain; the carry out of
    // acc[N-1] is left in the carry flag for the caller.
    __device__ __forceinline__ static void mad_pairs_cc(uint32_t* acc, const uint32_t* a, uint32_t bi)
    {
        asm volatile("mad.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
            : "+r"(acc[0]), "+r"(acc[1])
            : "r"(a[0]), "r"(bi));
#pragma unroll
        for (int j = 2; j < N; j += 2)
            asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                : "+r"(acc[j]), "+r"(acc[j + 1])
                : "r"(a[j]), "r"(bi));
    }

    // One row of the interleaved product. The accumulator is the pair (x, y) worth
    // x + y * 2^32, both N limbs. On entry (not first) `lo` holds the previous y and `hi`
    // the previous x, whose limb 0 the last reduction made zero; dividing by 2^32 turns the
    // old pair into (y + x[1], x[2..]) which is exactly what the shifted chain below builds.
    // On exit the roles are swapped: (lo, hi) is the new (x, y), x[0] == 0.
    __device__ __forceinline__ static void row(uint32_t* lo, uint32_t* hi, const uint32_t* a,
                                               uint32_t bi, bool first)
    {
        if (first) {
            mul_pairs(hi, a + 1, bi);
            mul_pairs(lo, a, bi);
        } else {
            asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(lo[0]) : "r"(hi[1]));
#pragma unroll
            for (int j = 0; j < N - 2; j += 2)
                asm volatile("madc.lo.cc.u32 %0, %2, %3, %4; madc.hi.cc.u32 %1, %2, %3, %5;"
                    : "=r"(hi[j]), "=r"(hi[j + 1])
                    : "r"(a[j + 1]), "r"(bi), "r"(hi[j + 2]), "r"(hi[j + 3]));
            asm volatile("madc.lo.cc.u32 %0, %2, %3, 0; madc.hi.u32 %1, %2, %3, 0;"
                : "=r"(hi[N - 2]), "=r"(hi[N - 1])
                : "r"(a[N - 1]), "r"(bi));
            mad_pairs_cc(lo, a, bi);
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(hi[N - 1]));
        }

        // m makes limb 0 vanish: lo[0] + m * p[0] == 0 mod 2^32.
        uint32_t m;
        if constexpr (P0_IS_ONE)
            asm volatile("sub.u32 %0, 0, %1;" : "=r"(m) : "r"(lo[0]));
        else
            m = lo[0] * M0;
        // The odd chain's carry out is provably zero (spare top bit), so a fresh chain starts.
        mad_pairs_cc(hi, MOD + 1, m);
        if constexpr (P0_IS_ONE) {
            // p[0] == 1: the even chain's first pair is lo[0] + m (which is 0, carrying
            // lo[0] != 0) and lo[1] + carry; adds instead of multiply-adds keep 3 of the
            // row's 33 multiplier instructions off the multiplier pipe.
            asm volatile("add.cc.u32 %0, %0, %2; addc.cc.u32 %1, %1, 0;"
                : "+r"(lo[0]), "+r"(lo[1])
                : "r"(m));
#pragma unroll
            for (int j = 2; j < N; j += 2)
                asm volatile("madc.lo.cc.u32 %0, %2, %3, %0; madc.hi.cc.u32 %1, %2, %3, %1;"
                    : "+r"(lo[j]), "+r"(lo[j + 1])
                    : "r"(MOD[j]), "r"(m));
        } else {
            mad_pairs_cc(lo, MOD, m);
        }
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(hi[N - 1]));
    }

public:
    __device__ __forceinline__ friend mont_t operator*(const mont_t& a, const mont_t& b)
    {
        uint32_t x[N], y[N];
#pragma unroll
        for (int i = 0; i < N; i += 2) {
            row(x, y, a.w, b.w[i], i == 0);
            row(y, x, a.w, b.w[i + 1], false);
        }
        // Final state: (y, x) with y[0] == 0; the value is x + y >> 32, below 2p.
        mont_t r;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.w[0]) : "r"(x[0]), "r"(y[1]));
#pragma unroll
        for (int i = 1; i < N - 1; i++)
            asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.w[i]) : "r"(x[i]), "r"(y[i + 1]));
        asm volatile("addc.u32 %0, %1, 0;" : "=r"(r.w[N - 1]) : "r"(x[N - 1]));
        r.reduce_once();
        return r;
    }

    __device__ __forceinline__ mont_t& operator*=(const mont_t& b) { return *this = *this * b; }

    __device__ __forceinline__ mont_t sqr() const { return *this * *this; }

    // x^e for an exponent given as little-endian 32-bit words (left to right binary).
    template <int E>
    __device__ __forceinline__ mont_t pow(const uint32_t (&e)[E]) const
    {
        mont_t r = one();
        for (int i = E - 1; i >= 0; i--)
            for (int bit = 31; bit >= 0; bit--) {
                r = r.sqr();
                if ((e[i] >> bit) & 1) r *= *this;
            }
        return r;
    }

    __device__ __forceinline__ mont_t pow(uint32_t e) const
    {
        mont_t r = one(), base = *this;
        for (; e; e >>= 1) {
            if (e & 1) r *= base;
            base = base.sqr();
        }
        return r;
    }

    // Fermat inversion, x^(p-2); zero maps to zero. Slow (about 380 multiplications): for
    // single constants, never per element in a hot loop.
    __device__ __forceinline__ mont_t inverse() const
    {
        uint32_t e[N];
#pragma unroll
        for (int i = 0; i < N; i++) e[i] = MOD[i];
        // p - 2 with a full borrow chain (Fr's p[0] is 1, so the borrow does propagate).
        asm volatile("sub.cc.u32 %0, %0, 2;" : "+r"(e[0]));
#pragma unroll
        for (int i = 1; i < N; i++) asm volatile("subc.cc.u32 %0, %0, 0;" : "+r"(e[i]));
        return pow<N>(reinterpret_cast<const uint32_t(&)[N]>(e));
    }

    // 32-byte element as two 16-byte halves: global and shared memory move it with two
    // 128-bit accesses.
    __device__ __forceinline__ static mont_t load(const mont_t* p)
    {
        const uint4* q = reinterpret_cast<const uint4*>(p);
        uint4 a = q[0], b = q[1];
        return from_halves(a, b);
    }

    __device__ __forceinline__ void store(mont_t* p) const
    {
        uint4* q = reinterpret_cast<uint4*>(p);
        q[0] = half(0);
        q[1] = half(1);
    }

    __device__ __forceinline__ static mont_t from_halves(uint4 a, uint4 b)
    {
        static_assert(N == 8, "from_halves is written for 256-bit elements");
        mont_t r;
        r.w[0] = a.x; r.w[1] = a.y; r.w[2] = a.z; r.w[3] = a.w;
        r.w[4] = b.x; r.w[5] = b.y; r.w[6] = b.z; r.w[7] = b.w;
        return r;
    }

    __device__ __forceinline__ uint4 half(int h) const
    {
        return h == 0 ? make_uint4(w[0], w[1], w[2], w[3]) : make_uint4(w[4], w[5], w[6], w[7]);
    }
};

}  // namespace cuzk
