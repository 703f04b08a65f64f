package cvvdp

import (
	"testing"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu/internal/gputest"
)

func TestMain(m *testing.M) { gputest.Main(m) }
