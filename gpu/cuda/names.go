package cuda

import (
	"path/filepath"
	"strings"
)

// Environment variables that name the libraries explicitly. When one is
// set it is the only candidate for its library, so a wrong path is
// reported instead of silently replaced by another copy.
const (
	EnvDriverLib = "ZENMETRICS_CUDA_LIB"
	EnvNVRTCLib  = "ZENMETRICS_NVRTC_LIB"
)

// nvrtcVersions are the NVRTC major versions tried, newest first. NVRTC
// 11.2 is the first with a stable soname (libnvrtc.so.11.2); from 12 on the
// soname carries the major version only.
var nvrtcVersions = []string{"13", "12", "11.2"}

// driverCandidates lists where the driver library is looked for on goos:
// the soname through the system loader (the driver installs it in the
// loader's path; there is no point guessing directories for it), or the
// environment override alone.
func driverCandidates(goos string, getenv func(string) string) []string {
	if p := getenv(EnvDriverLib); p != "" {
		return []string{p}
	}
	switch goos {
	case "linux":
		return []string{"libcuda.so.1", "libcuda.so"}
	case "windows":
		return []string{"nvcuda.dll"}
	}
	return nil
}

// nvrtcCandidates lists where NVRTC is looked for on goos/goarch: the
// override alone if set; else each version by soname through the loader,
// then in the toolkit's library directories (CUDA_PATH, /usr/local/cuda),
// which are often not in the loader's path because the toolkit does not
// add them there.
func nvrtcCandidates(goos, goarch string, getenv func(string) string) []string {
	if p := getenv(EnvNVRTCLib); p != "" {
		return []string{p}
	}
	var names, dirs []string
	switch goos {
	case "linux":
		for _, v := range nvrtcVersions {
			names = append(names, "libnvrtc.so."+v)
		}
		names = append(names, "libnvrtc.so")
		arch := map[string]string{"amd64": "x86_64", "arm64": "sbsa"}[goarch]
		for _, root := range rootsOf(getenv("CUDA_PATH"), getenv("CUDA_HOME"), "/usr/local/cuda") {
			dirs = append(dirs, filepath.Join(root, "lib64"))
			if arch != "" {
				dirs = append(dirs, filepath.Join(root, "targets", arch+"-linux", "lib"))
			}
		}
	case "windows":
		for _, v := range nvrtcVersions {
			names = append(names, "nvrtc64_"+strings.ReplaceAll(v, ".", "")+func() string {
				if strings.Contains(v, ".") {
					return "_0.dll"
				}
				return "0_0.dll"
			}())
		}
		for _, root := range rootsOf(getenv("CUDA_PATH")) {
			dirs = append(dirs, root+`\bin\x64`, root+`\bin`)
		}
	default:
		return nil
	}
	out := append([]string(nil), names...)
	for _, d := range dirs {
		for _, n := range names {
			if goos == "windows" {
				out = append(out, d+`\`+n)
			} else {
				out = append(out, filepath.Join(d, n))
			}
		}
	}
	return out
}

func rootsOf(paths ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
