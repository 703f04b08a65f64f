package batch

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestStagesFooterWording: the footer's words agree with its verdict. It
// used to print "(decode-bound signal)" beside the scorers' idle time and
// then "bound: score", which read as a contradiction; now the waits are
// described plainly and the verdict carries the two shares it compares.
func TestStagesFooterWording(t *testing.T) {
	for _, tc := range []struct {
		name        string
		st          Stages
		bound, want string
	}{
		// 2 workers idle 0.4 s of 2×10 s (2%); 2 decoders blocked 6 s of 2×10 s (30%).
		{"score", Stages{Decoders: 2, Workers: 2, Decodes: 10, Scores: 10, ScorerIdle: 0.4, SubmitWait: 5, BudgetWait: 1}, "score",
			"bound: score (decoders blocked 30% of their time, scorers idle 2% of theirs)"},
		// Idle 12 s of 20 (60%) against blocked 0.2 s of 20 (1%).
		{"decode", Stages{Decoders: 2, Workers: 2, Decodes: 10, Scores: 10, ScorerIdle: 12, SubmitWait: 0.2}, "decode",
			"bound: decode (decoders blocked 1% of their time, scorers idle 60% of theirs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := &Summary{Elapsed: 10 * time.Second, Stages: tc.st}
			if b := tc.st.Bound(10); b != tc.bound {
				t.Fatalf("Bound = %q, want %q", b, tc.bound)
			}
			var buf bytes.Buffer
			PrintStages(&buf, sum)
			out := buf.String()
			if !strings.Contains(out, tc.want) {
				t.Errorf("footer lacks %q:\n%s", tc.want, out)
			}
			if strings.Contains(out, "decode-bound") || strings.Contains(out, "score-bound") {
				t.Errorf("footer still labels the waits with a verdict of their own:\n%s", out)
			}
		})
	}
}
