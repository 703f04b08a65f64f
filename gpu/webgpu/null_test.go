package webgpu

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// With no Vulkan driver Dawn hands out only its Null adapter, which
// "succeeds" and computes zeros: Open must refuse it. The Vulkan loader
// reads its driver list once per process, so this runs in a child process.
func TestNullAdapterRefused(t *testing.T) {
	if os.Getenv("ZM_NULL_CHILD") == "1" {
		_, err := Open(context.Background(), nil)
		var ne *NoAdapterError
		if !errors.As(err, &ne) || !errors.Is(err, zenmetrics.ErrUnsupported) || !strings.Contains(err.Error(), "Null") {
			t.Fatalf("want NoAdapterError naming the Null backend, got %v", err)
		}
		t.Logf("%v", err)
		return
	}
	device(t) // skip when there is no runtime at all
	cmd := exec.Command(os.Args[0], "-test.run=^TestNullAdapterRefused$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "ZM_NULL_CHILD=1", "VK_ICD_FILENAMES=/nonexistent/icd.json", "VK_DRIVER_FILES=/nonexistent/icd.json")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Null") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
