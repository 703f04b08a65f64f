package webgpu

import "testing"

// TestUploadStatsSub checks the snapshot difference field by field.
func TestUploadStatsSub(t *testing.T) {
	a := UploadStats{Count: 5, Total: 50, Bytes: 500, RefCount: 2, RefTotal: 20, RefBytes: 200}
	b := UploadStats{Count: 1, Total: 10, Bytes: 100, RefCount: 1, RefTotal: 5, RefBytes: 50}
	want := UploadStats{Count: 4, Total: 40, Bytes: 400, RefCount: 1, RefTotal: 15, RefBytes: 150}
	if got := a.Sub(b); got != want {
		t.Errorf("Sub = %+v, want %+v", got, want)
	}
}
