package ssim2

import "testing"

// The halo SSIMULACRA2 derives, pinned: a change in a kernel or in the
// tail analysis must show up here.
func TestSSIM2StripHalo(t *testing.T) {
	if s := ssim2StripSpec(); s.Halo != 192 || s.Align != 32 || s.MinCrop != 256 {
		t.Errorf("ssim2 spec %+v, want halo 192 (6 rows × 32) align 32", s)
	}
}

// The recursive blur's response: the FIR part ends at distance 4, the
// float32-coefficient ring after it stays below 1.5e-7 and does not decay.
func TestSSIM2BlurTail(t *testing.T) {
	tail := ssim2BlurTail(200)
	if tail[4] < 1e-3 {
		t.Errorf("|h[4]| = %.3g: the FIR part should still be large at 4", tail[4])
	}
	ring := 0.0
	for d := 5; d <= 200; d++ {
		ring = max(ring, tail[d])
	}
	if ring > 1.5e-7 || ring < 1e-8 {
		t.Errorf("ring beyond 5 rows: max %.3g, want in [1e-8, 1.5e-7]", ring)
	}
	if far := max(tail[195], tail[194], tail[193]); far < 1e-8 {
		t.Errorf("ring at 195 rows %.3g: expected undamped", far)
	}
	t.Logf("|h[0..5]| = %.4g %.4g %.4g %.4g %.4g %.3g; ring max %.3g", tail[0], tail[1], tail[2], tail[3], tail[4], tail[5], ring)
}
