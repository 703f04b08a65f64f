package cudaemu

// shim is what CUDA C provides and the host C++ compiler lacks: the
// built-in variables (thread-local per emulated thread), the vector types
// the kernels use, the declaration specifiers, __syncthreads and the
// bit-cast intrinsics. __shared__ arrays become function statics, shared
// by the threads of the one block that runs at a time.
const shim = `
#include <barrier>
#include <cmath>
#include <math.h>
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
struct float2 { float x, y; };
struct float3 { float x, y, z; };
struct alignas(16) float4 { float x, y, z, w; };
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static std::barrier<>* g_bar;
static thread_local long g_syncs;
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__
#define __launch_bounds__(n)
#define __constant__ static const
#define __shared__ static
static void __syncthreads() { g_syncs++; g_bar->arrive_and_wait(); }
static int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
static float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static long long __double_as_longlong(double d) { long long i; std::memcpy(&i, &d, 8); return i; }
static double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
static void fail(const std::string& s) { std::cerr << s << std::endl; std::exit(1); }
struct Arg { void* p; int i; float f; double d; };
`

// replayMain reads the script: "buffers N" and N sizes, then "upload B N
// FILE", "dump B N FILE" and "launch NAME GX GY GZ BX BY BZ NARGS ARGS"
// (n: null, pI+OFF: OFF bytes into buffer I, iV, fBITS, dBITS).
const replayMain = `
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
          case 'p': {  // pB+OFF: OFF bytes into buffer B
            size_t plus = s.find('+');
            size_t b = std::stoul(s.substr(1, plus - 1)), off = std::stoull(s.substr(plus + 1));
            if (off > bufs[b].size()) fail("view out of range");
            v.p = bufs[b].data() + off;
            break;
          }
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
