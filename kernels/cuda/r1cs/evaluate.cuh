// a = A w, b = B w, c = C w from a circuit's recorded constraint matrices
// (cuzk-core/src/matrices): each matrix is two CSR parts over the same rows, unit terms (a
// column) and scaled terms (a column and an index into one coefficient table). A column is
// a variable: bit 31 set for an input, clear for an aux variable.
//
// One thread per row, all three matrices, then the row's check a * b == c: the matrices hold
// what a full synthesis would have computed only if the witness satisfies every row, and an
// unsatisfied row is counted so the host can refuse the result (a stale matrix set, a
// malformed vanilla proof) instead of proving it.
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

__device__ __forceinline__ fr_t r1cs_row(const csr_part& m, uint32_t r, const fr_t* coeffs,
                                         const fr_t* input, const fr_t* aux)
{
    fr_t acc = fr_t::zero();
    for (uint32_t i = m.unit_start[r], end = m.unit_start[r + 1]; i < end; i++)
        acc = acc + r1cs_value(m.unit_cols[i], input, aux);
    for (uint32_t i = m.scaled_start[r], end = m.scaled_start[r + 1]; i < end; i++) {
        const fr_t v = r1cs_value(m.scaled_cols[i], input, aux);
        // Most scaled terms multiply a bit (packing, boolean gadgets): the term is the
        // coefficient or nothing.
        if (v.is_zero()) continue;
        const fr_t k = fr_t::load(coeffs + m.scaled_coeffs[i]);
        acc = acc + (r1cs_is_one(v) ? k : v * k);
    }
    return acc;
}

__device__ __forceinline__ void r1cs_evaluate(csr_part A, csr_part B, csr_part C,
                                              const fr_t* coeffs, const fr_t* input,
                                              const fr_t* aux, uint32_t rows, fr_t* a, fr_t* b,
                                              fr_t* c, unsigned long long* unsatisfied)
{
    const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const fr_t va = r1cs_row(A, r, coeffs, input, aux);
    const fr_t vb = r1cs_row(B, r, coeffs, input, aux);
    const fr_t vc = r1cs_row(C, r, coeffs, input, aux);
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
