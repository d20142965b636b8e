// Fused LayerNorm over the last `cols` elements of each of `rows` float32 rows, and its backward.
//
// Forward (one block per row): mean, then the biased variance of the centered row (two passes,
// as the generic kernel computes it: no E[x^2] - E[x]^2 cancellation), then
// y = (x - mean) * rstd * w + b. It saves mean and rstd = 1 / sqrt(var + eps) per row for the
// backward, as the generic kernel does.
//
// Backward, input gradient (one block per row), with xhat = (x - mean) * rstd and gxhat = dy * w:
//     dx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat))
// Backward, weight and bias gradients: column sums over rows of dy * xhat and dy. Block
// (32, 8) owns 32 columns and a chunk of rows; a warp reads 32 consecutive columns of one row
// (coalesced); the 8 partial sums of each column are added in shared memory and one partial
// per (row chunk, column) is written. The host sums the partials over the chunks.
//
// w and b are optional: has_w / has_b say whether the pointers are real.

#include "common.cuh"

extern "C" __global__ void __launch_bounds__(1024)
layer_norm_forward(const float* __restrict__ x, const float* __restrict__ w,
                   const float* __restrict__ b, float* __restrict__ y, float* __restrict__ mean_out,
                   float* __restrict__ rstd_out, int cols, float eps, int has_w, int has_b) {
    __shared__ float scratch[32];
    const long long row = blockIdx.x;
    const float* xr = x + row * cols;
    float* yr = y + row * cols;

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
    const float mean = block_sum(s, scratch) / (float)cols;

    float sq = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float d = xr[c] - mean;
        sq += d * d;
    }
    const float var = block_sum(sq, scratch) / (float)cols;
    const float rstd = 1.0f / sqrtf(var + eps);

    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = (xr[c] - mean) * rstd;
        if (has_w) v *= w[c];
        if (has_b) v += b[c];
        yr[c] = v;
    }
    if (threadIdx.x == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}

extern "C" __global__ void __launch_bounds__(1024)
layer_norm_backward_input(const float* __restrict__ dy, const float* __restrict__ x,
                          const float* __restrict__ w, const float* __restrict__ mean_in,
                          const float* __restrict__ rstd_in, float* __restrict__ dx, int cols,
                          int has_w) {
    __shared__ float2 scratch[32];
    const long long row = blockIdx.x;
    const float* dyr = dy + row * cols;
    const float* xr = x + row * cols;
    float* dxr = dx + row * cols;
    const float mean = mean_in[row];
    const float rstd = rstd_in[row];

    float2 sums = make_float2(0.0f, 0.0f);  // (sum gxhat, sum gxhat * xhat)
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float gxhat = has_w ? dyr[c] * w[c] : dyr[c];
        const float xhat = (xr[c] - mean) * rstd;
        sums.x += gxhat;
        sums.y += gxhat * xhat;
    }
    sums = block_sum2(sums, scratch);
    const float mean_g = sums.x / (float)cols;
    const float mean_gx = sums.y / (float)cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float gxhat = has_w ? dyr[c] * w[c] : dyr[c];
        const float xhat = (xr[c] - mean) * rstd;
        dxr[c] = rstd * (gxhat - mean_g - xhat * mean_gx);
    }
}

#define LN_COLS 32
#define LN_ROWS 8

extern "C" __global__ void __launch_bounds__(LN_COLS * LN_ROWS)
layer_norm_backward_params(const float* __restrict__ dy, const float* __restrict__ x,
                           const float* __restrict__ mean_in, const float* __restrict__ rstd_in,
                           float* __restrict__ dw_partial, float* __restrict__ db_partial,
                           int rows, int cols, int rows_per_chunk) {
    __shared__ float dw_s[LN_ROWS][LN_COLS + 1];  // +1: no bank conflicts on the column sums
    __shared__ float db_s[LN_ROWS][LN_COLS + 1];
    const int tx = threadIdx.x % LN_COLS;
    const int ty = threadIdx.x / LN_COLS;
    const int col = blockIdx.x * LN_COLS + tx;
    const int first = blockIdx.y * rows_per_chunk;
    const int last = min(rows, first + rows_per_chunk);

    float dw = 0.0f, db = 0.0f;
    if (col < cols) {
        for (int r = first + ty; r < last; r += LN_ROWS) {
            const long long i = (long long)r * cols + col;
            const float g = dy[i];
            dw += g * (x[i] - mean_in[r]) * rstd_in[r];
            db += g;
        }
    }
    dw_s[ty][tx] = dw;
    db_s[ty][tx] = db;
    __syncthreads();
    if (ty == 0 && col < cols) {
#pragma unroll
        for (int k = 1; k < LN_ROWS; ++k) {
            dw += dw_s[k][tx];
            db += db_s[k][tx];
        }
        const long long out = (long long)blockIdx.y * cols + col;
        dw_partial[out] = dw;
        db_partial[out] = db;
    }
}
