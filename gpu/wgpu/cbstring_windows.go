//go:build windows

package wgpu

// On Windows x64 a 16-byte struct argument is passed by reference to a
// caller-made copy, and purego callbacks do not take structs, so the
// callback receives a pointer.
type cbString = *StringView

func svString(s cbString) string {
	if s == nil {
		return ""
	}
	return s.String()
}
