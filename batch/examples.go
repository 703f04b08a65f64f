package batch

import (
	"fmt"
	"strings"
)

// examples counts occurrences of something worth one warning and keeps
// the first few, so that 100,000 copies of a manifest row make one line
// ("99999 ...: x (ssim2, line 3), x (ssim2, line 4), x (ssim2, line 5) and
// 99996 more"), not 99,999.
type examples struct {
	n     int
	first []string
}

const maxExamples = 3

func (e *examples) add(s string) {
	e.n++
	if len(e.first) < maxExamples {
		e.first = append(e.first, s)
	}
}

func (e examples) String() string {
	s := strings.Join(e.first, ", ")
	if more := e.n - len(e.first); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}
