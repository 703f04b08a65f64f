package zenmetrics

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseMetricRoundTrip(t *testing.T) {
	for _, m := range AllMetrics() {
		got, err := ParseMetric(strings.ToUpper(m.String()))
		if err != nil || got != m {
			t.Errorf("ParseMetric(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back Metric
		if err := json.Unmarshal(b, &back); err != nil || back != m {
			t.Errorf("JSON round trip of %v: %s -> %v, %v", m, b, back, err)
		}
	}
	if m, err := ParseMetric("ssimulacra2"); err != nil || m != SSIMULACRA2 {
		t.Errorf("alias ssimulacra2: %v, %v", m, err)
	}
	if _, err := ParseMetric("psnr"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown metric: err = %v, want ErrUnsupported", err)
	}
	if Metric(0).Valid() || Metric(99).Valid() {
		t.Error("invalid metrics reported valid")
	}
}

func TestParseMetrics(t *testing.T) {
	ms, err := ParseMetrics("ssim2, butteraugli,ssim2")
	if err != nil || len(ms) != 2 || ms[0] != SSIMULACRA2 || ms[1] != Butteraugli {
		t.Fatalf("ParseMetrics = %v, %v", ms, err)
	}
	if _, err := ParseMetrics(" , "); err == nil {
		t.Error("empty list accepted")
	}
	if _, err := ParseMetrics("ssim2,nope"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("bad list: %v", err)
	}
}

func TestImageValidate(t *testing.T) {
	good := NewImage(3, 2, RGBA16)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if good.Stride != 3*8 || len(good.Pix) != 48 {
		t.Fatalf("NewImage layout: stride %d len %d", good.Stride, len(good.Pix))
	}
	// The last row may be short of a full stride: a sub-image view.
	view := &Image{Width: 2, Height: 2, Format: RGB8, Stride: 9, Pix: make([]byte, 9+6)}
	if err := view.Validate(); err != nil {
		t.Errorf("view with short last row: %v", err)
	}
	bad := []*Image{
		nil,
		{Width: 0, Height: 1, Format: RGB8, Stride: 0},
		{Width: 2, Height: 2, Format: 0, Stride: 6, Pix: make([]byte, 12)},
		{Width: 2, Height: 2, Format: RGB8, Stride: 5, Pix: make([]byte, 12)},
		{Width: 2, Height: 2, Format: RGB8, Stride: 6, Pix: make([]byte, 11)},
	}
	for i, im := range bad {
		if err := im.Validate(); !errors.Is(err, ErrBadInput) {
			t.Errorf("case %d: err = %v, want ErrBadInput", i, err)
		}
	}
}

func TestSample16BigEndian(t *testing.T) {
	im := NewImage(1, 1, Gray16)
	im.Pix[0], im.Pix[1] = 0x12, 0x34
	if v := im.Sample(0, 0, 0); v != 0x1234 {
		t.Fatalf("Sample = %#x", v)
	}
	if Gray16.MaxValue() != 65535 || RGB8.MaxValue() != 255 {
		t.Fatal("MaxValue")
	}
	for f := Gray8; f <= RGBA16; f++ {
		if f.HasAlpha() != (f.Channels()%2 == 0) {
			t.Errorf("%v HasAlpha wrong", f)
		}
	}
}

func TestTypedErrors(t *testing.T) {
	a, b := NewImage(4, 3, RGB8), NewImage(3, 4, RGB8)
	err := CheckSameSize(a, b)
	if !errors.Is(err, ErrSizeMismatch) || !strings.Contains(err.Error(), "4x3") || !strings.Contains(err.Error(), "3x4") {
		t.Errorf("size mismatch error %q", err)
	}
	oom := error(&OutOfMemoryError{Backend: "webgpu:x", Requested: 10, Free: -1})
	if !errors.Is(&InputError{Path: "p", Err: oom}, ErrOutOfMemory) {
		t.Error("OOM not matched through InputError")
	}
	if !errors.Is(&TooSmallError{Metric: SSIMULACRA2, Width: 4, Height: 4, MinWidth: 8, MinHeight: 8}, ErrBadInput) {
		t.Error("TooSmallError does not match ErrBadInput")
	}
}

type panicky struct{}

func (panicky) Name() string                                                        { return "panicky" }
func (panicky) Estimate(Metric, int, int, Mode) (int64, bool)                       { return 0, true }
func (panicky) Close() error                                                        { return nil }
func (panicky) Prepare(context.Context, Metric, *Image, Options) (Reference, error) { panic("boom") }

func TestRecover(t *testing.T) {
	run := func() (err error) {
		defer Recover(&err)
		_, err = ScoreOnce(context.Background(), panicky{}, SSIMULACRA2, NewImage(8, 8, RGB8), NewImage(8, 8, RGB8), Options{})
		return err
	}
	var pe *PanicError
	if err := run(); !errors.As(err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
		t.Fatalf("Recover gave %v", err)
	}
}
