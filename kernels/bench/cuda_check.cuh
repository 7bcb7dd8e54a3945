// CK(call): a CUDA runtime call in the harnesses and benches, which stop at its first error
// with the file, the line and the call that failed.
#pragma once
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                               \
    do {                                                                                    \
        cudaError_t e_ = (x);                                                               \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

// One timed run of `launch()` (CUDA events, ms): one-off work such as making a bench's points.
template <class F>
static float once_ms(F launch) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaGetLastError());
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return ms;
}

// The fastest of three timed runs of `launch()` (CUDA events, ms), after one untimed
// warm-up run.
template <class F>
static float best_ms(F launch) {
    float best = 1e30f;
    for (int r = 0; r < 4; r++) {
        float ms = once_ms(launch);
        if (r) best = ms < best ? ms : best;
    }
    return best;
}
