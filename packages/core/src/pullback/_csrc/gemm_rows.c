/* Row ranges of MKL's CBLAS products, in the native kernel convention (lo, hi, pointers...,
 * sizes...), so that pullback.native.run_rows splits one product, or one stack of products,
 * over the C thread pool with no Python in the hand-off. MKL itself runs sequential (see
 * pullback/_gemm.py for why).
 *
 * The callers (pullback/_gemm.py) pass CBLAS's row-major layout, transpose flags and leading
 * dimensions that they have checked against the arrays, and sizes that fit CBLAS's 32-bit int.
 */
#include <stdint.h>

#define ROW_MAJOR 101

typedef void (*sgemm_t)(int, int, int, int, int, int, float, const float *, int, const float *,
                        int, float, float *, int);
typedef void (*dgemm_t)(int, int, int, int, int, int, double, const double *, int,
                        const double *, int, double, double *, int);
typedef void (*sgemm_batch_t)(int, const int *, const int *, const int *, const int *,
                              const int *, const float *, const float **, const int *,
                              const float **, const int *, const float *, float **, const int *,
                              int, const int *);
typedef void (*dgemm_batch_t)(int, const int *, const int *, const int *, const int *,
                              const int *, const double *, const double **, const int *,
                              const double **, const int *, const double *, double **,
                              const int *, int, const int *);

/* Rows lo..hi of c (rows x n, contiguous) = op(a) op(b); row r of op(a) starts a_row_step
 * elements after row 0 (lda without a transpose, 1 with one). */
#define GEMM_ROWS(name, type, gemm_t)                                                          \
    void name(int64_t lo, int64_t hi, void *gemm, const type *a, const type *b, type *c,        \
              int64_t trans_a, int64_t trans_b, int64_t n, int64_t k, int64_t lda,              \
              int64_t a_row_step, int64_t ldb) {                                                \
        ((gemm_t)gemm)(ROW_MAJOR, (int)trans_a, (int)trans_b, (int)(hi - lo), (int)n, (int)k,   \
                       1, a + lo * a_row_step, (int)lda, b, (int)ldb, 0, c + lo * n, (int)n);   \
    }
GEMM_ROWS(sgemm_rows, float, sgemm_t)
GEMM_ROWS(dgemm_rows, double, dgemm_t)

/* Products lo..hi of a stack of equal products (m x k times k x n), given by the addresses of
 * their matrices, as one group of MKL's batch call. */
#define GEMM_BATCH_ROWS(name, type, batch_t)                                                   \
    void name(int64_t lo, int64_t hi, void *batch, const type **a, const type **b, type **c,    \
              int64_t trans_a, int64_t trans_b, int64_t m, int64_t n, int64_t k, int64_t lda,   \
              int64_t ldb) {                                                                    \
        const int ta = (int)trans_a, tb = (int)trans_b, mm = (int)m, nn = (int)n, kk = (int)k;  \
        const int la = (int)lda, lb = (int)ldb, size = (int)(hi - lo);                          \
        const type one = 1, zero = 0;                                                           \
        ((batch_t)batch)(ROW_MAJOR, &ta, &tb, &mm, &nn, &kk, &one, a + lo, &la, b + lo, &lb,    \
                         &zero, c + lo, &nn, 1, &size);                                         \
    }
GEMM_BATCH_ROWS(sgemm_batch_rows, float, sgemm_batch_t)
GEMM_BATCH_ROWS(dgemm_batch_rows, double, dgemm_batch_t)
