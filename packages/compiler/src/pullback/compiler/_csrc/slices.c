/* compiler.scatter_slices on column ranges: gradients written side by side into the rows of
 * one buffer (the gradient of a q/k/v projection cut in three), out[r, offset_p + c] =
 * piece_p[r, c] + 0 (the + 0 turns -0.0 into 0.0, as the sums it replaces do).
 *
 * The caller (_native_slices.py) passes C-contiguous pieces of `rows` rows and widths[p]
 * columns whose column ranges tile the contiguous output's `out_cols` columns; `pieces` holds
 * their addresses.
 */
#include <stdint.h>

#define SCATTER_COLUMNS(name, type)                                                            \
    void name(int64_t lo, int64_t hi, type *out, const int64_t *pieces, const int64_t *offsets, \
              const int64_t *widths, int64_t n_pieces, int64_t out_cols) {                      \
        for (int64_t p = 0; p < n_pieces; p++) {                                                \
            const type *piece = (const type *)(uintptr_t)pieces[p];                             \
            const int64_t width = widths[p];                                                    \
            for (int64_t r = lo; r < hi; r++) {                                                 \
                const type *src = piece + r * width;                                            \
                type *dst = out + r * out_cols + offsets[p];                                    \
                for (int64_t c = 0; c < width; c++)                                             \
                    dst[c] = src[c] + (type)0;                                                  \
            }                                                                                   \
        }                                                                                       \
    }
SCATTER_COLUMNS(scatter_columns_f32, float)
SCATTER_COLUMNS(scatter_columns_f64, double)
