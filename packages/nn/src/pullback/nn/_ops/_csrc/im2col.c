/* im2col and col2im for 2-d convolution on float32 NCHW arrays.
 *
 * cols has the layout (N, C, kh, kw, Ho, Wo): element (n, c, p, q, i, j) is input pixel
 * (n, c, i*sh - pt + p*dh, j*sw - pl + q*dw), 0 where that falls in the padding. im2col writes
 * it; col2im adds each element back into its pixel (the adjoint, used by the input gradient).
 * Each call handles planes (n, c) lo..hi. NumPy does both through strided views whose inner
 * dimension is one output row (a dozen elements for small images), where its loops spend more
 * time on bookkeeping than on data. */
#include <stdint.h>
#include <string.h>

/* the j range [*j_lo, *j_hi) whose column j*sw + c0 lies in 0..w-1 */
static void valid_columns(int64_t c0, int64_t sw, int64_t w, int64_t wo, int64_t *j_lo,
                          int64_t *j_hi) {
    int64_t lo = c0 < 0 ? (-c0 + sw - 1) / sw : 0;
    int64_t hi = c0 > w - 1 ? 0 : (w - 1 - c0) / sw + 1;
    *j_lo = lo < wo ? lo : wo;
    *j_hi = hi < wo ? hi : wo;
    if (*j_hi < *j_lo) *j_hi = *j_lo;
}

void im2col_f32(int64_t lo, int64_t hi, const float *restrict x, float *restrict cols,
                int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t ho, int64_t wo, int64_t sh,
                int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw) {
    for (int64_t plane = lo; plane < hi; plane++) {
        const float *xp = x + plane * h * w;
        float *cp = cols + plane * kh * kw * ho * wo;
        for (int64_t p = 0; p < kh; p++)
            for (int64_t q = 0; q < kw; q++) {
                int64_t c0 = q * dw - pl, j_lo, j_hi;
                valid_columns(c0, sw, w, wo, &j_lo, &j_hi);
                for (int64_t i = 0; i < ho; i++, cp += wo) {
                    int64_t r = i * sh - pt + p * dh;
                    if (r < 0 || r >= h) {
                        memset(cp, 0, (size_t)wo * sizeof(float));
                        continue;
                    }
                    const float *xr = xp + r * w;
                    for (int64_t j = 0; j < j_lo; j++) cp[j] = 0.0f;
                    if (sw == 1)
                        for (int64_t j = j_lo; j < j_hi; j++) cp[j] = xr[j + c0];
                    else
                        for (int64_t j = j_lo; j < j_hi; j++) cp[j] = xr[j * sw + c0];
                    for (int64_t j = j_hi; j < wo; j++) cp[j] = 0.0f;
                }
            }
    }
}

void col2im_f32(int64_t lo, int64_t hi, const float *restrict cols, float *restrict dx,
                int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t ho, int64_t wo, int64_t sh,
                int64_t sw, int64_t pt, int64_t pl, int64_t dh, int64_t dw) {
    for (int64_t plane = lo; plane < hi; plane++) {
        float *dp = dx + plane * h * w;
        const float *cp = cols + plane * kh * kw * ho * wo;
        memset(dp, 0, (size_t)(h * w) * sizeof(float));
        for (int64_t p = 0; p < kh; p++)
            for (int64_t q = 0; q < kw; q++) {
                int64_t c0 = q * dw - pl, j_lo, j_hi;
                valid_columns(c0, sw, w, wo, &j_lo, &j_hi);
                for (int64_t i = 0; i < ho; i++, cp += wo) {
                    int64_t r = i * sh - pt + p * dh;
                    if (r < 0 || r >= h) continue;
                    float *dr = dp + r * w;
                    if (sw == 1)
                        for (int64_t j = j_lo; j < j_hi; j++) dr[j + c0] += cp[j];
                    else
                        for (int64_t j = j_lo; j < j_hi; j++) dr[j * sw + c0] += cp[j];
                }
            }
    }
}
