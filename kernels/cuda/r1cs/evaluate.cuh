// a = A w, b = B w, c = C w from a circuit's recorded constraint matrices
// (cuzk-core/src/matrices): each matrix is two CSR parts over the same rows, unit terms (a
// column) and scaled terms (a column and an index into one coefficient table). A column is
// a variable: bit 31 set for an input, clear for an aux variable.
//
// One thread per row (a long row's part by its whole warp, below), all three matrices, then
// the row's check a * b == c: the matrices hold what a full synthesis would have computed
// only if the witness satisfies every row, and an unsatisfied row is counted so the host can
// refuse the result (a stale matrix set, a malformed vanilla proof) instead of proving it.
#pragma once

#include "../field/fr.cuh"

namespace cuzk {

constexpr uint32_t R1CS_INPUT_COLUMN = 1u << 31;

struct csr_part {
    const uint32_t* unit_start;
    const uint32_t* unit_cols;
    const uint32_t* scaled_start;
    const uint32_t* scaled_cols;
    const uint32_t* scaled_coeffs;
};

__device__ __forceinline__ fr_t r1cs_value(uint32_t col, const fr_t* input, const fr_t* aux)
{
    return (col & R1CS_INPUT_COLUMN) ? fr_t::load(input + (col & ~R1CS_INPUT_COLUMN))
                                     : fr_t::load(aux + col);
}

__device__ __forceinline__ bool r1cs_is_one(const fr_t& v)
{
    return (v - fr_t::one()).is_zero();
}

// A part (unit or scaled terms of one matrix) with more terms than this is summed by the
// whole warp instead of its row's lane, where at most `warp_rows` lanes of the warp have one
// (a kernel argument, 0 = never; kernels/src/r1cs.rs `warp_rows` says why). More long lanes
// than that are each summed by their own lane: the warp would take them one by one, each
// with a reduction, for no gain.
constexpr uint32_t R1CS_LONG_TERMS = 16;

__device__ __forceinline__ fr_t r1cs_term(const uint32_t* cols, const uint32_t* coeff_idx,
                                          uint32_t i, const fr_t* coeffs, const fr_t* input,
                                          const fr_t* aux)
{
    const fr_t v = r1cs_value(cols[i], input, aux);
    if (!coeff_idx) return v;  // a unit term
    // Most scaled terms multiply a bit (packing, boolean gadgets): the term is the
    // coefficient or nothing.
    if (v.is_zero()) return v;
    const fr_t k = fr_t::load(coeffs + coeff_idx[i]);
    return r1cs_is_one(v) ? k : v * k;
}

// The sum over 32 lanes, in every lane (a butterfly of shuffles; Fr addition is exact, so
// the order does not change the result).
__device__ __forceinline__ fr_t r1cs_warp_sum(fr_t x)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        fr_t o;
#pragma unroll
        for (int k = 0; k < 8; k++) o.w[k] = __shfl_xor_sync(0xffffffffu, x.w[k], off);
        x = x + o;
    }
    return x;
}

// One part of row r (terms start[r] .. start[r + 1]; none where !active). Every lane of the
// warp must call it: the long parts are found by a ballot and summed by all 32 lanes.
__device__ __forceinline__ fr_t r1cs_part(const uint32_t* start, const uint32_t* cols,
                                          const uint32_t* coeff_idx, uint32_t r, bool active,
                                          uint32_t warp_rows, const fr_t* coeffs,
                                          const fr_t* input, const fr_t* aux)
{
    uint32_t s = 0, e = 0;
    if (active) {
        s = start[r];
        e = start[r + 1];
    }
    const bool is_long = e - s > R1CS_LONG_TERMS;
    uint32_t together = __ballot_sync(0xffffffffu, is_long);
    if ((uint32_t)__popc(together) > warp_rows) together = 0;  // warp-uniform
    fr_t acc = fr_t::zero();
    if (!(together && is_long))
        for (uint32_t i = s; i < e; i++)
            acc = acc + r1cs_term(cols, coeff_idx, i, coeffs, input, aux);
    const uint32_t lane = threadIdx.x & 31;
    while (together) {
        const int leader = __ffs(together) - 1;
        together &= together - 1;
        const uint32_t ls = __shfl_sync(0xffffffffu, s, leader);
        const uint32_t le = __shfl_sync(0xffffffffu, e, leader);
        fr_t part = fr_t::zero();
        for (uint32_t i = ls + lane; i < le; i += 32)
            part = part + r1cs_term(cols, coeff_idx, i, coeffs, input, aux);
        part = r1cs_warp_sum(part);
        if (lane == (uint32_t)leader) acc = part;
    }
    return acc;
}

__device__ __forceinline__ fr_t r1cs_row(const csr_part& m, uint32_t r, bool active,
                                         uint32_t warp_rows, const fr_t* coeffs,
                                         const fr_t* input, const fr_t* aux)
{
    return r1cs_part(m.unit_start, m.unit_cols, nullptr, r, active, warp_rows, coeffs, input,
                     aux) +
           r1cs_part(m.scaled_start, m.scaled_cols, m.scaled_coeffs, r, active, warp_rows,
                     coeffs, input, aux);
}

// The grid covers the rows in whole warps (blocks of 256); lanes past the last row take
// part in their warp's long rows and write nothing.
__device__ __forceinline__ void r1cs_evaluate(csr_part A, csr_part B, csr_part C,
                                              const fr_t* coeffs, const fr_t* input,
                                              const fr_t* aux, uint32_t rows,
                                              uint32_t warp_rows, fr_t* a, fr_t* b, fr_t* c,
                                              unsigned long long* unsatisfied)
{
    const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    const bool active = r < rows;
    const fr_t va = r1cs_row(A, r, active, warp_rows, coeffs, input, aux);
    const fr_t vb = r1cs_row(B, r, active, warp_rows, coeffs, input, aux);
    const fr_t vc = r1cs_row(C, r, active, warp_rows, coeffs, input, aux);
    if (!active) return;
    va.store(a + r);
    vb.store(b + r);
    vc.store(c + r);
    // B is the constant one or a bit in most rows of Filecoin's circuits: no product needed.
    const bool ok = vb.is_zero() ? vc.is_zero()
                  : r1cs_is_one(vb) ? (va - vc).is_zero()
                                    : (va * vb - vc).is_zero();
    if (!ok) atomicAdd(unsatisfied, 1ull);
}

}  // namespace cuzk
