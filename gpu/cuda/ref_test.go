package cuda

import (
	"context"
	"errors"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
)

// refSlot is a slot without a device, for the skeleton's tests.
type refSlot struct{ raw *Buffer }

func (*refSlot) Worker() *Worker { return nil }

// newTestRef is a RefBase on a backend without a device, its slots
// counted: no buffer is allocated, so Release frees nothing but slots.
func newTestRef(made, freed *int, raws *[]int64) *StripBase[*refSlot] {
	r := &StripBase[*refSlot]{}
	r.Init(&Backend{}, 2, SlotFuncs[*refSlot]{
		New: func(raw int64) (*refSlot, error) {
			*made++
			*raws = append(*raws, raw)
			return &refSlot{raw: &Buffer{Size: raw}}, nil
		},
		Free: func(*refSlot) { *freed++ },
		Raw:  func(s *refSlot) **Buffer { return &s.raw },
	})
	return r
}

// The reference skeleton without a device: a score's checks in order
// (released, then the image, then ctx), a slot sized by raw and given
// back, a panic returned as an error, a failed Build releasing the
// reference, Release once with its drop, and a strip reference's slot
// sized to the larger of the distorted and the kept crop.
func TestRefBase(t *testing.T) {
	ctx := context.Background()
	var made, freed int
	var raws []int64
	r := newTestRef(&made, &freed, &raws)
	dist := zenmetrics.NewImage(10, 6, zenmetrics.RGB8)
	ran := 0
	score := func(s *refSlot) error { ran++; return nil }
	if err := r.RefBase.Scored(ctx, dist, 10, 6, RawBytes, score); err != nil || ran != 1 || made != 1 || raws[0] != RawBytes(dist) {
		t.Fatalf("score: %v, ran %d, %d slots made for %v", err, ran, made, raws)
	}
	var sm *zenmetrics.SizeMismatchError
	if err := r.RefBase.Scored(ctx, dist, 11, 6, RawBytes, score); !errors.As(err, &sm) || ran != 1 {
		t.Fatalf("size mismatch: %v, ran %d", err, ran)
	}
	if err := r.RefBase.Scored(ctx, &zenmetrics.Image{Width: 10, Height: 6}, 10, 6, RawBytes, score); !errors.Is(err, zenmetrics.ErrBadInput) || ran != 1 {
		t.Fatalf("invalid image: %v, ran %d", err, ran)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.RefBase.Scored(done, dist, 10, 6, RawBytes, score); !errors.Is(err, context.Canceled) || ran != 1 {
		t.Fatalf("cancelled: %v, ran %d", err, ran)
	}
	var pe *zenmetrics.PanicError
	if err := r.Scoring(ctx, dist, 10, 6, func() error { panic("boom") }); !errors.As(err, &pe) {
		t.Fatalf("panic: %v", err)
	}
	// A strip reference takes its tallest crop of dist and, with a host
	// copy (tightly packed), of that copy: the larger one.
	if err := r.Scored(ctx, dist, 10, 6, 3, func(*refSlot) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var sm2, sf2 int
	var sraws []int64
	sr := newTestRef(&sm2, &sf2, &sraws)
	padded := &zenmetrics.Image{Width: 10, Height: 6, Format: zenmetrics.RGBA16, Stride: 100, Pix: make([]byte, 600)}
	padded.Pix[579] = 7 // the last byte of the last row
	sr.KeepHost(padded)
	if sr.Host.Stride != 80 || sr.Host.Pix[len(sr.Host.Pix)-1] != 7 {
		t.Fatalf("host copy: stride %d, last byte %d", sr.Host.Stride, sr.Host.Pix[len(sr.Host.Pix)-1])
	}
	if err := sr.Scored(ctx, dist, 10, 6, 3, score); err != nil || ran != 2 || len(sraws) != 1 || sraws[0] != 80*2+80 || CropRaw(dist, 3) != 30*2+30 {
		t.Fatalf("strip score: %v, ran %d, slots for %v", err, ran, sraws)
	}
	sr.Release(nil)
	if sr.Host != nil || sf2 != 1 {
		t.Fatalf("strip release: host kept %v, %d slots freed", sr.Host != nil, sf2)
	}
	drops := 0
	r.Release(func() { drops++ })
	r.Release(func() { drops++ })
	if drops != 1 || freed != made {
		t.Fatalf("release: %d drops, %d of %d slots freed", drops, freed, made)
	}
	if err := r.RefBase.Scored(ctx, dist, 10, 6, RawBytes, score); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Fatalf("after Release: %v", err)
	}
	// Build: no slot without a queue; a failed queue releases.
	made, freed, raws = 0, 0, nil
	q := newTestRef(&made, &freed, &raws)
	if err := q.Build(ctx, 100, func(func(int64) *Buffer) {}, nil); err != nil || made != 0 {
		t.Fatalf("build without a queue: %v, %d slots", err, made)
	}
	bad := errors.New("queue")
	if err := q.Build(ctx, 100, func(func(int64) *Buffer) {}, func(*refSlot) error { return bad }); err != bad || made != 1 || freed != 1 {
		t.Fatalf("failed build: %v, %d made, %d freed", err, made, freed)
	}
	if err := q.Scoring(ctx, dist, 10, 6, func() error { return nil }); !errors.Is(err, zenmetrics.ErrReleased) {
		t.Fatalf("after a failed build: %v", err)
	}
}

func TestFloats(t *testing.T) {
	b := []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0x80, 0x3f}
	if f := Float64s(b, 1); len(f) != 1 || f[0] != 1 {
		t.Errorf("Float64s: %v", f)
	}
	if f := Float32s(b[8:], 1); len(f) != 1 || f[0] != 1 {
		t.Errorf("Float32s: %v", f)
	}
}
