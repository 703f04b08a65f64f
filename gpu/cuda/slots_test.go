package cuda

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The pool without a device: slots made on demand and reused, the limit
// held (a caller waits, and gives up with its context), the memory check
// asked only for slots beyond the first, a failed make returning its
// token, and Close freeing every slot once.
func TestSlotPool(t *testing.T) {
	type slot struct {
		id  int
		raw *Buffer
	}
	var made, freed, checks int
	var failNew error
	p := NewSlotPool(nil, 2, SlotFuncs[*slot]{
		New: func(raw int64) (*slot, error) {
			if failNew != nil {
				return nil, failNew
			}
			made++
			return &slot{id: made, raw: &Buffer{Size: raw}}, nil
		},
		Free:  func(*slot) { freed++ },
		Raw:   func(s *slot) **Buffer { return &s.raw },
		Check: func(int64) error { checks++; return nil },
	})
	ctx := context.Background()
	a, err := p.Get(ctx, 100)
	if err != nil || a.id != 1 || checks != 0 {
		t.Fatalf("first slot %+v, %v, %d checks", a, err, checks)
	}
	p.Put(a)
	if a2, _ := p.Get(ctx, 50); a2 != a || made != 1 {
		t.Fatalf("the idle slot is not reused (%d made)", made)
	}
	b, err := p.Get(ctx, 100)
	if err != nil || b.id != 2 || checks != 1 {
		t.Fatalf("second slot %+v, %v, %d checks", b, err, checks)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := p.Get(short, 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third caller over the limit: %v", err)
	}
	p.Put(a)
	p.Put(b)
	c1, _ := p.Get(ctx, 10)
	c2, _ := p.Get(ctx, 10)
	p.Put(c1)
	p.Put(c2)
	p.Close()
	p.Close()
	if freed != 2 {
		t.Fatalf("%d slots freed, want 2", freed)
	}
	// A make that fails gives its token back: with a limit of one, the
	// next caller gets to try (and fail) too instead of waiting.
	failNew = errors.New("no memory")
	q := NewSlotPool(nil, 1, SlotFuncs[*slot]{
		New:  func(int64) (*slot, error) { return nil, failNew },
		Free: func(*slot) { t.Error("a slot never made is freed") },
		Raw:  func(s *slot) **Buffer { return &s.raw },
	})
	for i := 0; i < 2; i++ {
		if _, err := q.Get(ctx, 10); err != failNew {
			t.Fatalf("failed make %d: %v", i, err)
		}
	}
	q.Close()
}
