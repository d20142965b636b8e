/* Fused scaled-dot-product attention of pullback.nn (no additive mask, no dropout; causal or
 * not), forward and backward, float32 and float64. One call handles the (batch, head) pairs
 * lo..hi of a (B, H) grid, so that pullback.native.run_rows can give each thread its share; a
 * pair's products never leave the core's caches, where the op composition writes the scores,
 * the weights and their gradients to memory between BLAS calls and softmax passes.
 *
 * Per pair, with P = softmax(scale * q k^T) (query i sees keys 0..i when causal):
 *   forward:  out = P v, and P saved for the backward;
 *   backward: dV = P^T dO, dP = dO v^T, dS = P * (dP - rowsum(dP * P)),
 *             dQ = scale * dS k, dK = scale * dS^T q.
 * Every product is one primitive, rows_times: two rows of the result, each the sum over p of
 * a scalar a[p] times a row p of a matrix whose rows are contiguous and zero-padded to whole
 * vectors, so that the innermost loop is one vector load shared by two FMAs per row block,
 * with no horizontal reduction: gcc keeps the (up to 2 x 4) accumulators in registers. The operands
 * are copied into such padded local buffers once per pair (k transposed for the scores, v
 * transposed for dP): a few thousand elements against the pair's ~10^5 multiply-adds.
 * Causal rows stop at their last visible key (rounded up to a vector; the masked scores are
 * -inf and their weights exactly 0), so the masked half of the products is skipped.
 *
 * What the callers guarantee (pullback/nn/_ops/_native_attention.py, which returns
 * NotImplemented for anything else; nothing here checks it again):
 *   - q, k, v and g are read at b * sb + h * sh + row * sr + feature * sf (their element
 *     strides, any sign or 0) inside their arrays, for b < B, h < H, rows below L (queries,
 *     g) or S (keys, values), features below E (q, k) or Ev (v, g);
 *   - out, gq, gk and gv are written at b * sb + h * sh + row * sr + feature (features
 *     contiguous) and do not overlap each other or any input; weights is C-contiguous
 *     (B, H, L, S);
 *   - L, S, E, Ev >= 1, H >= 1, 0 <= lo <= hi <= B * H; scale points to one element.
 * Where the local buffers cannot be allocated the pairs' outputs are NaN (never a silent
 * zero). */
#ifndef SDPA_T
/* Without it the ISO C mode (-std=c99) keeps every a * b + c as a multiply and an add: the
 * products here are the whole cost, and FMA halves their instructions (one rounding fewer).
 * Before the includes, so that pb_exp32 is built with the same options and inlines. */
#pragma GCC optimize("fp-contract=fast")
/* Nor may gcc turn the short row copies (32 elements in the GPT) into memcpy calls, whose
 * overhead measured more than the copies themselves. */
#pragma GCC optimize("no-tree-loop-distribute-patterns")

#include "pullback_math.h"

#include <math.h>
#include <stdlib.h>
#ifdef __AVX512F__
#include <immintrin.h> /* the lane reductions' shuffle trees */
#endif

/* A pair of query rows (i, second) and the keys each sees: 0..seen0-1 and 0..seen1-1; used1 is
 * seen1 rounded up to whole vectors (the pair's products run that far). */
struct sdpa_pair {
    int64_t second, seen0, seen1, used1;
};

typedef float sdpa_f32v __attribute__((vector_size(64)));
typedef int32_t sdpa_i32v __attribute__((vector_size(64)));
typedef double sdpa_f64v __attribute__((vector_size(64)));
typedef int64_t sdpa_i64v __attribute__((vector_size(64)));

#define SDPA_T float
#define SDPA_V sdpa_f32v
#define SDPA_MASK sdpa_i32v
#define SDPA_NAME(name) name##_f32
#define SDPA_EXP pb_exp32
#ifdef __AVX512F__
#define SDPA_REDUCE_ADD(x) _mm512_reduce_add_ps((__m512)(x))
#define SDPA_REDUCE_MAX(x) _mm512_reduce_max_ps((__m512)(x))
#endif
#include "attention.c"
#undef SDPA_T
#undef SDPA_V
#undef SDPA_MASK
#undef SDPA_NAME
#undef SDPA_EXP
#undef SDPA_REDUCE_ADD
#undef SDPA_REDUCE_MAX

/* libm's exp: float64 attention is for checking, not speed, and rows.c's vectorizable float64
 * exp is private to that file. */
#define SDPA_T double
#define SDPA_V sdpa_f64v
#define SDPA_MASK sdpa_i64v
#define SDPA_NAME(name) name##_f64
#define SDPA_EXP exp
#ifdef __AVX512F__
#define SDPA_REDUCE_ADD(x) _mm512_reduce_add_pd((__m512d)(x))
#define SDPA_REDUCE_MAX(x) _mm512_reduce_max_pd((__m512d)(x))
#endif
#include "attention.c"

#else /* the kernels, once per float type */

#define T SDPA_T
#define V SDPA_V
#define M SDPA_MASK
#define W ((int64_t)(sizeof(V) / sizeof(T))) /* lanes of a vector */

static inline int64_t SDPA_NAME(padded)(int64_t n) { return (n + W - 1) / W * W; }

/* c0[0..nv*W) = sum over p < k of a0[p * as] * b[p * ldb + 0..nv*W), and c1 likewise from
 * a1: two rows of the result at once, sharing each load of b's rows, with 2 * nv accumulators
 * that do not wait on each other. Inlined with a constant nv, they live in registers. */
static inline __attribute__((always_inline)) void SDPA_NAME(row_block)(
    T *restrict c0, T *restrict c1, const T *a0, const T *a1, int64_t as, const T *restrict b,
    int64_t ldb, int64_t k, const int nv) {
    V x0[4], x1[4];
    for (int u = 0; u < nv; u++) x0[u] = x1[u] = (V){0};
    for (int64_t p = 0; p < k; p++) {
        const T s0 = a0[p * as], s1 = a1[p * as];
        const T *bp = b + p * ldb;
        for (int u = 0; u < nv; u++) {
            V y;
            memcpy(&y, bp + u * W, sizeof y);
            x0[u] += s0 * y;
            x1[u] += s1 * y;
        }
    }
    for (int u = 0; u < nv; u++) {
        memcpy(c0 + u * W, &x0[u], sizeof x0[u]);
        memcpy(c1 + u * W, &x1[u], sizeof x1[u]);
    }
}

/* c0[0..n) = sum over p < k of a0[p * as] * b[p * ldb + 0..n), c1 likewise from a1 (a1 may
 * be a0, c1 must not be c0), n a multiple of W. */
static void SDPA_NAME(rows_times)(T *restrict c0, T *restrict c1, const T *a0, const T *a1,
                                  int64_t as, const T *restrict b, int64_t ldb, int64_t k,
                                  int64_t n) {
    int64_t j = 0;
    for (; j + 4 * W <= n; j += 4 * W)
        SDPA_NAME(row_block)(c0 + j, c1 + j, a0, a1, as, b + j, ldb, k, 4);
    switch ((n - j) / W) {
    case 3: SDPA_NAME(row_block)(c0 + j, c1 + j, a0, a1, as, b + j, ldb, k, 3); break;
    case 2: SDPA_NAME(row_block)(c0 + j, c1 + j, a0, a1, as, b + j, ldb, k, 2); break;
    case 1: SDPA_NAME(row_block)(c0 + j, c1 + j, a0, a1, as, b + j, ldb, k, 1); break;
    default: break;
    }
}

/* dst[r * ldd + c] = src[r * sr + c * sc] for r < rows, c < cols (a strided block into a
 * padded local buffer; the padding is never written, it stays zero from calloc). The source
 * is read along its smaller stride: k's rows sit 3 * H * D apart in the GPT's QKV array, and
 * reading them down a column thrashes the L1 sets that such strides share. */
static void SDPA_NAME(gather)(T *restrict dst, int64_t ldd, const T *restrict src, int64_t sr,
                              int64_t sc, int64_t rows, int64_t cols) {
    if (llabs(sr) < llabs(sc))
        for (int64_t c = 0; c < cols; c++)
            for (int64_t r = 0; r < rows; r++) dst[r * ldd + c] = src[r * sr + c * sc];
    else
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++) dst[r * ldd + c] = src[r * sr + c * sc];
}

/* Keys query i sees: 0..seen-1. */
static inline int64_t SDPA_NAME(seen)(int64_t i, int64_t S, int64_t causal) {
    return causal && i + 1 < S ? i + 1 : S;
}

/* Rows go by pairs (i, i + 1), the last of an odd count paired with itself. */
static inline struct sdpa_pair SDPA_NAME(query_pair)(int64_t i, int64_t L, int64_t S,
                                                     int64_t causal) {
    struct sdpa_pair pair;
    pair.second = i + 1 < L ? i + 1 : i;
    pair.seen0 = SDPA_NAME(seen)(i, S, causal);
    pair.seen1 = SDPA_NAME(seen)(pair.second, S, causal);
    pair.used1 = SDPA_NAME(padded)(pair.seen1);
    return pair;
}

/* The sum (take_max = 0) or the max of a vector's lanes, as a tree (depth log2 W, where a
 * running scalar would wait W times on the previous step): AVX-512's shuffle trees, else a
 * loop gcc may or may not vectorize. The max is taken over lanes that hold no NaN. */
static inline T SDPA_NAME(lanes_fold)(V x, const int take_max) {
#ifdef SDPA_REDUCE_ADD
    return take_max ? SDPA_REDUCE_MAX(x) : SDPA_REDUCE_ADD(x);
#else
    T a[sizeof(V) / sizeof(T)];
    memcpy(a, &x, sizeof a);
    for (int64_t w = W / 2; w >= 1; w /= 2)
        for (int64_t u = 0; u < w; u++)
            a[u] = take_max ? (a[u + w] > a[u] ? a[u + w] : a[u]) : a[u] + a[u + w];
    return a[0];
#endif
}

/* p[0..seen) = softmax(scale * s[0..seen)), p[seen..S) = 0; s (n: seen rounded up to whole
 * vectors) is overwritten. */
static void SDPA_NAME(softmax_row)(T *restrict p, T *restrict s, int64_t seen, int64_t n,
                                   int64_t S, T scale) {
    V top;
    for (int64_t u = 0; u < W; u++) top[u] = -INFINITY;
    for (int64_t j = 0; j < n; j += W) {
        V x;
        memcpy(&x, s + j, sizeof x);
        x *= scale;
        if (j + W > seen) /* the last vector: its lanes from seen on are masked */
            for (int64_t u = seen - j; u < W; u++) x[u] = -INFINITY;
        memcpy(s + j, &x, sizeof x);
        M greater = x > top; /* all ones where x > top; NaN scores are skipped here and make
                              * the sum NaN below, so the whole row */
        top = (V)(((M)x & greater) | ((M)top & ~greater));
    }
    const T m = SDPA_NAME(lanes_fold)(top, 1);
    T lanes[sizeof(V) / sizeof(T)] = {0};
    for (int64_t j = 0; j < n; j += W)
        for (int64_t u = 0; u < W; u++) {
            T e = SDPA_EXP(s[j + u] - m);
            s[j + u] = e;
            lanes[u] += e;
        }
    V sums;
    memcpy(&sums, lanes, sizeof sums);
    const T inv = 1 / SDPA_NAME(lanes_fold)(sums, 0);
    for (int64_t j = 0; j < seen; j++) p[j] = s[j] * inv;
    for (int64_t j = seen; j < S; j++) p[j] = 0;
}

static void SDPA_NAME(fill_nan)(T *dst, int64_t sr, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) dst[r * sr + c] = NAN;
}

/* dS's row from dP's (dr[0..seen)) and P's (pr): pr * (dr - sum(pr * dr)), zeros from seen to
 * used (dr's values there are dP's of masked keys: dQ's and dK's products read them). */
static void SDPA_NAME(ds_row)(T *restrict dr, const T *restrict pr, int64_t seen, int64_t used) {
    T lanes[sizeof(V) / sizeof(T)] = {0};
    int64_t j = 0;
    for (; j + W <= seen; j += W)
        for (int64_t u = 0; u < W; u++) lanes[u] += pr[j + u] * dr[j + u];
    V sums;
    memcpy(&sums, lanes, sizeof sums);
    T dot = SDPA_NAME(lanes_fold)(sums, 0);
    for (; j < seen; j++) dot += pr[j] * dr[j];
    for (j = 0; j < seen; j++) dr[j] = pr[j] * (dr[j] - dot);
    for (; j < used; j++) dr[j] = 0;
}

/* Rows go by pairs (i, i1): i1 = i + 1, or i itself for the last of an odd count (computed
 * twice into a spare row, written once). The pair's products run to the second row's length:
 * the first row's weights (and dS) are 0 there. */
void SDPA_NAME(sdpa_forward)(int64_t lo, int64_t hi, const T *q, const T *k, const T *v,
                             T *out, T *weights, const T *scale_p, int64_t H, int64_t L,
                             int64_t S, int64_t E, int64_t Ev, int64_t qb, int64_t qh,
                             int64_t ql, int64_t qe, int64_t kb, int64_t kh, int64_t ks,
                             int64_t ke, int64_t vb, int64_t vh, int64_t vs, int64_t ve,
                             int64_t ob, int64_t oh, int64_t ol, int64_t causal) {
    const T scale = *scale_p;
    const int64_t Sp = SDPA_NAME(padded)(S), Evp = SDPA_NAME(padded)(Ev);
    /* k transposed (E x Sp: a score row is a sum of k^T's rows), v padded (S x Evp), two score
     * rows and two output rows */
    T *kt = calloc((size_t)(E * Sp + S * Evp + 2 * Sp + 2 * Evp), sizeof(T));
    T *vp = kt + E * Sp, *s0 = vp + S * Evp, *s1 = s0 + Sp, *o0 = s1 + Sp, *o1 = o0 + Evp;
    for (int64_t n = lo; n < hi; n++) {
        const int64_t b = n / H, h = n % H;
        T *on = out + b * ob + h * oh, *wn = weights + n * L * S;
        if (!kt) {
            SDPA_NAME(fill_nan)(on, ol, L, Ev);
            SDPA_NAME(fill_nan)(wn, S, L, S);
            continue;
        }
        const T *qn = q + b * qb + h * qh;
        SDPA_NAME(gather)(kt, Sp, k + b * kb + h * kh, ke, ks, E, S);
        SDPA_NAME(gather)(vp, Evp, v + b * vb + h * vh, vs, ve, S, Ev);
        for (int64_t i = 0; i < L; i += 2) {
            const struct sdpa_pair pair = SDPA_NAME(query_pair)(i, L, S, causal);
            const int64_t i1 = pair.second, seen0 = pair.seen0, seen1 = pair.seen1,
                          used1 = pair.used1;
            T *w0 = wn + i * S, *w1 = wn + i1 * S;
            SDPA_NAME(rows_times)(s0, s1, qn + i * ql, qn + i1 * ql, qe, kt, Sp, E, used1);
            SDPA_NAME(softmax_row)(w0, s0, seen0, SDPA_NAME(padded)(seen0), S, scale);
            if (i1 != i) SDPA_NAME(softmax_row)(w1, s1, seen1, used1, S, scale);
            SDPA_NAME(rows_times)(o0, o1, w0, w1, 1, vp, Evp, seen1, Evp);
            for (int64_t e = 0; e < Ev; e++) on[i * ol + e] = o0[e];
            for (int64_t e = 0; e < Ev; e++) on[i1 * ol + e] = o1[e];
        }
    }
    free(kt);
}

void SDPA_NAME(sdpa_backward)(int64_t lo, int64_t hi, const T *g, const T *q, const T *k,
                              const T *v, const T *weights, T *gq, T *gk, T *gv,
                              const T *scale_p, int64_t H, int64_t L, int64_t S, int64_t E,
                              int64_t Ev, int64_t gb, int64_t gh, int64_t gl, int64_t ge,
                              int64_t qb, int64_t qh, int64_t ql, int64_t qe, int64_t kb,
                              int64_t kh, int64_t ks, int64_t ke, int64_t vb, int64_t vh,
                              int64_t vs, int64_t ve, int64_t gqb, int64_t gqh, int64_t gql,
                              int64_t gkb, int64_t gkh, int64_t gks, int64_t gvb, int64_t gvh,
                              int64_t gvs, int64_t causal, int64_t positive_zeros) {
    const T scale = *scale_p;
    /* added to every stored result: -0.0 changes nothing, +0.0 turns -0.0 into 0.0 (as adding
     * the results into zeros would: the compiler's packed QKV gradient) */
    const T zero = positive_zeros ? (T)0 : -(T)0;
    const int64_t Sp = SDPA_NAME(padded)(S), Ep = SDPA_NAME(padded)(E),
                  Evp = SDPA_NAME(padded)(Ev);
    const int64_t wide = Sp > Ep ? (Sp > Evp ? Sp : Evp) : (Ep > Evp ? Ep : Evp);
    /* v transposed (Ev x Sp: a dP row is a sum of v^T's rows), k, q and g padded, dS (L x Sp)
     * and a spare dS row, two result rows. dS's entries past each row's products stay 0 from
     * calloc: every pair (n) writes the same entries of a row. */
    T *vt = calloc((size_t)(Ev * Sp + S * Ep + L * Ep + L * Evp + (L + 1) * Sp + 2 * wide),
                   sizeof(T));
    T *kp = vt + Ev * Sp, *qp = kp + S * Ep, *gp = qp + L * Ep, *ds = gp + L * Evp,
      *spare = ds + L * Sp, *r0 = spare + Sp, *r1 = r0 + wide;
    for (int64_t n = lo; n < hi; n++) {
        const int64_t b = n / H, h = n % H;
        T *gqn = gq + b * gqb + h * gqh, *gkn = gk + b * gkb + h * gkh,
          *gvn = gv + b * gvb + h * gvh;
        if (!vt) {
            SDPA_NAME(fill_nan)(gqn, gql, L, E);
            SDPA_NAME(fill_nan)(gkn, gks, S, E);
            SDPA_NAME(fill_nan)(gvn, gvs, S, Ev);
            continue;
        }
        const T *wn = weights + n * L * S;
        SDPA_NAME(gather)(vt, Sp, v + b * vb + h * vh, ve, vs, Ev, S);
        SDPA_NAME(gather)(kp, Ep, k + b * kb + h * kh, ks, ke, S, E);
        SDPA_NAME(gather)(qp, Ep, q + b * qb + h * qh, ql, qe, L, E);
        SDPA_NAME(gather)(gp, Evp, g + b * gb + h * gh, gl, ge, L, Ev);
        /* by query rows: dS's rows, then dQ's */
        for (int64_t i = 0; i < L; i += 2) {
            const struct sdpa_pair pair = SDPA_NAME(query_pair)(i, L, S, causal);
            const int64_t i1 = pair.second, seen0 = pair.seen0, seen1 = pair.seen1,
                          used1 = pair.used1;
            T *d0 = ds + i * Sp, *d1 = i1 != i ? ds + i1 * Sp : spare;
            SDPA_NAME(rows_times)(d0, d1, gp + i * Evp, gp + i1 * Evp, 1, vt, Sp, Ev, used1);
            SDPA_NAME(ds_row)(d0, wn + i * S, seen0, used1);
            SDPA_NAME(ds_row)(d1, wn + i1 * S, seen1, used1);
            SDPA_NAME(rows_times)(r0, r1, d0, d1, 1, kp, Ep, seen1, Ep);
            for (int64_t e = 0; e < E; e++) gqn[i * gql + e] = r0[e] * scale + zero;
            for (int64_t e = 0; e < E; e++) gqn[i1 * gql + e] = r1[e] * scale + zero;
        }
        /* by key rows: dK's and dV's, over the queries that see the pair's first key (from
         * key j on when causal; the second key's dS and P are 0 at query j) */
        for (int64_t j = 0; j < S; j += 2) {
            const int64_t j1 = j + 1 < S ? j + 1 : j;
            const int64_t first = causal ? (j < L ? j : L) : 0, count = L - first;
            const T *dcol = ds + first * Sp, *pcol = wn + first * S;
            SDPA_NAME(rows_times)(r0, r1, dcol + j, dcol + j1, Sp, qp + first * Ep, Ep, count,
                                  Ep);
            for (int64_t e = 0; e < E; e++) gkn[j * gks + e] = r0[e] * scale + zero;
            for (int64_t e = 0; e < E; e++) gkn[j1 * gks + e] = r1[e] * scale + zero;
            SDPA_NAME(rows_times)(r0, r1, pcol + j, pcol + j1, S, gp + first * Evp, Evp, count,
                                  Evp);
            for (int64_t e = 0; e < Ev; e++) gvn[j * gvs + e] = r0[e] + zero;
            for (int64_t e = 0; e < Ev; e++) gvn[j1 * gvs + e] = r1[e] + zero;
        }
    }
    free(vt);
}

#undef T
#undef V
#undef M
#undef W
#endif
