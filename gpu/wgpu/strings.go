package wgpu

import "unsafe"

// String copies the view into a Go string. A NULL view is "".
func (s StringView) String() string {
	if s.Data == nil || s.Length == 0 {
		return ""
	}
	if s.Length == Strlen {
		n := 0
		for *(*byte)(unsafe.Add(s.Data, n)) != 0 {
			n++
		}
		return string(unsafe.Slice((*byte)(s.Data), n))
	}
	return string(unsafe.Slice((*byte)(s.Data), s.Length))
}

// MakeStringView returns a view of a Go-heap copy of s. The copy stays
// alive as long as the returned view (or the struct that holds it) is
// reachable: keep that struct alive across the native call.
func MakeStringView(s string) StringView {
	if s == "" {
		return StringView{Data: nil, Length: Strlen}
	}
	b := []byte(s)
	return StringView{Data: unsafe.Pointer(&b[0]), Length: uintptr(len(b))}
}

// NullStringView is the "no string" view (NULL, WGPU_STRLEN).
func NullStringView() StringView { return StringView{Data: nil, Length: Strlen} }

// Features copies the features list into a Go slice.
func (f SupportedFeatures) List() []FeatureName {
	if f.FeatureCount == 0 || f.Features == nil {
		return nil
	}
	return append([]FeatureName(nil), unsafe.Slice(f.Features, f.FeatureCount)...)
}

// Heaps copies the heap list into a Go slice.
func (p *AdapterPropertiesMemoryHeaps) Heaps() []MemoryHeapInfo {
	if p.HeapCount == 0 || p.HeapInfo == nil {
		return nil
	}
	return append([]MemoryHeapInfo(nil), unsafe.Slice(p.HeapInfo, p.HeapCount)...)
}

// List copies the compilation messages out.
func (c *CompilationInfo) List() []CompilationMessage {
	if c == nil || c.MessageCount == 0 || c.Messages == nil {
		return nil
	}
	return unsafe.Slice(c.Messages, c.MessageCount)
}

// cString returns a NUL-terminated Go-heap copy of s.
func cString(s string) *byte {
	b := append([]byte(s), 0)
	return &b[0]
}
