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
 * Every product is one primitive, rows_times: four rows of the result, each the sum over p of
 * a scalar a[p] times a row p of a matrix whose rows are contiguous and zero-padded to whole
 * vectors, so that the innermost loop is one vector load shared by four FMAs per row block,
 * with no horizontal reduction: gcc keeps the (up to 4 x SDPA_MAX_NV) accumulators in
 * registers. Four rows, not two: with a head of 32 features (two AVX-512 vectors) two rows
 * gave four chains of FMAs, too few to hide an FMA's latency. The operands
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

/* A block of SDPA_ROWS query (or key) rows from i: rows[r] = i + r, the rows past the last
 * clamped to it (spares: computed, never stored); count of them real. For query rows, seen[r]
 * the keys each sees (0..seen[r]-1) and used the last one's rounded up to whole vectors (the
 * block's products run that far). */
#define SDPA_ROWS 4
struct sdpa_block {
    int64_t rows[SDPA_ROWS], seen[SDPA_ROWS], count, used;
};

/* The vectors are the target's own, and a row block holds at most SDPA_MAX_NV of them per row:
 * the 4 x SDPA_MAX_NV accumulators, the loaded row and the four broadcast scalars must all fit
 * in the vector registers, or every FMA waits on a spill. AVX-512 has 32 registers of 64 bytes
 * (4 x 4 accumulators); AVX2 and SSE have 16 (4 x 2). Measured on an AVX2 EPYC, 64-byte vectors
 * there (each two registers, 32 accumulators) ran the GPT's attention at a fifth of the speed. */
#if defined(__AVX512F__)
#define SDPA_VECTOR_BYTES 64
#define SDPA_MAX_NV 4
#elif defined(__AVX__)
#define SDPA_VECTOR_BYTES 32
#define SDPA_MAX_NV 2
#else
#define SDPA_VECTOR_BYTES 16
#define SDPA_MAX_NV 2
#endif
typedef float sdpa_f32v __attribute__((vector_size(SDPA_VECTOR_BYTES)));
typedef int32_t sdpa_i32v __attribute__((vector_size(SDPA_VECTOR_BYTES)));
typedef double sdpa_f64v __attribute__((vector_size(SDPA_VECTOR_BYTES)));
typedef int64_t sdpa_i64v __attribute__((vector_size(SDPA_VECTOR_BYTES)));

#ifdef __AVX512F__
/* dst[i * ldd + j] = src[j * lds + i] for i, j < 16: sixteen rows of src in registers, their
 * 16 x 16 transpose by four rounds of lane shuffles (pairs, quads, 128-bit and 256-bit
 * halves), sixteen rows of dst out. Unaligned loads and stores. */
static inline void sdpa_transpose_16x16(float *dst, int64_t ldd, const float *src, int64_t lds) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * lds);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4)
        for (int u = 0; u < 2; u++) {
            r[i + u] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + u]),
                                                            _mm512_castps_pd(t[i + 2 + u])));
            r[i + 2 + u] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + u]),
                                                                _mm512_castps_pd(t[i + 2 + u])));
        }
    for (int i = 0; i < 16; i += 8)
        for (int u = 0; u < 4; u++) {
            t[i + u] = _mm512_shuffle_f32x4(r[i + u], r[i + 4 + u], 0x88);
            t[i + 4 + u] = _mm512_shuffle_f32x4(r[i + u], r[i + 4 + u], 0xdd);
        }
    for (int u = 0; u < 8; u++) {
        r[u] = _mm512_shuffle_f32x4(t[u], t[8 + u], 0x88);
        r[8 + u] = _mm512_shuffle_f32x4(t[u], t[8 + u], 0xdd);
    }
    static const int row_of[16] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
    for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + row_of[i] * ldd, r[i]);
}
#define SDPA_TRANSPOSE_TILE sdpa_transpose_16x16
#endif
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
#undef SDPA_TRANSPOSE_TILE
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

/* c[r][0..nv*W) = sum over p < k of a[r][p * as] * b[p * ldb + 0..nv*W), r < SDPA_ROWS: four
 * rows of the result at once, sharing each load of b's rows, with 4 * nv accumulators that do
 * not wait on each other. Inlined with a constant nv, they live in registers. */
static inline __attribute__((always_inline)) void SDPA_NAME(row_block)(
    T *const c[SDPA_ROWS], const T *const a[SDPA_ROWS], int64_t as, const T *restrict b,
    int64_t ldb, int64_t k, int64_t j, const int nv) {
    const T *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    V x0[4], x1[4], x2[4], x3[4];
    for (int u = 0; u < nv; u++) x0[u] = x1[u] = x2[u] = x3[u] = (V){0};
    for (int64_t p = 0; p < k; p++) {
        const T s0 = a0[p * as], s1 = a1[p * as], s2 = a2[p * as], s3 = a3[p * as];
        const T *bp = b + p * ldb + j;
        for (int u = 0; u < nv; u++) {
            V y;
            memcpy(&y, bp + u * W, sizeof y);
            x0[u] += s0 * y;
            x1[u] += s1 * y;
            x2[u] += s2 * y;
            x3[u] += s3 * y;
        }
    }
    for (int u = 0; u < nv; u++) {
        memcpy(c[0] + j + u * W, &x0[u], sizeof x0[u]);
        memcpy(c[1] + j + u * W, &x1[u], sizeof x1[u]);
        memcpy(c[2] + j + u * W, &x2[u], sizeof x2[u]);
        memcpy(c[3] + j + u * W, &x3[u], sizeof x3[u]);
    }
}

/* c[r][0..n) = sum over p < k of a[r][p * as] * b[p * ldb + 0..n), r < SDPA_ROWS (rows of a
 * may repeat, rows of c must not overlap each other or a and b), n a multiple of W. */
static void SDPA_NAME(rows_times)(T *const c[SDPA_ROWS], const T *const a[SDPA_ROWS],
                                  int64_t as, const T *restrict b, int64_t ldb, int64_t k,
                                  int64_t n) {
    int64_t j = 0;
    for (; j + SDPA_MAX_NV * W <= n; j += SDPA_MAX_NV * W)
        SDPA_NAME(row_block)(c, a, as, b, ldb, k, j, SDPA_MAX_NV);
    switch ((n - j) / W) { /* fewer than SDPA_MAX_NV vectors left */
    case 3: SDPA_NAME(row_block)(c, a, as, b, ldb, k, j, 3); break;
    case 2: SDPA_NAME(row_block)(c, a, as, b, ldb, k, j, 2); break;
    case 1: SDPA_NAME(row_block)(c, a, as, b, ldb, k, j, 1); break;
    default: break;
    }
}

/* dst[r * ldd + c] = src[r * sr + c * sc] for r < rows, c < cols (a strided block into a
 * padded local buffer; the padding is never written, it stays zero from calloc). Two layouts
 * have loops of their own, because the copies took a quarter of the GPT's attention time as
 * scalar loops with two run-time strides: rows of contiguous elements (sc == 1: q, v, g and k
 * in the GPT), copied as vectors; and a transpose (sr == 1: k^T, v^T), by square tiles of a
 * vector's lanes, each read as W rows and written as W columns through the tile transpose of
 * SDPA_TRANSPOSE_TILE where the target has one (else element by element within the tile, which
 * keeps both sides in a few cache lines). Otherwise the source is read along its smaller
 * stride: k's rows sit 3 * H * D apart in the GPT's QKV array, and reading them down a column
 * thrashes the L1 sets that such strides share. */
static void SDPA_NAME(gather)(T *restrict dst, int64_t ldd, const T *restrict src, int64_t sr,
                              int64_t sc, int64_t rows, int64_t cols) {
    if (sc == 1) {
        for (int64_t r = 0; r < rows; r++) {
            T *restrict d = dst + r * ldd;
            const T *restrict s = src + r * sr;
            for (int64_t c = 0; c < cols; c++) d[c] = s[c];
        }
        return;
    }
    if (sr == 1) {
        for (int64_t r0 = 0; r0 < rows; r0 += W)
            for (int64_t c0 = 0; c0 < cols; c0 += W) {
                const int64_t nr = rows - r0 < W ? rows - r0 : W;
                const int64_t nc = cols - c0 < W ? cols - c0 : W;
#ifdef SDPA_TRANSPOSE_TILE
                if (nr == W && nc == W) {
                    SDPA_TRANSPOSE_TILE(dst + r0 * ldd + c0, ldd, src + c0 * sc + r0, sc);
                    continue;
                }
#endif
                for (int64_t c = 0; c < nc; c++)
                    for (int64_t r = 0; r < nr; r++)
                        dst[(r0 + r) * ldd + c0 + c] = src[(c0 + c) * sc + r0 + r];
            }
        return;
    }
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

/* The block of rows i.. of n rows (queries: the keys they see of S). */
static inline struct sdpa_block SDPA_NAME(block)(int64_t i, int64_t n, int64_t S,
                                                 int64_t causal) {
    struct sdpa_block block;
    block.count = n - i < SDPA_ROWS ? n - i : SDPA_ROWS;
    for (int r = 0; r < SDPA_ROWS; r++) {
        block.rows[r] = i + r < n ? i + r : n - 1;
        block.seen[r] = SDPA_NAME(seen)(block.rows[r], S, causal);
    }
    block.used = SDPA_NAME(padded)(block.seen[SDPA_ROWS - 1]);
    return block;
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
    V top, hidden;
    M lane;
    for (int64_t u = 0; u < W; u++) {
        top[u] = hidden[u] = -INFINITY;
        lane[u] = u;
    }
    for (int64_t j = 0; j < n; j += W) {
        V x;
        memcpy(&x, s + j, sizeof x);
        x *= scale;
        /* the last vector: its lanes from seen on are masked, by a lane compare and a blend
         * (writing the lanes one by one sent x through memory, and the vector load after the
         * scalar stores stalled on store forwarding: 12 % of the forward's time) */
        M visible = lane < (__typeof__(lane[0]))(seen - j);
        x = (V)(((M)x & visible) | ((M)hidden & ~visible));
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

/* Rows go by blocks of SDPA_ROWS (struct sdpa_block). A block's products run to its last
 * row's length: the other rows' weights (and dS) are 0 there. Adding those zero terms changes
 * no bit of a finite sum (the sums start at +0.0, and x + 0 * y is x). */
void SDPA_NAME(sdpa_forward)(int64_t lo, int64_t hi, const T *q, const T *k, const T *v,
                             T *out, T *weights, const T *scale_p, int64_t H, int64_t L,
                             int64_t S, int64_t E, int64_t Ev, int64_t qb, int64_t qh,
                             int64_t ql, int64_t qe, int64_t kb, int64_t kh, int64_t ks,
                             int64_t ke, int64_t vb, int64_t vh, int64_t vs, int64_t ve,
                             int64_t ob, int64_t oh, int64_t ol, int64_t causal) {
    const T scale = *scale_p;
    const int64_t Sp = SDPA_NAME(padded)(S), Evp = SDPA_NAME(padded)(Ev);
    /* k transposed (E x Sp: a score row is a sum of k^T's rows), v padded (S x Evp), a block's
     * score rows and output rows */
    T *kt = calloc((size_t)(E * Sp + S * Evp + SDPA_ROWS * (Sp + Evp)), sizeof(T));
    T *vp = kt + E * Sp, *sr[SDPA_ROWS], *orow[SDPA_ROWS];
    for (int r = 0; kt && r < SDPA_ROWS; r++) {
        sr[r] = vp + S * Evp + r * Sp;
        orow[r] = vp + S * Evp + SDPA_ROWS * Sp + r * Evp;
    }
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
        for (int64_t i = 0; i < L; i += SDPA_ROWS) {
            const struct sdpa_block blk = SDPA_NAME(block)(i, L, S, causal);
            const T *qr[SDPA_ROWS], *wr[SDPA_ROWS];
            for (int r = 0; r < SDPA_ROWS; r++) {
                qr[r] = qn + blk.rows[r] * ql;
                wr[r] = wn + blk.rows[r] * S;
            }
            SDPA_NAME(rows_times)(sr, qr, qe, kt, Sp, E, blk.used);
            for (int64_t r = 0; r < blk.count; r++)
                SDPA_NAME(softmax_row)(wn + blk.rows[r] * S, sr[r], blk.seen[r],
                                       SDPA_NAME(padded)(blk.seen[r]), S, scale);
            SDPA_NAME(rows_times)(orow, wr, 1, vp, Evp, blk.seen[SDPA_ROWS - 1], Evp);
            for (int64_t r = 0; r < blk.count; r++)
                for (int64_t e = 0; e < Ev; e++) on[blk.rows[r] * ol + e] = orow[r][e];
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
     * and a block's spare dS rows, a block's result rows. dS's entries past each row's
     * products stay 0 from calloc: every (batch, head) pair n writes the same entries of a
     * row. */
    T *vt = calloc((size_t)(Ev * Sp + S * Ep + L * Ep + L * Evp + (L + SDPA_ROWS) * Sp
                            + SDPA_ROWS * wide), sizeof(T));
    T *kp = vt + Ev * Sp, *qp = kp + S * Ep, *gp = qp + L * Ep, *ds = gp + L * Evp,
      *spare = ds + L * Sp, *res[SDPA_ROWS];
    for (int r = 0; vt && r < SDPA_ROWS; r++) res[r] = spare + SDPA_ROWS * Sp + r * wide;
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
        for (int64_t i = 0; i < L; i += SDPA_ROWS) {
            const struct sdpa_block blk = SDPA_NAME(block)(i, L, S, causal);
            T *dr[SDPA_ROWS];
            const T *gr[SDPA_ROWS];
            for (int r = 0; r < SDPA_ROWS; r++) {
                dr[r] = r < blk.count ? ds + blk.rows[r] * Sp : spare + r * Sp;
                gr[r] = gp + blk.rows[r] * Evp;
            }
            SDPA_NAME(rows_times)(dr, gr, 1, vt, Sp, Ev, blk.used);
            for (int64_t r = 0; r < blk.count; r++)
                SDPA_NAME(ds_row)(dr[r], wn + blk.rows[r] * S, blk.seen[r], blk.used);
            /* the spares' dS rows are left as dP: their dQ rows are never stored */
            SDPA_NAME(rows_times)(res, (const T *const *)dr, 1, kp, Ep,
                                  blk.seen[SDPA_ROWS - 1], Ep);
            for (int64_t r = 0; r < blk.count; r++)
                for (int64_t e = 0; e < E; e++)
                    gqn[blk.rows[r] * gql + e] = res[r][e] * scale + zero;
        }
        /* by key rows: dK's and dV's, over the queries that see the block's first key (from
         * key j on when causal; the block's later keys have dS and P 0 at the queries before
         * them) */
        for (int64_t j = 0; j < S; j += SDPA_ROWS) {
            const struct sdpa_block blk = SDPA_NAME(block)(j, S, S, 0);
            const int64_t first = causal ? (j < L ? j : L) : 0, count = L - first;
            const T *dcol[SDPA_ROWS], *pcol[SDPA_ROWS];
            for (int r = 0; r < SDPA_ROWS; r++) {
                dcol[r] = ds + first * Sp + blk.rows[r];
                pcol[r] = wn + first * S + blk.rows[r];
            }
            SDPA_NAME(rows_times)(res, dcol, Sp, qp + first * Ep, Ep, count, Ep);
            for (int64_t r = 0; r < blk.count; r++)
                for (int64_t e = 0; e < E; e++)
                    gkn[blk.rows[r] * gks + e] = res[r][e] * scale + zero;
            SDPA_NAME(rows_times)(res, pcol, S, gp + first * Evp, Evp, count, Evp);
            for (int64_t r = 0; r < blk.count; r++)
                for (int64_t e = 0; e < Ev; e++)
                    gvn[blk.rows[r] * gvs + e] = res[r][e] + zero;
        }
    }
    free(vt);
}

#undef T
#undef V
#undef M
#undef W
#endif
