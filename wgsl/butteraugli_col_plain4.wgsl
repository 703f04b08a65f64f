// Butteraugli blur, second half without a pointwise step, 4 columns per
// thread (butteraugli_col4.wgsl): what butteraugli_col_plain.wgsl
// computes. The host writes the bindings and cols up to here (blur.go's
// bfCol4Head for bfStageMask: the blur b of the row plane; plane 0 the
// output), and the store ends cols.

  col4_put(0u, y * w + x, x, w, b);
}
