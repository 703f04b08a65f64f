package wgsl

import (
	"errors"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

func TestSource(t *testing.T) {
	for _, name := range []string{"probe_saxpy", "probe_saxpy.wgsl"} {
		s, err := Source(name)
		if err != nil || !strings.Contains(s, "override WG") {
			t.Fatalf("Source(%q) = %.40q, %v", name, s, err)
		}
	}
	if _, err := Source("no_such_shader"); !errors.Is(err, zenmetrics.ErrUnsupported) {
		t.Fatalf("missing shader: %v", err)
	}
	for _, n := range Names() {
		if strings.HasPrefix(n, "probe_") {
			return
		}
	}
	t.Fatalf("no probe shaders in %v", Names())
}
