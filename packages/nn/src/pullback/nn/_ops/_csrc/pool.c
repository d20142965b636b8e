/* 2-d max pooling on float32 NCHW arrays, and its backward.
 *
 * Window (i, j) of a plane covers input positions (i*sh - pt + p*dh, j*sw - pl + q*dw) for
 * p < kh, q < kw; positions in the padding count as -infinity, as in the NumPy kernels of
 * pool.py (which pad with -inf), so that both give the same results bit for bit:
 *   - the forward takes NumPy's maximum over the offsets in raster order (a NaN anywhere in a
 *     window makes its maximum NaN);
 *   - the backward adds g[i, j] to the first position in raster order whose value equals the
 *     window's maximum y[i, j] (PyTorch's choice for ties); when that position is in the padding
 *     (a window of -inf) or none equals it (NaN), the gradient goes nowhere.
 * One pass per plane, where the NumPy kernels make several passes over strided views per
 * window offset. Each call handles planes (n, c) lo..hi. (Starting the forward's maximum at
 * -inf rather than at a window's first value changes nothing: -inf is maximum's identity.)
 *
 * What the callers guarantee (pullback/nn/_ops/pool.py checks it with geometry.py, through
 * _native.py's _geometry, before every call; nothing here checks it again):
 *   - x / dx hold N*C planes of h*w floats, y / g N*C planes of ho*wo floats, C-contiguous, dx
 *     overlapping none of the others; 0 <= lo <= hi <= N*C;
 *   - kh, kw, sh, sw, dh, dw >= 1, pt, pl >= 0;
 *   - ho, wo >= 1 and equal to (size + pad_before + pad_after - dilation*(k-1) - 1)/stride + 1,
 *     so every window starts inside the padded image;
 *   - the padded sizes are below 2^62 and the stride along an axis with one window is 1, so that
 *     no index below overflows int64. */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The value at padded position (r, c) of a plane: -inf in the padding. */
static inline float at(const float *plane, int64_t r, int64_t c, int64_t h, int64_t w) {
    return (r >= 0 && r < h && c >= 0 && c < w) ? plane[r * w + c] : -INFINITY;
}

/* NumPy's maximum(best, v): NaN if either is NaN, else the larger. */
static inline float maximum(float best, float v) {
    return (v > best || v != v) ? v : best;
}

/* the j range [*j_lo, *j_hi) whose column j*sw + c0 lies in 0..w-1 (as im2col.c's) */
static void valid_columns(int64_t c0, int64_t sw, int64_t w, int64_t wo, int64_t *j_lo,
                          int64_t *j_hi) {
    int64_t lo = c0 < 0 ? (-c0 + sw - 1) / sw : 0;
    int64_t hi = c0 > w - 1 ? 0 : (w - 1 - c0) / sw + 1;
    *j_lo = lo < wo ? lo : wo;
    *j_hi = hi < wo ? hi : wo;
    if (*j_hi < *j_lo) *j_hi = *j_lo;
}

/* Plane by plane: start from -inf (the padding's value, and maximum's identity), then for each
 * window offset (p, q) take the maximum with the input row it reads, over the windows where
 * that offset falls inside the image (the column range is found once per offset and plane). */
void max_pool2d_f32(int64_t lo, int64_t hi, const float *x, float *y, int64_t h, int64_t w,
                    int64_t kh, int64_t kw, int64_t ho, int64_t wo, int64_t sh, int64_t sw,
                    int64_t pt, int64_t pl, int64_t dh, int64_t dw) {
    for (int64_t plane = lo; plane < hi; plane++) {
        const float *xp = x + plane * h * w;
        float *yp = y + plane * ho * wo;
        for (int64_t k = 0; k < ho * wo; k++) yp[k] = -INFINITY;
        for (int64_t p = 0; p < kh; p++)
            for (int64_t q = 0; q < kw; q++) {
                int64_t c0 = q * dw - pl, j_lo, j_hi;
                valid_columns(c0, sw, w, wo, &j_lo, &j_hi);
                for (int64_t i = 0; i < ho; i++) {
                    int64_t r = i * sh - pt + p * dh;
                    if (r < 0 || r >= h) continue;
                    const float *restrict xrow = xp + r * w + c0;
                    float *restrict yrow = yp + i * wo;
                    if (sw == 1)
                        for (int64_t j = j_lo; j < j_hi; j++)
                            yrow[j] = maximum(yrow[j], xrow[j]);
                    else
                        for (int64_t j = j_lo; j < j_hi; j++)
                            yrow[j] = maximum(yrow[j], xrow[j * sw]);
                }
            }
    }
}

/* Window by window: the first offset in raster order whose value equals the maximum. Windows
 * inside the image skip the padding test and scan every offset backwards with a conditional
 * move, no branch (which offset holds a window's maximum is as good as random: an early exit
 * mispredicted about once per window, most of the time this kernel took). */
void max_pool2d_backward_f32(int64_t lo, int64_t hi, const float *g, const float *x,
                             const float *y, float *dx, int64_t h, int64_t w, int64_t kh,
                             int64_t kw, int64_t ho, int64_t wo, int64_t sh, int64_t sw,
                             int64_t pt, int64_t pl, int64_t dh, int64_t dw) {
    for (int64_t plane = lo; plane < hi; plane++) {
        const float *xp = x + plane * h * w;
        const float *gp = g + plane * ho * wo, *yp = y + plane * ho * wo;
        float *dp = dx + plane * h * w;
        memset(dp, 0, (size_t)(h * w) * sizeof(float));
        for (int64_t i = 0; i < ho; i++) {
            int64_t r0 = i * sh - pt;
            int rows_inside = r0 >= 0 && r0 + (kh - 1) * dh < h;
            for (int64_t j = 0; j < wo; j++) {
                const float target = yp[i * wo + j];
                int64_t c0 = j * sw - pl;
                if (rows_inside && c0 >= 0 && c0 + (kw - 1) * dw < w) {
                    int64_t first = -1;
                    for (int64_t p = kh - 1; p >= 0; p--)
                        for (int64_t q = kw - 1; q >= 0; q--) {
                            int64_t k = (r0 + p * dh) * w + c0 + q * dw;
                            /* first = (xp[k] == target) ? k : first, as arithmetic (gcc
                             * turned the ternary into a branch) */
                            first ^= (first ^ k) & -(int64_t)(xp[k] == target);
                        }
                    if (first >= 0) dp[first] += gp[i * wo + j];
                    continue;
                }
                for (int64_t p = 0; p < kh; p++)
                    for (int64_t q = 0; q < kw; q++) {
                        int64_t r = r0 + p * dh, c = c0 + q * dw;
                        if (at(xp, r, c, h, w) == target) {
                            /* a first maximum in the padding (a window of -inf) takes the
                             * gradient out of the image, as the NumPy kernel's crop does */
                            if (r >= 0 && r < h && c >= 0 && c < w) dp[r * w + c] += gp[i * wo + j];
                            goto next_window;
                        }
                    }
            next_window:;
            }
        }
    }
}
