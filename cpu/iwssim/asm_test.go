//go:build !noasm

package iwssim

// gonumAsm is whether gonum's dot products and rotations run its amd64
// assembly in this build (they do unless -tags noasm), as they did when
// the golden scores were recorded.
const gonumAsm = true
