package all_test

import (
	"context"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
)

// uploadTestImage is a w×h RGB8 image with a pattern that depends on seed,
// so that a distorted image differs from its reference.
func uploadTestImage(w, h int, seed byte) *zenmetrics.Image {
	im := zenmetrics.NewImage(w, h, zenmetrics.RGB8)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			o := y*im.Stride + 3*x
			im.Pix[o] = byte(x*3+y) ^ seed
			im.Pix[o+1] = byte(x + 2*y)
			im.Pix[o+2] = byte(x*y) + seed
		}
	}
	return im
}

// TestUploadStats checks that Backend.UploadStats books the host side of
// each upload where the caller needs it: a reference's under Ref* (it is
// made inside Prepare), a distorted image's under Count/Total/Bytes (inside
// Score), for both upload paths (writeBuffer below webgpu.StagingMin, the mapped
// staging buffer from it) and both metrics.
func TestUploadStats(t *testing.T) {
	b := webgpu.NewBackendOn(gputest.Device(t))
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		m    zenmetrics.Metric
		w, h int
	}{
		{"ssim2-small", zenmetrics.SSIMULACRA2, 64, 64},
		{"ssim2-staging", zenmetrics.SSIMULACRA2, 640, 576}, // 1.05 MiB ≥ stagingMin
		{"butteraugli-small", zenmetrics.Butteraugli, 64, 48},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := uploadTestImage(tc.w, tc.h, 0)
			dist := uploadTestImage(tc.w, tc.h, 0x55)
			need := int64(tc.w * tc.h * 3)
			if big := need >= webgpu.StagingMin; big != (tc.w*tc.h > 500*500) {
				t.Fatalf("test case %s does not exercise the path it is named for (need %d B)", tc.name, need)
			}

			s0 := b.UploadStats()
			r, err := b.Prepare(ctx, tc.m, ref, zenmetrics.Options{})
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			defer r.Release()
			s1 := b.UploadStats()
			d := s1.Sub(s0)
			if d.RefCount < 1 || d.RefBytes != d.RefCount*need || d.RefTotal <= 0 {
				t.Errorf("after Prepare: ref uploads %d, %d B, %v; want ≥ 1 of %d B each, time > 0", d.RefCount, d.RefBytes, d.RefTotal, need)
			}
			if d.Count != 0 || d.Bytes != 0 || d.Total != 0 {
				t.Errorf("Prepare booked score uploads: %+v", d)
			}

			if _, err := r.Score(ctx, dist); err != nil {
				t.Fatalf("Score: %v", err)
			}
			d = b.UploadStats().Sub(s1)
			if d.Count < 1 || d.Bytes != d.Count*need || d.Total <= 0 {
				t.Errorf("after Score: uploads %d, %d B, %v; want ≥ 1 of %d B each, time > 0", d.Count, d.Bytes, d.Total, need)
			}
			if d.RefCount != 0 || d.RefBytes != 0 || d.RefTotal != 0 {
				t.Errorf("Score booked reference uploads: %+v", d)
			}
			t.Logf("%s: %d upload(s) of %d B in %v (%.0f MB/s host side)", tc.name, d.Count, need, d.Total,
				float64(d.Bytes)/1e6/d.Total.Seconds())
		})
	}
}
