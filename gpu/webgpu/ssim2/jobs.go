package ssim2

import (
	"fmt"
	"strings"

	"github.com/zenmetrics-go/zenmetrics/gpu/webgpu"
)

// Pyramid buffers and job tables: the scales and channels of a score side
// by side.
//
// The blurs and maps of SSIMULACRA2 are 6 scales × 3 channels independent
// pieces of work (each a sequential recursion along rows, then columns).
// Dispatched one (scale, channel) at a time, every dispatch waited for the
// one before it (Dawn puts a full compute barrier before each dispatch
// that writes a buffer used before), so the GPU ran 54 short, mostly
// latency-bound dispatches back to back and was nearly idle on the small
// scales: 3.1 ms per score at 1 MP on an H200 where the arithmetic takes
// well under 0.1 ms. Now each plane of a scale and channel lives at an
// offset in a pyramid buffer that holds every scale (and, where the
// binding limit allows, every channel): the reference's XYB, the distorted
// image's XYB, each of the five horizontal blurs and the kept blurs all use
// one layout, so one offset (Params.base) finds a job's plane in every
// buffer. A job table (a uniform array of SSIM2_JOBS Params, one per job,
// workgroup_id.z picks it) lets one dispatch of hblur, vstate and vmaps run
// all jobs at once. Every value is computed by the same operations in the
// same order as before, so scores are the same bits.

// ssim2PlaneAlign is the alignment of a plane in a pyramid buffer, in
// floats: hblur4 reads rows as 16-byte vectors (base % 4 == 0); 256 bytes
// keep planes off each other's cache lines.
const ssim2PlaneAlign = 64

// ssim2MaxJobs is SSIM2_JOBS in ssim2_color.wgsl: the Params in one job
// table (6 scales × 3 channels).
const ssim2MaxJobs = 18

// ssim2JobsBytes is the size of a job table's uniform buffer (the WGSL
// array is fixed-size, so the binding must hold all of it).
const ssim2JobsBytes = ssim2MaxJobs * ssim2ParamBytes

// ssim2Pyr is where each (scale, channel) plane of a pyramid lives: in
// buffer buf(c), from float off[s][c].
type ssim2Pyr struct {
	nb   int         // buffers per pyramid: 1 (all channels) or 3 (one each)
	off  [][3]uint32 // per scale and channel: first float of the plane
	size int64       // floats of each buffer (the largest)
}

// ssim2ChannelFloats is the floats of one channel's pyramid of plan in a
// pyramid buffer (planes aligned to ssim2PlaneAlign).
func ssim2ChannelFloats(plan []ssim2Scale) int64 {
	var n int64
	for _, sc := range plan {
		n += alignFloats(int64(sc.W) * int64(sc.H))
	}
	return n
}

func alignFloats(n int64) int64 {
	return (n + ssim2PlaneAlign - 1) / ssim2PlaneAlign * ssim2PlaneAlign
}

// ssim2PyrBuffers is how many buffers a pyramid of plan takes on a device
// whose largest binding (and buffer) is limit bytes: 1 when all three
// channels fit one binding, else 3. Callers check that one channel fits
// (ssim2ChannelFloats · 4 ≤ limit) first.
func ssim2PyrBuffers(plan []ssim2Scale, limit uint64) int {
	if uint64(3*4*ssim2ChannelFloats(plan)) <= limit {
		return 1
	}
	return 3
}

// newSSIM2Pyr lays out plan's planes in nb buffers: channel by channel,
// scale by scale within each buffer.
func newSSIM2Pyr(plan []ssim2Scale, nb int) ssim2Pyr {
	l := ssim2Pyr{nb: nb, off: make([][3]uint32, len(plan))}
	var at [3]int64
	for c := 0; c < 3; c++ {
		b := l.buf(c)
		for s, sc := range plan {
			l.off[s][c] = uint32(at[b])
			at[b] += alignFloats(int64(sc.W) * int64(sc.H))
		}
	}
	l.size = max(at[0], at[1], at[2])
	return l
}

// buf is the buffer that holds channel c.
func (l *ssim2Pyr) buf(c int) int {
	if l.nb == 1 {
		return 0
	}
	return c
}

// groups lists the channels of each dispatch: all three together when
// they share a buffer, else one dispatch per channel (group i binds
// buffer i).
func (l *ssim2Pyr) groups() [][]int {
	if l.nb == 1 {
		return [][]int{{0, 1, 2}}
	}
	return [][]int{{0}, {1}, {2}}
}

// take allocates the nb buffers of one pyramid.
func (l *ssim2Pyr) take(g *webgpu.GPU, t *webgpu.Buffers) []*webgpu.Buffer {
	out := make([]*webgpu.Buffer, l.nb)
	for i := range out {
		out[i] = t.Storage(g, 4*l.size)
	}
	return out
}

// ssim2XYBOut is the WGSL prefix of the unpack and downsample kernels: the
// XYB output bindings from binding first on and put_xyb. With split, three
// buffers (one per channel); else one buffer holding all three planes
// (binding one buffer writable three times is a validation error).
func ssim2XYBOut(first int, split bool) string {
	var b strings.Builder
	if split {
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> xyb_x: array<f32>;\n", first)
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> xyb_y: array<f32>;\n", first+1)
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> xyb_b: array<f32>;\n", first+2)
		b.WriteString("fn put_xyb(i: u32, v: vec3<f32>) {\n  xyb_x[P.base + i] = v.x;\n  xyb_y[P.base1 + i] = v.y;\n  xyb_b[P.base2 + i] = v.z;\n}\n")
	} else {
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> xyb: array<f32>;\n", first)
		b.WriteString("fn put_xyb(i: u32, v: vec3<f32>) {\n  xyb[P.base + i] = v.x;\n  xyb[P.base1 + i] = v.y;\n  xyb[P.base2 + i] = v.z;\n}\n")
	}
	return b.String()
}

// xybOut lists the buffers bound as the XYB outputs of pyramid bufs
// (ssim2XYBOut's layout).
func (l *ssim2Pyr) xybOut(bufs []*webgpu.Buffer) []*webgpu.Buffer {
	if l.nb == 1 {
		return bufs[:1]
	}
	return bufs[:3]
}

// withBases sets p's base, base1 and base2 to scale s's X, Y and B planes
// (unpack and downsample) and returns p.
func (l *ssim2Pyr) withBases(p *ssim2Params, s int) *ssim2Params {
	p.Base, p.Base1, p.Base2 = l.off[s][0], l.off[s][1], l.off[s][2]
	return p
}

// ssim2Jobs is one job table: the Params of n (scale, channel) jobs in a
// uniform buffer, and the dispatch size that covers the largest.
type ssim2Jobs struct {
	buf              *webgpu.Buffer
	n                int
	maxW, maxH       int
	maxBands         int
	bands            bool // some job has more than one row band (vstate)
	scales, channels []int
}

// ssim2JobTables builds one job table per channel group of pyr: the jobs
// (s, c) of plan with keep(s) (nil: all), in order of scale then channel
// (the largest first, so they start first), with the Params mk(s, c) plus
// the plane offset (added to mk's Base, usually 0). bands[s] is the row bands of scale s (nil: 1).
// Groups without jobs get an empty table (n = 0, no buffer).
func ssim2JobTables(g *webgpu.GPU, t *webgpu.Buffers, pyr *ssim2Pyr, plan []ssim2Scale, bands []int,
	keep func(s int) bool, mk func(s, c int) *ssim2Params) []ssim2Jobs {
	var out []ssim2Jobs
	for _, chans := range pyr.groups() {
		var j ssim2Jobs
		var data []byte
		for s, sc := range plan {
			if keep != nil && !keep(s) {
				continue
			}
			for _, c := range chans {
				p := mk(s, c)
				p.Base += pyr.off[s][c] // mk may start a job below the plane's top (band.go)
				data = append(data, p.bytes()...)
				j.n++
				j.scales, j.channels = append(j.scales, s), append(j.channels, c)
				j.maxW, j.maxH = max(j.maxW, sc.W), max(j.maxH, sc.H)
				nb := 1
				if bands != nil {
					nb = bands[s]
				}
				j.maxBands = max(j.maxBands, nb)
				j.bands = j.bands || nb > 1
			}
		}
		if j.n > 0 {
			j.buf = t.Uniform(g, ssim2JobsBytes)
			if t.Err == nil {
				g.Write(j.buf, 0, data)
			}
		}
		out = append(out, j)
	}
	return out
}
