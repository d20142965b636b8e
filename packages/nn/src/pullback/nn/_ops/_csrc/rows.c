/* Row kernels of pullback.nn: softmax (with attention's scale and causal mask folded in), its
 * backward, and layer norm forward and backward, on float32; log-softmax and softmax
 * cross-entropy (integer targets) forward and backward, on float32 and float64. Each function
 * handles rows lo..hi of a (rows x cols) C-contiguous array (layer norm's backward: blocks of
 * rows lo..hi), so that pullback.native.run_rows can give each thread its share.
 *
 * Row sums keep LANES independent float partial sums per chunk of CHUNK elements and add the
 * chunks in double: strict IEEE order forbids gcc from vectorizing one running sum, and the
 * partial sums are also more accurate than one. (Float64 rows: LANES double partial sums.)
 *
 * What the callers guarantee (pullback/nn/_ops/_native.py, which returns NotImplemented for
 * anything else; nothing here checks it again):
 *   - every array is C-contiguous, of the kernel's float type, of rows x cols elements
 *     (cols >= 1), except w and b (cols elements, or NULL), layer norm backward's add (rows x
 *     cols, or NULL), mean and rstd (rows elements), pw and pb (blocks x cols doubles, or
 *     NULL), the cross-entropy's target (rows int64), loss and g (rows elements) and stats
 *     (2 x rows elements);
 *   - outputs do not overlap inputs, except softmax_f32's y, which may be x itself;
 *   - 0 <= lo <= hi <= rows (blocks of block_rows >= 1 rows for layer_norm_backward_f32),
 *     period >= 1.
 * A cross-entropy target outside 0..cols-1 (and not ignore_index) is never read through: its
 * loss is NaN and its row's gradient has no one-hot term (the callers reject such targets
 * before this, with a typed error). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pullback_math.h"

#define LANES 16
#define CHUNK 256

/* GCC/clang vector types: gcc 12 leaves the array-of-lanes form of a max loop scalar (one maxss
 * per element), so the row maxima below are written with these. */
typedef float f32x16 __attribute__((vector_size(64)));
typedef int32_t i32x16 __attribute__((vector_size(64)));
/* LANES partial sums are one such vector (vector_sum copies one into the other) */
typedef char lanes_are_one_vector[LANES == sizeof(f32x16) / sizeof(float) ? 1 : -1];

/* The sum of a chunk's LANES partial sums, as a tree (halves added pairwise: depth log2 LANES).
 * Added one after the other they made a chain of LANES dependent additions, which a layer
 * norm's row waited on three times (its mean, the mean's correction, the variance): a third of
 * its forward's time on the GPT's rows of 128. */
static inline float lanes_sum(float acc[LANES]) {
    for (int half = LANES / 2; half >= 1; half /= 2)
        for (int k = 0; k < half; k++) acc[k] += acc[k + half];
    return acc[0];
}

/* lanes_sum of LANES partial sums held in one vector */
static inline float vector_sum(f32x16 v) {
    float acc[LANES];
    memcpy(acc, &v, sizeof acc);
    return lanes_sum(acc);
}

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
        float s = lanes_sum(acc);
        for (; j < m; j++) s += xc[j];
        total += s;
    }
    return total;
}

/* sum of x * y over a row (lanes per chunk, chunks in double) */
static double row_dot(const float *x, const float *y, int64_t n) {
    double total = 0;
    for (int64_t c0 = 0; c0 < n; c0 += CHUNK) {
        int64_t m = n - c0 < CHUNK ? n - c0 : CHUNK, j = 0;
        const float *xc = x + c0, *yc = y + c0;
        float acc[LANES] = {0};
        for (; j + LANES <= m; j += LANES)
            for (int k = 0; k < LANES; k++) acc[k] += xc[j + k] * yc[j + k];
        float s = lanes_sum(acc);
        for (; j < m; j++) s += xc[j] * yc[j];
        total += s;
    }
    return total;
}

/* The sum of d = x[j] - mu over a row and the sum of d * d, in one pass (lanes per chunk,
 * chunks in double, as row_sum). */
static void row_sums_centered(const float *x, int64_t n, float mu, double *sum, double *squares) {
    double total = 0, total_sq = 0;
    for (int64_t c0 = 0; c0 < n; c0 += CHUNK) {
        int64_t m = n - c0 < CHUNK ? n - c0 : CHUNK, j = 0;
        const float *xc = x + c0;
        /* the vector type: gcc 12 leaves two arrays of lane sums in one loop scalar */
        f32x16 vs = {0}, vsq = {0};
        for (; j + LANES <= m; j += LANES) {
            f32x16 d;
            memcpy(&d, xc + j, sizeof d);
            d -= mu;
            vs += d;
            vsq += d * d;
        }
        float s = vector_sum(vs), sq = vector_sum(vsq);
        for (; j < m; j++) {
            float d = xc[j] - mu;
            s += d;
            sq += d * d;
        }
        total += s;
        total_sq += sq;
    }
    *sum = total;
    *squares = total_sq;
}

/* max of scale * x[j] over j < seen. NaN elements are skipped here (v > acc is false for NaN):
 * they make the row's sum of exponentials NaN, so the whole row comes out NaN, as NumPy's kernel
 * gives. */
static float row_max_scaled(const float *x, int64_t seen, float scale) {
    f32x16 acc;
    for (int k = 0; k < 16; k++) acc[k] = -__builtin_inff();
    int64_t j = 0;
    for (; j + 16 <= seen; j += 16) {
        f32x16 v;
        memcpy(&v, x + j, sizeof v);
        v = v * scale;
        i32x16 greater = v > acc; /* all ones where v > acc */
        acc = (f32x16)(((i32x16)v & greater) | ((i32x16)acc & ~greater));
    }
    float m = -__builtin_inff();
    for (int k = 0; k < 16; k++) m = acc[k] > m ? acc[k] : m;
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
        float m = row_max_scaled(xr, seen, scale);
        /* the exponentials are summed as they are written (row_sum's lanes and chunks, so the
         * same total as summing them after: one pass over the row fewer) */
        double total = 0;
        for (int64_t c0 = 0; c0 < cols; c0 += CHUNK) {
            int64_t len = cols - c0 < CHUNK ? cols - c0 : CHUNK, j = 0;
            const float *xc = xr + c0;
            float *yc = yr + c0;
            float acc[LANES] = {0};
            for (; j + LANES <= len; j += LANES)
                for (int k = 0; k < LANES; k++) {
                    float v = xc[j + k] * scale - m;
                    float e = pb_exp32(c0 + j + k < seen ? v : -__builtin_inff());
                    yc[j + k] = e;
                    acc[k] += e;
                }
            float s = lanes_sum(acc);
            for (; j < len; j++) {
                float v = xc[j] * scale - m;
                float e = pb_exp32(c0 + j < seen ? v : -__builtin_inff());
                yc[j] = e;
                s += e;
            }
            total += s;
        }
        float inv = (float)(1.0 / total);
        for (int64_t j = 0; j < cols; j++) yr[j] *= inv;
    }
}

/* gx = y * (gy - sum(gy * y)) along rows. */
void softmax_backward_f32(int64_t lo, int64_t hi, const float *restrict gy,
                          const float *restrict y, float *restrict gx, int64_t cols) {
    for (int64_t r = lo; r < hi; r++) {
        const float *gr = gy + r * cols, *yr = y + r * cols;
        float *out = gx + r * cols;
        float s = (float)row_dot(gr, yr, cols);
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
        /* The corrected two-pass algorithm: mu is off by its rounding (an ulp of the values),
         * which rstd ~ 1/sqrt(eps) would blow up in a constant row; the mean of d = x - mu is
         * that error c (exactly, for a constant row, whose x - (mu + c) is then exactly 0, as
         * in PyTorch). The sum of (d - c)^2 is sum(d^2) - c * sum(d), both sums taken in the
         * one pass over d (a pass writing d and two reading it back cost a third of the
         * forward). */
        double sum_d, sum_d2;
        row_sums_centered(xr, cols, mu, &sum_d, &sum_d2);
        float correction = (float)(sum_d / (double)cols);
        double ss = sum_d2 - (double)correction * sum_d;
        ss = ss < 0 ? 0 : ss; /* rounding in a row whose variance is below it (NaN kept) */
        mu += correction;
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

/* One pass of layer norm's backward over a row: gxhat = g * w (g without w) into out, the
 * parameter sums sw += g * xhat and sb += g (when sw is not NULL), and the row's sums of gxhat
 * and of gxhat * xhat into *sg and *sgx, xhat = (x - mu) * rs. The same operations in the same
 * order as the four passes they replace (the parameter sums, gxhat, and row_sum's lanes per
 * chunk and chunks in double for both sums), so the same bits, with the row read once. */
static void layer_norm_backward_sums(const float *restrict g, const float *restrict x,
                                     const float *restrict w, float *restrict out,
                                     float *restrict sw, float *restrict sb, int64_t n, float mu,
                                     float rs, double *sg, double *sgx) {
    double total = 0, total_x = 0;
    for (int64_t c0 = 0; c0 < n; c0 += CHUNK) {
        const int64_t m = n - c0 < CHUNK ? n - c0 : CHUNK;
        int64_t j = c0;
        f32x16 vs = {0}, vsx = {0};
        for (; j + LANES <= c0 + m; j += LANES) {
            f32x16 gv, xv, d;
            memcpy(&gv, g + j, sizeof gv);
            memcpy(&xv, x + j, sizeof xv);
            const f32x16 xhat = (xv - mu) * rs;
            if (sw) {
                f32x16 swv, sbv;
                memcpy(&swv, sw + j, sizeof swv);
                memcpy(&sbv, sb + j, sizeof sbv);
                swv += gv * xhat;
                sbv += gv;
                memcpy(sw + j, &swv, sizeof swv);
                memcpy(sb + j, &sbv, sizeof sbv);
            }
            d = gv;
            if (w) {
                f32x16 wv;
                memcpy(&wv, w + j, sizeof wv);
                d = gv * wv;
            }
            memcpy(out + j, &d, sizeof d);
            vs += d;
            vsx += d * xhat;
        }
        float s = vector_sum(vs), sx = vector_sum(vsx);
        for (; j < c0 + m; j++) {
            const float xhat = (x[j] - mu) * rs;
            if (sw) {
                sw[j] += g[j] * xhat;
                sb[j] += g[j];
            }
            const float d = w ? g[j] * w[j] : g[j];
            out[j] = d;
            s += d;
            sx += d * xhat;
        }
        total += s;
        total_x += sx;
    }
    *sg = total;
    *sgx = total_x;
}

/* Layer norm's backward over the row blocks lo..hi (block k: rows k * block_rows up to rows):
 * gx = rstd * (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat)), gxhat = g * w (w may be
 * NULL), plus add where add is not NULL (a residual branch's gradient, summed in the same pass:
 * add + gx, the float sum a separate add would make, without writing gx and reading it back),
 * and, when pw and pb are not NULL, the block's sums over its rows of g * xhat (w's
 * gradient) and of g (b's) into row k of pw and pb (blocks x cols, doubles). One pass over g
 * and x, which the parameter sums read while the row is in cache. A block sums in float (64
 * rows: the error of a few ulp, as PyTorch's float sums), the caller adds the blocks in
 * double and in order, so the sums depend on block_rows, not on how the threads split the
 * blocks. Where the float scratch cannot be allocated the sums are NaN (never a silent 0). */
void layer_norm_backward_f32(int64_t lo, int64_t hi, const float *restrict g,
                             const float *restrict x, const float *restrict w,
                             const float *restrict mean, const float *restrict rstd,
                             float *restrict gx, const float *restrict add,
                             double *restrict pw, double *restrict pb, int64_t rows,
                             int64_t cols, int64_t block_rows) {
    float *sw = pw ? malloc(2 * (size_t)cols * sizeof(float)) : NULL, *sb = sw ? sw + cols : NULL;
    for (int64_t k = lo; k < hi; k++) {
        const int64_t first = k * block_rows;
        const int64_t end = first + block_rows < rows ? first + block_rows : rows;
        if (sw)
            for (int64_t j = 0; j < cols; j++) sw[j] = sb[j] = 0;
        for (int64_t r = first; r < end; r++) {
            const float *gr = g + r * cols, *xr = x + r * cols;
            float *out = gx + r * cols;
            float mu = mean[r], rs = rstd[r];
            /* out first holds gxhat, then the gradient */
            double sg, sgx;
            layer_norm_backward_sums(gr, xr, w, out, sw, sb, cols, mu, rs, &sg, &sgx);
            float a = (float)(sg / (double)cols), c = (float)(sgx / (double)cols);
            if (add) {
                const float *ar = add + r * cols;
                for (int64_t j = 0; j < cols; j++)
                    out[j] = ar[j] + rs * (out[j] - a - (xr[j] - mu) * rs * c);
            } else {
                for (int64_t j = 0; j < cols; j++)
                    out[j] = rs * (out[j] - a - (xr[j] - mu) * rs * c);
            }
        }
        if (pw)
            for (int64_t j = 0; j < cols; j++) {
                pw[k * cols + j] = sw ? sw[j] : NAN;
                pb[k * cols + j] = sw ? sb[j] : NAN;
            }
    }
    free(sw);
}

/* Layer norm's parameter gradients from layer_norm_backward_f32's block sums, for columns
 * lo..hi: gw[j] and gb[j] are column j of pw and pb (blocks x cols) summed over the blocks in
 * order, in double, then rounded to float once. */
void layer_norm_param_grads_f32(int64_t lo, int64_t hi, const double *restrict pw,
                                const double *restrict pb, float *restrict gw,
                                float *restrict gb, int64_t blocks, int64_t cols) {
    for (int64_t j = lo; j < hi; j++) {
        double sw = pw[j], sb = pb[j];
        for (int64_t k = 1; k < blocks; k++) {
            sw += pw[k * cols + j];
            sb += pb[k * cols + j];
        }
        gw[j] = (float)sw;
        gb[j] = (float)sb;
    }
}

/* ---- log-softmax and cross-entropy, float32 and float64 --------------------------------- */

/* exp in float64 as pb_exp32 computes it in float32: 2^n exp(r), n = round(x / ln 2),
 * |r| <= ln(2) / 2, exp(r) by its degree-13 Taylor polynomial (truncation error under 5e-18
 * relative: the result is within about one ulp). 2^n is applied in two halves so that subnormal
 * results come out as subnormals (exp(-745.2) and below are 0); above 709.78 it is +inf; NaN
 * stays NaN. Written so that gcc vectorizes the loops that call it, as libm's exp is not. */
static inline double pb_exp64(double x) {
    const double log2e = 1.4426950408889634, ln2_hi = 6.93147180369123816490e-01,
                 ln2_lo = 1.90821492927058770002e-10, top = 709.782712893384,
                 bottom = -745.2;
    double c = x > top ? top : (x < bottom ? bottom : x);
    c = c != c ? 0.0 : c; /* as in pb_exp32: a NaN n must never reach the integer conversion */
    double n = __builtin_floor(c * log2e + 0.5);
    double r = (c - n * ln2_hi) - n * ln2_lo;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    int64_t k = (int64_t)n; /* -1075..1024: each half within the normal exponents */
    int64_t k1 = k >> 1, k2 = k - k1;
    uint64_t b1 = (uint64_t)(k1 + 1023) << 52, b2 = (uint64_t)(k2 + 1023) << 52;
    double s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    double y = p * s1 * s2;
    y = x < bottom ? 0.0 : y;
    y = x > top ? __builtin_inf() : y;
    return x != x ? x : y;
}

/* sum of exp(x[j] - m) over a row (float32: lanes per chunk, chunks in double). */
static double row_sum_exp32(const float *x, int64_t n, float m) {
    double total = 0;
    for (int64_t c0 = 0; c0 < n; c0 += CHUNK) {
        int64_t len = n - c0 < CHUNK ? n - c0 : CHUNK, j = 0;
        const float *xc = x + c0;
        float acc[LANES] = {0};
        for (; j + LANES <= len; j += LANES)
            for (int k = 0; k < LANES; k++) acc[k] += pb_exp32(xc[j + k] - m);
        float s = lanes_sum(acc);
        for (; j < len; j++) s += pb_exp32(xc[j] - m);
        total += s;
    }
    return total;
}

#define LANES64 8

/* max over a float64 row, NaN skipped (as row_max_scaled does: the row's sum of exponentials
 * turns NaN then, and so does every output of the row). */
static double row_max64(const double *x, int64_t n) {
    double acc[LANES64];
    for (int k = 0; k < LANES64; k++) acc[k] = -__builtin_inf();
    int64_t j = 0;
    for (; j + LANES64 <= n; j += LANES64)
        for (int k = 0; k < LANES64; k++) acc[k] = x[j + k] > acc[k] ? x[j + k] : acc[k];
    double m = -__builtin_inf();
    for (int k = 0; k < LANES64; k++) m = acc[k] > m ? acc[k] : m;
    for (; j < n; j++) m = x[j] > m ? x[j] : m;
    return m;
}

/* sum of x[j] (exp_shift = 0) or of exp(x[j] - m) (exp_shift = 1) over a float64 row. */
static double row_sum64(const double *x, int64_t n, int exp_shift, double m) {
    double acc[LANES64] = {0};
    int64_t j = 0;
    if (exp_shift)
        for (; j + LANES64 <= n; j += LANES64)
            for (int k = 0; k < LANES64; k++) acc[k] += pb_exp64(x[j + k] - m);
    else
        for (; j + LANES64 <= n; j += LANES64)
            for (int k = 0; k < LANES64; k++) acc[k] += x[j + k];
    double s = 0;
    for (int k = 0; k < LANES64; k++) s += acc[k];
    for (; j < n; j++) s += exp_shift ? pb_exp64(x[j] - m) : x[j];
    return s;
}

/* max over a float32 row, NaN skipped: row_max_scaled at scale 1 (x * 1 is x, NaN and
 * infinities included). */
static float row_max32(const float *x, int64_t n) { return row_max_scaled(x, n, 1.0f); }

static double row_sum_exp64(const double *x, int64_t n, double m) { return row_sum64(x, n, 1, m); }
static double row_sum_f64(const double *x, int64_t n) { return row_sum64(x, n, 0, 0.0); }

/* The four kernels below, once per float type T (suffix S): MAX, SUM_EXP, SUM and EXP are that
 * type's row max, row sum of exp(x - m), row sum and exp. A row's log-sum-exp is kept as the
 * pair (m, log(sum exp(x - m))) and applied as (x - m) - ls, PyTorch's order of operations: one
 * float holding m + ls would round away the low bits of every log-probability when m is large.
 *
 *   log_softmax:            y = (x - m) - ls
 *   log_softmax_backward:   gx = g - exp(y) * sum(g)           (y: the forward's output)
 *   cross_entropy:          loss = ls - (x[t] - m), 0 where t == ignore_index; stats = (m, ls)
 *   cross_entropy_backward: gx = (exp((x - m) - ls) - onehot(t)) * g[r], 0 g where ignored */
#define LOG_SOFTMAX_KERNELS(T, S, MAX, SUM_EXP, SUM, EXP)                                        \
    void log_softmax_##S(int64_t lo, int64_t hi, const T *restrict x, T *restrict y,             \
                         int64_t cols) {                                                         \
        for (int64_t r = lo; r < hi; r++) {                                                      \
            const T *xr = x + r * cols;                                                          \
            T *yr = y + r * cols;                                                                \
            T m = MAX(xr, cols);                                                                 \
            T ls = (T)__builtin_log(SUM_EXP(xr, cols, m));                                       \
            for (int64_t j = 0; j < cols; j++) yr[j] = (xr[j] - m) - ls;                         \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    void log_softmax_backward_##S(int64_t lo, int64_t hi, const T *restrict g,                   \
                                  const T *restrict y, T *restrict gx, int64_t cols) {           \
        for (int64_t r = lo; r < hi; r++) {                                                      \
            const T *gr = g + r * cols, *yr = y + r * cols;                                      \
            T *out = gx + r * cols;                                                              \
            T s = (T)SUM(gr, cols);                                                              \
            for (int64_t j = 0; j < cols; j++) out[j] = gr[j] - EXP(yr[j]) * s;                  \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    void cross_entropy_##S(int64_t lo, int64_t hi, const T *restrict x,                          \
                           const int64_t *restrict target, T *restrict loss,                     \
                           T *restrict stats, int64_t cols, int64_t ignore_index) {              \
        for (int64_t r = lo; r < hi; r++) {                                                      \
            const T *xr = x + r * cols;                                                          \
            T m = MAX(xr, cols);                                                                 \
            T ls = (T)__builtin_log(SUM_EXP(xr, cols, m));                                       \
            int64_t t = target[r];                                                               \
            stats[2 * r] = m;                                                                    \
            stats[2 * r + 1] = ls;                                                               \
            if (t == ignore_index)                                                               \
                loss[r] = 0;                                                                     \
            else                                                                                 \
                loss[r] = t >= 0 && t < cols ? ls - (xr[t] - m) : (T)__builtin_nan("");          \
        }                                                                                        \
    }                                                                                            \
                                                                                                 \
    void cross_entropy_backward_##S(int64_t lo, int64_t hi, const T *restrict x,                 \
                                    const int64_t *restrict target, const T *restrict stats,     \
                                    const T *restrict g, T *restrict gx, int64_t cols,           \
                                    int64_t ignore_index) {                                      \
        for (int64_t r = lo; r < hi; r++) {                                                      \
            const T *xr = x + r * cols;                                                          \
            T *out = gx + r * cols;                                                              \
            T m = stats[2 * r], ls = stats[2 * r + 1];                                           \
            int64_t t = target[r];                                                               \
            T gr = t == ignore_index ? 0 : g[r];                                                 \
            for (int64_t j = 0; j < cols; j++) out[j] = EXP((xr[j] - m) - ls) * gr;              \
            if (t != ignore_index && t >= 0 && t < cols) out[t] -= gr;                           \
        }                                                                                        \
    }

LOG_SOFTMAX_KERNELS(float, f32, row_max32, row_sum_exp32, row_sum, pb_exp32)
LOG_SOFTMAX_KERNELS(double, f64, row_max64, row_sum_exp64, row_sum_f64, pb_exp64)
