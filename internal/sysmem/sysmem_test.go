package sysmem

import (
	"runtime"
	"testing"
)

// TestTotal: on the OSes with a probe the figure is known and at least
// what the Go runtime already holds (a lower bound that cannot be wrong).
func TestTotal(t *testing.T) {
	tot := Total()
	switch runtime.GOOS {
	case "linux", "darwin", "windows":
	default:
		t.Skipf("no probe on %s", runtime.GOOS)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if tot < int64(ms.Sys) {
		t.Fatalf("Total() = %d, less than the %d bytes this process holds", tot, ms.Sys)
	}
	if b := DefaultBudget(); b <= 0 || b > tot {
		t.Fatalf("DefaultBudget() = %d for Total %d", b, tot)
	}
	t.Logf("Total %d MiB, DefaultBudget %d MiB", tot>>20, DefaultBudget()>>20)
}
