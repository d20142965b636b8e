/* In-place optimizer updates on float32, one pass where NumPy's kernels take two.
 *
 * What the caller guarantees (pullback/optim/_native.py, which declines anything else): both
 * arrays are C-contiguous float32 with at least hi elements and do not overlap (restrict), and
 * 0 <= lo <= hi.
 *
 * Each product is rounded to float32 before the add, as NumPy's multiply-into-scratch then add
 * rounds it: the build's -std=c99 turns off gcc's contraction into a fused multiply-add, so an
 * eager step gives the same bits as a compiled one, which records the two ops. */
#include <stdint.h>

/* target += alpha * source */
void add_scaled_f32(int64_t lo, int64_t hi, float *restrict target, const float *restrict source,
                    float alpha) {
    for (int64_t i = lo; i < hi; i++) {
        float scaled = alpha * source[i];
        target[i] = target[i] + scaled;
    }
}
