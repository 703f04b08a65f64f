package butteraugli

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	zenmetrics "github.com/zenmetrics-go/zenmetrics"
	cpuba "github.com/zenmetrics-go/zenmetrics/cpu/butteraugli"
	"github.com/zenmetrics-go/zenmetrics/gpu/cuda"
	"github.com/zenmetrics-go/zenmetrics/internal/metrictest"
)

// TestEmulated runs butteraugli.cu on the CPU, for machines without a GPU:
// the kernels are compiled by the host C++ compiler (g++, C++20) with a
// small shim (CUDA's built-in variables, __syncthreads as a barrier over
// one OS thread per CUDA thread, blocks one after another), and the launch
// sequences queuePrepare and queueScore record (the host code Prepare and
// Score run) are replayed on them; the scores are checked against
// cpu/butteraugli. Device memory starts as NaN, so a read of anything no
// kernel wrote shows. A thread that leaves before a __syncthreads its
// block-mates reach is reported. Opt-in (ZENMETRICS_CUDA_EMULATE=1): it
// needs g++ and takes seconds per pair.
func TestEmulated(t *testing.T) {
	if os.Getenv("ZENMETRICS_CUDA_EMULATE") != "1" {
		t.Skip("set ZENMETRICS_CUDA_EMULATE=1 (needs g++) to run the kernels on the CPU")
	}
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skipf("no g++: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "emu")
	cpp := filepath.Join(dir, "emu.cpp")
	if err := os.WriteFile(cpp, []byte(emuProgram(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gxx, "-O2", "-std=c++20", "-ffp-contract=off", "-pthread", "-o", bin, cpp).CombinedOutput()
	if err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	cases := []struct {
		w, h   int
		rf, df zenmetrics.PixelFormat
		opt    zenmetrics.Options
	}{
		{64, 48, zenmetrics.RGB8, zenmetrics.RGB8, zenmetrics.Options{PNorm: 2}},
		{37, 29, zenmetrics.RGB16, zenmetrics.RGB16, zenmetrics.Options{IntensityTarget: 250, PNorm: 3}},
		{15, 17, zenmetrics.Gray8, zenmetrics.Gray8, zenmetrics.Options{}},
		{8, 8, zenmetrics.RGB8, zenmetrics.RGB8, zenmetrics.Options{}},
		{40, 33, zenmetrics.RGBA8, zenmetrics.RGBA8, zenmetrics.Options{PNorm: 1.5}},
		{33, 40, zenmetrics.RGB8, zenmetrics.RGBA16, zenmetrics.Options{}},
		{30, 26, zenmetrics.GrayA8, zenmetrics.Gray16, zenmetrics.Options{}},
		{131, 70, zenmetrics.RGB8, zenmetrics.RGB8, zenmetrics.Options{PNorm: 6}},
	}
	for i, c := range cases {
		ref, _ := metrictest.Synthetic(c.w, c.h, int64(40+i), c.rf)
		_, dist := metrictest.Synthetic(c.w, c.h, int64(40+i), c.df)
		name := fmt.Sprintf("%dx%d_%v_%v", c.w, c.h, c.rf, c.df)
		got, dm := emulate(t, bin, dir, ref, dist, c.opt)
		want, err := cpuba.Compare(ref, dist, cpuba.Config{IntensityTarget: c.opt.IntensityTarget, PNorm: c.opt.PNorm, DistMap: true})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for j, v := range dm {
			worst = math.Max(worst, math.Abs(float64(v)-float64(want.DistMap[j])))
		}
		e := [3]float64{relDiff(got[0], want.Max), relDiff(got[1], want.PNorm3), relDiff(got[2], want.PNorm)}
		t.Logf("%s: max %.9f (cpu %.9f) 3-norm %.9f (cpu %.9f) p-norm %.9f (cpu %.9f); rel %.2g %.2g %.2g, map |Δ| %.2g",
			name, got[0], want.Max, got[1], want.PNorm3, got[2], want.PNorm, e[0], e[1], e[2], worst)
		if e[0] > 1e-5 || e[1] > 1e-5 || e[2] > 1e-5 || worst > 1e-5*want.Max || math.IsNaN(got[0]+got[1]+got[2]) {
			t.Errorf("%s: emulated kernels differ from the CPU reference", name)
		}
	}
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// emulate records one prepare and score, replays it with the emulator and
// returns (max, 3-norm, p-norm) and the map.
func emulate(t *testing.T, bin, dir string, ref, dist *zenmetrics.Image, opt zenmetrics.Options) ([3]float64, []float32) {
	t.Helper()
	it, err := checkOptions(opt)
	if err != nil {
		t.Fatal(err)
	}
	w, h := ref.Width, ref.Height
	lv := levels(w, h)
	fa := &fakeAlloc{}
	var bufs []*cuda.Buffer
	alloc := func(n int64) *cuda.Buffer {
		b := fa.alloc(n)
		bufs = append(bufs, b)
		return b
	}
	variants := 1
	if ref.Format.HasAlpha() {
		variants = 2
	}
	var sets [][]planeSet
	for v := 0; v < variants; v++ {
		var s []planeSet
		for _, l := range lv {
			n := 4 * int64(l.w) * int64(l.h)
			s = append(s, newSet(func() *cuda.Buffer { return alloc(n) }, true))
		}
		sets = append(sets, s)
	}
	luts := [3]*cuda.Buffer{nil, alloc(4 * 256), alloc(4 * 65536)}
	s := &slot{}
	fillSlot(s, lv, max(cuda.RawBytes(ref), cuda.RawBytes(dist)), alloc)
	idx := map[cuda.DevPtr]int{}
	for i, b := range bufs {
		idx[b.Ptr] = i
	}
	var script strings.Builder
	fmt.Fprintf(&script, "buffers %d\n", len(bufs))
	for _, b := range bufs {
		fmt.Fprintf(&script, "%d\n", b.Size)
	}
	nfile := 0
	upload := func(b *cuda.Buffer, data []byte) {
		nfile++
		f := filepath.Join(dir, fmt.Sprintf("in%d.bin", nfile))
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "upload %d %d %s\n", idx[b.Ptr], len(data), f)
	}
	replay := func(r *recorder) {
		for _, l := range r.l {
			fmt.Fprintf(&script, "launch %s %d %d %d %d %d %d %d", l.k.name, l.g.X, l.g.Y, l.g.Z, l.b.X, l.b.Y, l.b.Z, len(l.args))
			for _, a := range l.args {
				switch v := a.(type) {
				case *cuda.Buffer:
					if v == nil {
						script.WriteString(" n")
					} else {
						fmt.Fprintf(&script, " p%d", idx[v.Ptr])
					}
				case int:
					fmt.Fprintf(&script, " i%d", v)
				case float32:
					fmt.Fprintf(&script, " f%d", math.Float32bits(v))
				case float64:
					fmt.Fprintf(&script, " d%d", math.Float64bits(v))
				default:
					t.Fatalf("argument %T", a)
				}
			}
			script.WriteString("\n")
		}
	}
	upload(luts[1], lutTable(1))
	upload(luts[2], lutTable(2))
	upload(s.raw, ref.Pix[:cuda.RawBytes(ref)])
	k := newKernels()
	var r recorder
	rl := layoutOf(ref)
	if err := queuePrepare(&r, k, lv, float32(it), s, luts[rl.bps], rl, sets); err != nil {
		t.Fatal(err)
	}
	replay(&r)
	upload(s.raw, dist.Pix[:cuda.RawBytes(dist)])
	r.l = nil
	dl := layoutOf(dist)
	if err := queueScore(&r, k, lv, float32(it), s, luts[dl.bps], dl, sets, opt.PNorm); err != nil {
		t.Fatal(err)
	}
	replay(&r)
	totF, dmF := filepath.Join(dir, "tot.bin"), filepath.Join(dir, "dm.bin")
	fmt.Fprintf(&script, "dump %d 64 %s\n", idx[s.tot.Ptr], totF)
	fmt.Fprintf(&script, "dump %d %d %s\n", idx[s.ws[0].dm.Ptr], 4*w*h, dmF)
	sf := filepath.Join(dir, "script.txt")
	if err := os.WriteFile(sf, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), bin, sf)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("emulator: %v\n%s", err, out)
	}
	tot, err := os.ReadFile(totF)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(dmF)
	if err != nil {
		t.Fatal(err)
	}
	var sums [8]float64
	for i := range sums {
		sums[i] = math.Float64frombits(binary.LittleEndian.Uint64(tot[8*i:]))
	}
	dm := make([]float32, w*h)
	for i := range dm {
		dm[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	n := float64(w * h)
	res := [3]float64{sums[0], norm(sums[1:4], n, 3), 0}
	if opt.PNorm > 0 {
		res[2] = norm(sums[4:7], n, opt.PNorm)
	}
	return res, dm
}

// emuProgram is the C++ source: the shim, the generated constants, the
// kernels and a replay loop with one call wrapper per kernel.
func emuProgram(t *testing.T) string {
	var b strings.Builder
	b.WriteString(emuShim)
	b.WriteString(header())
	b.WriteString(kernelSource)
	b.WriteString("\nstatic void call(const std::string& name, Arg* a) {\n")
	re := regexp.MustCompile(`extern "C" __global__ void (\w+)\(([^)]*)\)`)
	for _, m := range re.FindAllStringSubmatch(kernelSource, -1) {
		var args []string
		for i, p := range strings.Split(m[2], ",") {
			f := strings.Fields(strings.TrimSpace(p))
			name := f[len(f)-1]
			typ := strings.Join(f[:len(f)-1], " ")
			for strings.HasPrefix(name, "*") {
				typ += "*"
				name = name[1:]
			}
			switch {
			case strings.Contains(typ, "*"):
				args = append(args, fmt.Sprintf("(%s)a[%d].p", typ, i))
			case typ == "int":
				args = append(args, fmt.Sprintf("a[%d].i", i))
			case typ == "float":
				args = append(args, fmt.Sprintf("a[%d].f", i))
			case typ == "double":
				args = append(args, fmt.Sprintf("a[%d].d", i))
			default:
				t.Fatalf("type %q", typ)
			}
		}
		fmt.Fprintf(&b, "  if (name == %q) { %s(%s); return; }\n", m[1], m[1], strings.Join(args, ", "))
	}
	b.WriteString("  fail(\"unknown kernel \" + name);\n}\n")
	b.WriteString(emuMain)
	return b.String()
}

const emuShim = `
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
using std::max;
using std::min;
struct dim3 { unsigned x, y, z; };
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static std::barrier<>* g_bar;
static thread_local long g_syncs;
#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__ static const
#define __shared__ static
static void __syncthreads() { g_syncs++; g_bar->arrive_and_wait(); }
static int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
static float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static void fail(const std::string& s) { std::cerr << s << std::endl; std::exit(1); }
struct Arg { void* p; int i; float f; double d; };
`

const emuMain = `
int main(int argc, char** argv) {
  std::ifstream in(argv[1]);
  std::string cmd;
  std::vector<std::vector<unsigned char>> bufs;
  while (in >> cmd) {
    if (cmd == "buffers") {
      size_t n; in >> n;
      for (size_t i = 0; i < n; i++) { size_t sz; in >> sz; bufs.emplace_back(sz, 0xff); }
    } else if (cmd == "upload" || cmd == "dump") {
      size_t b, n; std::string f; in >> b >> n >> f;
      if (n > bufs[b].size()) fail("transfer out of range");
      if (cmd == "upload") {
        std::ifstream fi(f, std::ios::binary);
        fi.read((char*)bufs[b].data(), n);
      } else {
        std::ofstream fo(f, std::ios::binary);
        fo.write((const char*)bufs[b].data(), n);
      }
    } else if (cmd == "launch") {
      std::string name; dim3 g, bl; int na;
      in >> name >> g.x >> g.y >> g.z >> bl.x >> bl.y >> bl.z >> na;
      std::vector<Arg> a(na);
      for (int i = 0; i < na; i++) {
        std::string s; in >> s;
        Arg v{}; 
        switch (s[0]) {
          case 'n': v.p = nullptr; break;
          case 'p': v.p = bufs[std::stoul(s.substr(1))].data(); break;
          case 'i': v.i = std::stoi(s.substr(1)); break;
          case 'f': { uint32_t u = std::stoul(s.substr(1)); std::memcpy(&v.f, &u, 4); break; }
          case 'd': { uint64_t u = std::stoull(s.substr(1)); std::memcpy(&v.d, &u, 8); break; }
        }
        a[i] = v;
      }
      gridDim = g; blockDim = bl;
      int nt = bl.x * bl.y * bl.z;
      for (unsigned bz = 0; bz < g.z; bz++) for (unsigned by = 0; by < g.y; by++) for (unsigned bx = 0; bx < g.x; bx++) {
        std::barrier<> bar(nt);
        g_bar = &bar;
        std::vector<long> syncs(nt);
        std::vector<std::thread> th;
        for (int t = 0; t < nt; t++) {
          th.emplace_back([&, t] {
            blockIdx = dim3{bx, by, bz};
            threadIdx = dim3{t % bl.x, (t / bl.x) % bl.y, t / (bl.x * bl.y)};
            g_syncs = 0;
            call(name, a.data());
            syncs[t] = g_syncs;
            bar.arrive_and_drop();
          });
        }
        for (auto& x : th) x.join();
        for (int t = 1; t < nt; t++) if (syncs[t] != syncs[0]) fail(name + ": threads of a block reach different numbers of __syncthreads");
      }
    } else {
      fail("bad command " + cmd);
    }
  }
  return 0;
}
`
