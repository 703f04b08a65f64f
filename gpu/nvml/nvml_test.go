package nvml

import (
	"errors"
	"os"
	"testing"

	"github.com/zenmetrics-go/zenmetrics"
)

// On a machine without the driver Open must say "unsupported", nothing
// worse; on an NVIDIA machine every call must return something sensible.
func TestOpen(t *testing.T) {
	lib, err := Open()
	if err != nil {
		if !errors.Is(err, zenmetrics.ErrUnsupported) && !errors.Is(err, ErrNVML) {
			t.Fatalf("Open failed with an error that is neither unsupported nor NVML's: %v", err)
		}
		if os.Getenv("ZM_REQUIRE_NVML") != "" {
			t.Fatalf("ZM_REQUIRE_NVML set but: %v", err)
		}
		t.Skipf("no NVML here: %v", err)
	}
	defer func() {
		if err := lib.Close(); err != nil {
			t.Error(err)
		}
		if _, err := lib.DeviceCount(); !errors.Is(err, zenmetrics.ErrUnsupported) {
			t.Errorf("use after Close: %v", err)
		}
	}()
	drv, err := lib.DriverVersion()
	if err != nil || drv == "" {
		t.Fatalf("driver version %q: %v", drv, err)
	}
	n, err := lib.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s, %d device(s)", drv, n)
	for i := range n {
		d, err := lib.Device(i)
		if err != nil {
			t.Fatal(err)
		}
		name, err := d.Name()
		if err != nil || name == "" {
			t.Fatalf("name %q: %v", name, err)
		}
		m, err := d.Memory()
		if err != nil {
			t.Fatal(err)
		}
		if m.Total == 0 || m.Free > m.Total {
			t.Fatalf("memory %+v", m)
		}
		bus, err := d.PCIBusID()
		if err != nil && !errors.Is(err, zenmetrics.ErrUnsupported) {
			t.Fatal(err)
		}
		t.Logf("%d: %s bus %s: %d MiB free of %d", i, name, bus, m.Free>>20, m.Total>>20)
	}
	if _, err := lib.Device(n + 100); err == nil {
		t.Fatal("out-of-range device accepted")
	}
}

func TestErrorMatching(t *testing.T) {
	e := &Error{Func: "x", Code: 12}
	if !errors.Is(e, zenmetrics.ErrUnsupported) || !errors.Is(e, ErrNVML) {
		t.Fatal("library-not-found should be unsupported")
	}
	if !errors.Is(&Error{Code: 15}, zenmetrics.ErrDeviceLost) {
		t.Fatal("GPU lost")
	}
	if errors.Is(&Error{Code: 2}, zenmetrics.ErrUnsupported) {
		t.Fatal("invalid argument is not unsupported")
	}
}
