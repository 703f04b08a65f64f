//go:build noasm

package iwssim

// gonumAsm: -tags noasm makes gonum use its Go kernels, whose sums run in
// another order than its amd64 assembly (see asm_test.go).
const gonumAsm = false
