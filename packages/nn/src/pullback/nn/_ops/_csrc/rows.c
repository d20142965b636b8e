/* Row kernels of pullback.nn on float32: softmax (with attention's scale and causal mask folded
 * in), its backward, and layer norm forward and backward. Each function handles rows lo..hi of a
 * (rows x cols) C-contiguous array (the layer-norm parameter gradients: columns lo..hi), so that
 * pullback.native.run_rows can give each thread its share.
 *
 * Row sums keep LANES independent float partial sums per chunk of CHUNK elements and add the
 * chunks in double: strict IEEE order forbids gcc from vectorizing one running sum, and the
 * partial sums are also more accurate than one.
 *
 * What the callers guarantee (pullback/nn/_ops/_native.py, which returns NotImplemented for
 * anything else; nothing here checks it again):
 *   - every array is C-contiguous float32 of rows x cols elements (cols >= 1), except w and b
 *     (cols elements, or NULL), mean and rstd (rows elements) and gw, gb (cols elements);
 *   - outputs do not overlap inputs, except softmax_f32's y, which may be x itself;
 *   - 0 <= lo <= hi <= rows (columns for layer_norm_backward_params_f32), period >= 1. */
#include "pullback_math.h"

#define LANES 16
#define CHUNK 256

/* Sums of a row: float partial sums in LANES lanes over chunks of CHUNK elements (this is what
 * gcc vectorizes), chunk totals added in double. */
static double row_sum(const float *x, int64_t n) {
    double total = 0;
    for (int64_t c0 = 0; c0 < n; c0 += CHUNK) {
        int64_t m = n - c0 < CHUNK ? n - c0 : CHUNK, j = 0;
        const float *xc = x + c0;
        float acc[LANES] = {0};
        for (; j + LANES <= m; j += LANES)
            for (int k = 0; k < LANES; k++) acc[k] += xc[j + k];
        float s = 0;
        for (int k = 0; k < LANES; k++) s += acc[k];
        for (; j < m; j++) s += xc[j];
        total += s;
    }
    return total;
}

/* sum of x * (y - mu) * rs (mu = 0, rs = 1: the dot product; else layer norm's sum of
 * gxhat * xhat) */
static double row_dot(const float *x, const float *y, int64_t n, float mu, float rs) {
    double total = 0;
    for (int64_t c0 = 0; c0 < n; c0 += CHUNK) {
        int64_t m = n - c0 < CHUNK ? n - c0 : CHUNK, j = 0;
        const float *xc = x + c0, *yc = y + c0;
        float acc[LANES] = {0};
        for (; j + LANES <= m; j += LANES)
            for (int k = 0; k < LANES; k++) acc[k] += xc[j + k] * ((yc[j + k] - mu) * rs);
        float s = 0;
        for (int k = 0; k < LANES; k++) s += acc[k];
        for (; j < m; j++) s += xc[j] * ((yc[j] - mu) * rs);
        total += s;
    }
    return total;
}

/* max of scale * x[j] over j < seen. NaN elements are skipped here: they make the row's sum of
 * exponentials NaN, so the whole row comes out NaN, as NumPy's kernel gives. */
static float row_max_scaled(const float *x, int64_t n, int64_t seen, float scale) {
    /* 8 lanes, unconditional loads and a select: the form gcc vectorizes (a conditional load or
     * fmaxf, a libm call without -ffinite-math-only, keeps the loop scalar) */
    float acc[8];
    for (int k = 0; k < 8; k++) acc[k] = -__builtin_inff();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++) {
            float v = x[j + k] * scale;
            v = j + k < seen ? v : -__builtin_inff();
            acc[k] = v > acc[k] ? v : acc[k];
        }
    float m = -__builtin_inff();
    for (int k = 0; k < 8; k++) m = acc[k] > m ? acc[k] : m;
    for (; j < seen; j++) {
        float v = x[j] * scale;
        m = v > m ? v : m;
    }
    return m;
}

/* y = softmax(scale * x) along rows; with causal != 0, row r is query r % period and sees
 * columns 0..(r % period) only (the others get weight 0). x and y may be the same array.
 * Masked columns go through the same loops as -inf (exp gives 0): whole-row loops vectorize
 * without the scalar remainders that rows of varying length would cost. */
void softmax_f32(int64_t lo, int64_t hi, const float *x, float *y, int64_t cols, int64_t period,
                 int64_t causal, float scale) {
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        int64_t seen = causal && r % period + 1 < cols ? r % period + 1 : cols;
        float m = row_max_scaled(xr, cols, seen, scale);
        for (int64_t j = 0; j < cols; j++) {
            float v = xr[j] * scale - m;
            yr[j] = pb_exp32(j < seen ? v : -__builtin_inff());
        }
        float inv = (float)(1.0 / row_sum(yr, cols));
        for (int64_t j = 0; j < cols; j++) yr[j] *= inv;
    }
}

/* gx = y * (gy - sum(gy * y)) along rows. */
void softmax_backward_f32(int64_t lo, int64_t hi, const float *restrict gy,
                          const float *restrict y, float *restrict gx, int64_t cols) {
    for (int64_t r = lo; r < hi; r++) {
        const float *gr = gy + r * cols, *yr = y + r * cols;
        float *out = gx + r * cols;
        float s = (float)row_dot(gr, yr, cols, 0.0f, 1.0f);
        for (int64_t j = 0; j < cols; j++) out[j] = yr[j] * (gr[j] - s);
    }
}

/* One row of layer_norm_f32 in double: for rows whose float statistics overflow (|x - mean|
 * above ~1.8e19 squares to inf in float, and a float rstd of 0 would turn the row into zeros).
 * In double nothing a float row holds can overflow, so finite rows come out finite. */
static void layer_norm_row_f64(const float *x, const float *w, const float *b, float *y,
                               float *mean, float *rstd, int64_t cols, float eps) {
    double s = 0, ss = 0;
    for (int64_t j = 0; j < cols; j++) s += x[j];
    double mu = s / (double)cols;
    for (int64_t j = 0; j < cols; j++) ss += ((double)x[j] - mu) * ((double)x[j] - mu);
    double rs = 1.0 / __builtin_sqrt(ss / (double)cols + eps);
    for (int64_t j = 0; j < cols; j++) {
        double v = ((double)x[j] - mu) * rs;
        if (w) v *= w[j];
        if (b) v += b[j];
        y[j] = (float)v;
    }
    *mean = (float)mu;
    *rstd = (float)rs;
}

/* y = (x - mean) * rstd * w + b per row (w, b may be NULL); mean and rstd saved per row. */
void layer_norm_f32(int64_t lo, int64_t hi, const float *restrict x, const float *restrict w,
                    const float *restrict b, float *restrict y, float *restrict mean,
                    float *restrict rstd, int64_t cols, float eps) {
    for (int64_t r = lo; r < hi; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mu = (float)(row_sum(xr, cols) / (double)cols);
        /* sum of (x - mu)^2, as the dot of x - mu with itself, x - mu written to y first */
        for (int64_t j = 0; j < cols; j++) yr[j] = xr[j] - mu;
        double ss = row_dot(yr, yr, cols, 0.0f, 1.0f);
        if (!__builtin_isfinite(ss) || !__builtin_isfinite(mu)) {
            /* overflow, or a NaN/inf in the row (which gives NaN either way) */
            layer_norm_row_f64(xr, w, b, yr, mean + r, rstd + r, cols, eps);
            continue;
        }
        float rs = 1.0f / __builtin_sqrtf((float)(ss / (double)cols) + eps);
        int64_t j;
        mean[r] = mu;
        rstd[r] = rs;
        if (w && b)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mu) * rs * w[j] + b[j];
        else if (w)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mu) * rs * w[j];
        else if (b)
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mu) * rs + b[j];
        else
            for (j = 0; j < cols; j++) yr[j] = (xr[j] - mu) * rs;
    }
}

/* gx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat)), gxhat = g * w (w may be
 * NULL). */
void layer_norm_backward_input_f32(int64_t lo, int64_t hi, const float *restrict g,
                                   const float *restrict x, const float *restrict w,
                                   const float *restrict mean, const float *restrict rstd,
                                   float *restrict gx, int64_t cols) {
    for (int64_t r = lo; r < hi; r++) {
        const float *gr = g + r * cols, *xr = x + r * cols;
        float *out = gx + r * cols;
        float mu = mean[r], rs = rstd[r];
        /* out first holds gxhat, then the gradient */
        if (w)
            for (int64_t j = 0; j < cols; j++) out[j] = gr[j] * w[j];
        else
            for (int64_t j = 0; j < cols; j++) out[j] = gr[j];
        double sg = row_sum(out, cols), sgx = row_dot(out, xr, cols, mu, rs);
        float a = (float)(sg / (double)cols), c = (float)(sgx / (double)cols);
        for (int64_t j = 0; j < cols; j++) out[j] = rs * (out[j] - a - (xr[j] - mu) * rs * c);
    }
}

#define PARAM_BLOCK 64

/* gw[j] = sum over rows of g * xhat, gb[j] = sum over rows of g, for columns lo..hi. */
void layer_norm_backward_params_f32(int64_t lo, int64_t hi, const float *restrict g,
                                    const float *restrict x, const float *restrict mean,
                                    const float *restrict rstd, float *restrict gw,
                                    float *restrict gb, int64_t rows, int64_t cols) {
    for (int64_t c0 = lo; c0 < hi; c0 += PARAM_BLOCK) {
        int64_t n = hi - c0 < PARAM_BLOCK ? hi - c0 : PARAM_BLOCK;
        double aw[PARAM_BLOCK] = {0}, ab[PARAM_BLOCK] = {0};
        for (int64_t r = 0; r < rows; r++) {
            const float *gr = g + r * cols + c0, *xr = x + r * cols + c0;
            float mu = mean[r], rs = rstd[r];
            for (int64_t j = 0; j < n; j++) {
                aw[j] += (double)gr[j] * ((xr[j] - mu) * rs);
                ab[j] += gr[j];
            }
        }
        for (int64_t j = 0; j < n; j++) {
            gw[c0 + j] = (float)aw[j];
            gb[c0 + j] = (float)ab[j];
        }
    }
}
