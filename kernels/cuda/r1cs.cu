// a, b, c of a Groth16 partition from its circuit's recorded constraint matrices and the
// witness (r1cs/evaluate.cuh), called from kernels/src/r1cs.rs: the host uploads the
// assignment, not a, b and c (a third of the bytes), and does no evaluation of its own.
#include "r1cs/evaluate.cuh"

using namespace cuzk;

extern "C" __global__ void __launch_bounds__(256)
r1cs_evaluate_rows(const uint32_t* a_us, const uint32_t* a_uc, const uint32_t* a_ss,
                   const uint32_t* a_sc, const uint32_t* a_sk, const uint32_t* b_us,
                   const uint32_t* b_uc, const uint32_t* b_ss, const uint32_t* b_sc,
                   const uint32_t* b_sk, const uint32_t* c_us, const uint32_t* c_uc,
                   const uint32_t* c_ss, const uint32_t* c_sc, const uint32_t* c_sk,
                   const fr_t* coeffs, const fr_t* input, const fr_t* aux, uint32_t rows,
                   uint32_t warp_rows, fr_t* a, fr_t* b, fr_t* c,
                   unsigned long long* unsatisfied)
{
    r1cs_evaluate(csr_part{a_us, a_uc, a_ss, a_sc, a_sk}, csr_part{b_us, b_uc, b_ss, b_sc, b_sk},
                  csr_part{c_us, c_uc, c_ss, c_sc, c_sk}, coeffs, input, aux, rows, warp_rows,
                  a, b, c, unsatisfied);
}
