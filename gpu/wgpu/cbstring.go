//go:build !windows

package wgpu

// cbString is how a WGPUStringView argument reaches a callback: by value in
// two registers on the System V and AAPCS64 ABIs.
type cbString = StringView

func svString(s cbString) string { return s.String() }
