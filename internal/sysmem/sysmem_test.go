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
	if b := DefaultBudget(); b <= 0 || b > tot || (Available() > 0 && b > Available()) {
		t.Fatalf("DefaultBudget() = %d for Total %d, Available %d", b, tot, Available())
	}
	if a := Available(); a > tot {
		t.Fatalf("Available() = %d > Total() = %d", a, tot)
	}
	if SoftLimit(1<<30) <= 1<<30 || SoftLimit(0) != -1 {
		t.Fatalf("SoftLimit(1 GiB) = %d, SoftLimit(0) = %d", SoftLimit(1<<30), SoftLimit(0))
	}
	t.Logf("Total %d MiB, Available %d MiB, DefaultBudget %d MiB", tot>>20, Available()>>20, DefaultBudget()>>20)
}
