//go:build (linux && (amd64 || arm64)) || (windows && (amd64 || arm64))

package nvml

import (
	"fmt"
	"sync"

	"github.com/ebitengine/purego"

	"github.com/zenmetrics-go/zenmetrics"
)

var (
	loadOnce sync.Once
	loaded   *functions
	loadErr  error
)

// load opens the library once per process; NVML's own Init/Shutdown
// reference counting handles repeated Open/Close.
func load() (*functions, error) {
	loadOnce.Do(func() { loaded, loadErr = loadLib() })
	return loaded, loadErr
}

func loadLib() (fns *functions, err error) {
	// purego panics on a missing symbol; a damaged or ancient library must
	// read as "unsupported", not take the process down.
	defer func() {
		if v := recover(); v != nil {
			fns, err = nil, fmt.Errorf("%w: nvml: %v", zenmetrics.ErrUnsupported, v)
		}
	}()
	h, err := openLibrary()
	if err != nil {
		return nil, fmt.Errorf("%w: nvml: %s not loadable: %v", zenmetrics.ErrUnsupported, libName, err)
	}
	f := &functions{}
	purego.RegisterLibFunc(&f.init, h, "nvmlInit_v2")
	purego.RegisterLibFunc(&f.shutdown, h, "nvmlShutdown")
	purego.RegisterLibFunc(&f.deviceGetCount, h, "nvmlDeviceGetCount_v2")
	purego.RegisterLibFunc(&f.deviceGetHandleByIndex, h, "nvmlDeviceGetHandleByIndex_v2")
	purego.RegisterLibFunc(&f.deviceGetName, h, "nvmlDeviceGetName")
	purego.RegisterLibFunc(&f.deviceGetMemoryInfo, h, "nvmlDeviceGetMemoryInfo")
	purego.RegisterLibFunc(&f.systemGetDriverVersion, h, "nvmlSystemGetDriverVersion")
	if hasSymbol(h, "nvmlDeviceGetPciInfo_v3") {
		purego.RegisterLibFunc(&f.deviceGetPciInfo, h, "nvmlDeviceGetPciInfo_v3")
	}
	return f, nil
}
