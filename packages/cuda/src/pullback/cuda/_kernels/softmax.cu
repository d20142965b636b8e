// Fused softmax over the last axis of a (rows x cols) float32 array, and its backward.
//
// One block per row (gridDim.x = rows; blockDim.x a power of two from 32 to 1024, chosen by the
// host). The forward reads the row twice instead of three times: the running maximum and the
// sum of exponentials are found in one pass (the "online softmax": when the maximum grows, the
// sum so far is rescaled), then a second pass writes exp(x - max) / sum.
//
// Semantics match the generic kernel (max subtracted, exp, divide): -inf entries get 0, a row
// of -inf only gives NaN, a NaN anywhere in the row gives a row of NaN.

#include "common.cuh"

// Merge the running (max, sum) pair of another thread into ours. An empty pair has sum 0 and
// max -inf; it must not turn the result into NaN through exp(-inf - -inf).
__device__ __forceinline__ void merge_max_sum(float& m, float& s, float m2, float s2) {
    if (s2 == 0.0f && !isnan(m2)) return;
    if (s == 0.0f && !isnan(m)) {
        m = m2;
        s = s2;
        return;
    }
    const float top = fmaxf(m, m2);
    if (isnan(m) || isnan(m2)) {
        m = s = PB_NAN;
        return;
    }
    s = s * expf(m - top) + s2 * expf(m2 - top);
    m = top;
}

extern "C" __global__ void __launch_bounds__(1024)
softmax_forward(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch_m[32];
    __shared__ float scratch_s[32];
    const long long row = blockIdx.x;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;

    float m = PB_NEG_INF, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = xr[c];
        if (v == PB_NEG_INF) continue;  // contributes exp(-inf) = 0
        if (isnan(v)) {
            m = s = PB_NAN;
            continue;
        }
        if (isnan(m)) continue;
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    // Warp, then block: merge the pairs.
#pragma unroll
    for (int offset = PB_WARP / 2; offset > 0; offset >>= 1) {
        const float m2 = __shfl_xor_sync(PB_FULL_MASK, m, offset);
        const float s2 = __shfl_xor_sync(PB_FULL_MASK, s, offset);
        merge_max_sum(m, s, m2, s2);
    }
    const int lane = threadIdx.x % PB_WARP;
    const int warp = threadIdx.x / PB_WARP;
    if (lane == 0) {
        scratch_m[warp] = m;
        scratch_s[warp] = s;
    }
    __syncthreads();
    const int warps = blockDim.x / PB_WARP;
    m = lane < warps ? scratch_m[lane] : PB_NEG_INF;
    s = lane < warps ? scratch_s[lane] : 0.0f;
#pragma unroll
    for (int offset = PB_WARP / 2; offset > 0; offset >>= 1) {
        const float m2 = __shfl_xor_sync(PB_FULL_MASK, m, offset);
        const float s2 = __shfl_xor_sync(PB_FULL_MASK, s, offset);
        merge_max_sum(m, s, m2, s2);
    }
    // Every warp computed the same (m, s). A row of -inf only: s == 0, and 0/0 gives NaN.
    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = expf(xr[c] - m) * inv;
}

// dx = y * (dy - sum(dy * y)) along the row.
extern "C" __global__ void __launch_bounds__(1024)
softmax_backward(const float* __restrict__ dy, const float* __restrict__ y,
                 float* __restrict__ dx, int cols) {
    __shared__ float scratch[32];
    const long long row = blockIdx.x;
    const float* dyr = dy + row * cols;
    const float* yr = y + row * cols;
    float* dxr = dx + row * cols;

    float dot = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) dot += dyr[c] * yr[c];
    dot = block_sum(dot, scratch);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) dxr[c] = yr[c] * (dyr[c] - dot);
}
