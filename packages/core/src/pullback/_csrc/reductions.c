/* Row sums of float32 matrices: a bias's gradient and an embedding's.
 *
 * column_sums_f32: the sum over the leading axis of a C-contiguous float32 matrix (a Linear
 * layer's bias gradient: a tall, narrow matrix). NumPy adds such a matrix row by row with an
 * inner loop as long as a row, so a 65,536 x 16 matrix costs 65,536 short loops (measured
 * 2.0 ms, against 0.27 ms for this loop). The order of the additions is NumPy's (the first row, then each next
 * row added in turn), so the result is bitwise NumPy's.
 *
 * What the caller guarantees (pullback/_cpu_native.py, which returns NotImplemented for anything
 * else; nothing here checks it again): x is C-contiguous float32 with at least hi rows of cols
 * elements, out holds cols elements and overlaps nothing of x, and 0 <= lo < hi. */
#include <stdint.h>
#include <string.h>

void column_sums_f32(int64_t lo, int64_t hi, const float *restrict x, float *restrict out,
                     int64_t cols) {
    memcpy(out, x + lo * cols, (size_t)cols * sizeof(float));
    for (int64_t i = lo + 1; i < hi; i++) {
        const float *row = x + i * cols;
        for (int64_t j = 0; j < cols; j++) out[j] += row[j];
    }
}

/* Rows list[0..n) of g (cols each) summed into dst: up to 8 rows one after the other, more as the
 * sum of two halves (tmp holds one row per level below). Pairwise, like NumPy's float sums, so
 * the rounding error grows with log(n), not n: an embedding row can gather thousands. */
static void sum_listed_rows(const float *g, const int64_t *list, int64_t n, float *dst,
                            float *tmp, int64_t cols) {
    if (n <= 8) {
        memcpy(dst, g + list[0] * cols, (size_t)cols * sizeof(float));
        for (int64_t r = 1; r < n; r++) {
            const float *row = g + list[r] * cols;
            for (int64_t j = 0; j < cols; j++) dst[j] += row[j];
        }
        return;
    }
    const int64_t half = n / 2;
    sum_listed_rows(g, list, half, dst, tmp + cols, cols);
    sum_listed_rows(g, list + half, n - half, tmp, tmp + cols, cols);
    for (int64_t j = 0; j < cols; j++) dst[j] += tmp[j];
}

/* out[idx[i]] += g[i] for the n rows of g (an embedding's gradient: take's backward along axis
 * 0). The rows are bucketed by index (a counting sort: order holds each bucket's rows in their
 * order in g) and each bucket summed pairwise; rows no index names keep the caller's zeros.
 * NumPy's kernel (_ops/index.py: a stable sort, a gather and add.reduceat) spends 0.6-0.7 ms on a
 * GPT batch of 2,048 rows of 128 (0.4 of it in reduceat), where this takes two passes.
 *
 * What the caller guarantees (pullback/_cpu_native.py): g is C-contiguous float32 with n rows of
 * cols elements, idx holds n int64 indices already checked to lie in 0..rows-1, out is a
 * zero-filled rows x cols float32 array, starts a zero-filled array of rows + 1 int64, order
 * one of n int64, and tmp one of cols floats per level of the pairwise sum (1 + log2 n), none
 * overlapping another. lo and hi are 0 and n (one call, no thread split). */
void rows_by_index_f32(int64_t lo, int64_t hi, const float *restrict g,
                       const int64_t *restrict idx, float *restrict out,
                       int64_t *restrict starts, int64_t *restrict order,
                       float *restrict tmp, int64_t rows, int64_t cols) {
    for (int64_t i = lo; i < hi; i++) starts[idx[i] + 1]++;
    for (int64_t r = 0; r < rows; r++) starts[r + 1] += starts[r];
    for (int64_t i = lo; i < hi; i++) order[starts[idx[i]]++] = i;  /* starts[r] -> its end */
    int64_t begin = 0;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t end = starts[r];
        if (end > begin) sum_listed_rows(g, order + begin, end - begin, out + r * cols, tmp, cols);
        begin = end;
    }
}
