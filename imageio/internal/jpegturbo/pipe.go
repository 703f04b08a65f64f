package jpegturbo

import "sync"

// idctPipe overlaps the IDCT of single-scan files with entropy decoding:
// MCU row my is decoded into row buffer my&1 while a worker goroutine
// transforms the other one into the component planes.
type idctPipe struct {
	comps  []*component
	single bool
	mcusX  int
	rows   [2][][]int16 // [slot][scan component] blocks of one MCU row
	free   chan int     // slots the decoder may fill
	jobs   chan int     // MCU rows ready for the IDCT
	wg     sync.WaitGroup
	cur    int
	done   bool
}

func newIDCTPipe(comps []*component, single bool, mcusX int) *idctPipe {
	p := &idctPipe{comps: comps, single: single, mcusX: mcusX, free: make(chan int, 2), jobs: make(chan int, 2)}
	for s := range p.rows {
		p.rows[s] = make([][]int16, len(comps))
		for i, c := range comps {
			v := c.v
			if single {
				v = 1
			}
			p.rows[s][i] = make([]int16, c.bwPad*v*64)
		}
		p.free <- s
	}
	p.wg.Add(1)
	go p.work()
	return p
}

// begin waits for a free row buffer and clears it (the entropy decoders
// write only nonzero coefficients).
func (p *idctPipe) begin(my int) {
	p.cur = <-p.free
	for _, r := range p.rows[p.cur] {
		clear(r)
	}
}

// block is the buffer of block column bx, row y within the MCU row, of c.
func (p *idctPipe) block(c *component, bx, y int) *[64]int16 {
	for i, sc := range p.comps {
		if sc == c {
			return (*[64]int16)(p.rows[p.cur][i][(y*c.bwPad+bx)*64:])
		}
	}
	panic("jpegturbo: component not in scan")
}

func (p *idctPipe) end(my int) { p.jobs <- my<<1 | p.cur }

func (p *idctPipe) stop() {
	if !p.done {
		p.done = true
		close(p.jobs)
		p.wg.Wait()
	}
}

func (p *idctPipe) work() {
	defer p.wg.Done()
	for j := range p.jobs {
		my, slot := j>>1, j&1
		for i, c := range p.comps {
			v := c.v
			if p.single {
				v = 1
			}
			stride := c.bwPad * 8
			for y := 0; y < v; y++ {
				by := my*v + y
				if by >= c.bh {
					break
				}
				row := p.rows[slot][i][y*c.bwPad*64:]
				for bx := 0; bx < c.bw; bx++ {
					idctBlock((*[64]int16)(row[bx*64:]), &c.qt, c.plane[by*8*stride+bx*8:], stride)
				}
			}
		}
		p.free <- slot
	}
}
