package cuda

import "fmt"

// Report is what zmprobe prints about CUDA: the driver and NVRTC found (or
// why not) and every device with its live free memory.
type Report struct {
	DriverLibrary string       `json:"driver_library,omitempty"`
	DriverVersion string       `json:"driver_version,omitempty"` // CUDA version the driver supports, e.g. "13.0"
	NVRTC         string       `json:"nvrtc_version,omitempty"`
	NVRTCLibrary  string       `json:"nvrtc_library,omitempty"`
	Devices       []DeviceInfo `json:"devices"`
	Error         string       `json:"error,omitempty"`       // the driver's load error, or a device's
	NVRTCError    string       `json:"nvrtc_error,omitempty"` // NVRTC's load error (kernels cannot be compiled; cached ones still load)
}

// ProbeReport probes the driver, NVRTC and every device. It never fails:
// what could not be found is in Error / NVRTCError.
func ProbeReport() Report {
	rep := Report{Devices: []DeviceInfo{}}
	v, err := DriverVersion()
	if err != nil {
		rep.Error = err.Error()
		return rep
	}
	rep.DriverLibrary = DriverPath()
	rep.DriverVersion = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	if nv, path, err := NVRTCVersion(); err != nil {
		rep.NVRTCError = err.Error()
	} else {
		rep.NVRTC, rep.NVRTCLibrary = nv, path
	}
	devs, err := Probe()
	rep.Devices = append(rep.Devices, devs...)
	if err != nil {
		rep.Error = err.Error()
	}
	return rep
}
