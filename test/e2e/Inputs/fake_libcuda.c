// A stand-in for libcuda.so.1 with no GPU behind it, so that the CUDA
// executor's host side (module loading, kernel lookup, buffer growth,
// parameter marshalling, logits and tap read-back, profiling events) runs in
// CI. Device memory is host memory, filled at allocation with a pattern that
// depends on the byte offset; kernels are checked against the PTX (the
// symbol is an .entry, the launch has as many parameters as it declares,
// the geometry is legal) but do nothing; copies outside an allocation fail
// with an error naming them. Events tick a clock by 1 microsecond per record.
// FAKE_CUDA_REPORT=1 prints the number of launches at exit (a graph's
// kernels included); =2 also prints each launch's symbol and row count (the
// second-to-last parameter, as TbcToCUDA/KernelABI.h orders them) as it
// happens. Graphs of kernel nodes run their kernels the same way (below);
// so do programmatic launches (cuLaunchKernelEx, and graph edges of that
// kind), counted in the report, refused for a kernel whose PTX never runs
// griddepcontrol.wait or on a device before sm_90.
//
// With FAKE_CUDA_EXECUTE=1, and ptx_emulator.cpp linked in, kernels do run:
// the PTX is interpreted on the CPU (the module load fails on an instruction
// the emulator does not know, a launch on a kernel fault).
//
// Built by the tests: cc -shared -fPIC -o DIR/libcuda.so.1 fake_libcuda.c
// (with the emulator: cc -c -fPIC fake_libcuda.c, c++ -c -fPIC -O2
// ptx_emulator.cpp, c++ -shared both objects).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum { OK = 0, INVALID_VALUE = 1, INVALID_PTX = 218, NOT_FOUND = 500, LAUNCH_FAILED = 719,
       NOT_SUPPORTED = 801 };

// The emulator (ptx_emulator.cpp), when linked in.
void *ptx_emulator_load(const char *text, const char **error) __attribute__((weak));
void *ptx_emulator_function(void *module, const char *name) __attribute__((weak));
int ptx_emulator_launch(void *module, void *fn, const unsigned grid[3], const unsigned block[3],
                        unsigned dynamicShared, void **params, const char **error)
    __attribute__((weak));

static char *ptx;      // the loaded module's text
static int programmaticLaunches; // by cuLaunchKernelEx
static void *emulated; // its parsed form, when kernels are executed
static int launches;   // kernels launched, reported at exit with FAKE_CUDA_REPORT
static double clock_us;

struct Allocation { char *base; size_t bytes; };
static struct Allocation allocations[4096];
static int allocationCount;

static void report(void) {
  if (getenv("FAKE_CUDA_REPORT"))
    fprintf(stderr, "fake libcuda: %d launches, %d programmatic\n", launches,
            programmaticLaunches);
}

static struct Allocation *owner(uint64_t p, size_t n) {
  for (int i = 0; i < allocationCount; ++i) {
    uint64_t b = (uint64_t)(uintptr_t)allocations[i].base;
    if (p >= b && p + n <= b + allocations[i].bytes)
      return &allocations[i];
  }
  return NULL;
}

// For the emulator: the allocation holding [p, p + n), so that a kernel's
// access outside every allocation is a launch failure.
int ptx_emulator_allocation(uint64_t p, uint64_t n, uint64_t *base, uint64_t *size) {
  struct Allocation *a = owner(p, n);
  if (!a)
    return 0;
  *base = (uint64_t)(uintptr_t)a->base;
  *size = a->bytes;
  return 1;
}

static CUresult outOfBounds(const char *what, uint64_t p, size_t n) {
  fprintf(stderr, "fake libcuda: %s of %zu bytes at 0x%llx is outside every allocation\n", what, n,
          (unsigned long long)p);
  return INVALID_VALUE;
}

CUresult cuInit(unsigned flags) { (void)flags; atexit(report); return OK; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return OK; }
CUresult cuDeviceGetAttribute(int *v, int attribute, int d) {
  (void)d;
  // Compute capability 9.0, or FAKE_CUDA_CC's (e.g. 80, 100).
  const char *cc = getenv("FAKE_CUDA_CC");
  int n = cc ? atoi(cc) : 90;
  *v = attribute == 75 ? n / 10 : attribute == 76 ? n % 10 : 0;
  return OK;
}
CUresult cuDeviceGetName(char *name, int len, int d) {
  (void)d;
  snprintf(name, (size_t)len, "fake GPU (test double)");
  return OK;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int d) { (void)d; *ctx = (void *)1; return OK; }
CUresult cuCtxSetCurrent(void *ctx) { (void)ctx; return OK; }
CUresult cuCtxSynchronize(void) { return OK; }
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == INVALID_VALUE ? "invalid value (fake)" : r == NOT_FOUND ? "not found (fake)"
     : r == LAUNCH_FAILED ? "launch failed (fake)" : r == NOT_SUPPORTED ? "not supported (fake)"
     : "error (fake)";
  return OK;
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned n, int *options,
                            void **values) {
  (void)n; (void)options; (void)values;
  if (!strstr((const char *)image, ".version") || !strstr((const char *)image, ".entry"))
    return INVALID_PTX;
  free(ptx);
  ptx = strdup((const char *)image);
  *module = ptx;
  if (getenv("FAKE_CUDA_EXECUTE")) {
    const char *error = "this fake libcuda was built without ptx_emulator.cpp";
    if (!ptx_emulator_load || !(emulated = ptx_emulator_load(ptx, &error))) {
      fprintf(stderr, "fake libcuda: %s\n", error);
      return INVALID_PTX;
    }
  }
  return OK;
}
CUresult cuModuleUnload(void *module) { (void)module; return OK; }

// The .entry of `name` in the PTX: a pointer to its '(' or NULL.
static const char *entry(const char *name) {
  size_t len = strlen(name);
  for (const char *p = strstr(ptx, ".entry "); p; p = strstr(p + 1, ".entry ")) {
    const char *s = p + 7;
    while (*s == ' ')
      ++s;
    if (strncmp(s, name, len) == 0 && (s[len] == '(' || s[len] == '\n' || s[len] == ' '))
      return strchr(s, '(');
  }
  return NULL;
}

struct Function {
  char name[256];
  const char *params;
  void *emulated;
  int maxDynamicShared; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, as set
  int waits;            // its body has griddepcontrol.wait
};

// Whether the body of the entry whose parameters start at `params` runs
// griddepcontrol.wait (up to the next entry): only such a kernel may be
// launched before the one before it ends.
static int waitsForGrids(const char *params) {
  const char *next = strstr(params, ".entry "), *w = strstr(params, "griddepcontrol.wait");
  return w && (!next || w < next);
}

// Dynamic shared memory past 48 KB must be allowed per function first, up to
// what the device offers a block (an H100's 227 KB), as on a real driver.
enum { kDefaultDynamicShared = 48 << 10, kMaxDynamicShared = 227 << 10 };
CUresult cuFuncSetAttribute(void *fn, int attribute, int value) {
  struct Function *f = fn;
  if (attribute != 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */)
    return INVALID_VALUE;
  if (value < 0 || value > kMaxDynamicShared)
    return INVALID_VALUE;
  f->maxDynamicShared = value;
  return OK;
}

CUresult cuModuleGetFunction(void **fn, void *module, const char *name) {
  (void)module;
  const char *e = entry(name);
  if (!e)
    return NOT_FOUND;
  struct Function *f = calloc(1, sizeof(struct Function)); // lives as long as the process
  snprintf(f->name, sizeof(f->name), "%s", name);
  f->params = e;
  f->waits = waitsForGrids(e);
  if (emulated && !(f->emulated = ptx_emulator_function(emulated, name)))
    return NOT_FOUND;
  *fn = f;
  return OK;
}

// Parameters a launch or graph node may have here (tbc's kernels take
// well under 100: memref descriptors, then T and the cached positions).
enum { kMaxNodeParams = 256 };

// The parameter count `f`'s entry declares; with `values`, each one read
// from `params` at its size (a params array shorter than the PTX's list is
// read past its end, and a null or stale pointer in it crashes here).
static int readParams(const struct Function *f, void **params, uint64_t *values, int max) {
  const char *p = f->params, *end = strchr(p, ')');
  int count = 0;
  for (const char *q = strstr(p, ".param"); q && q < end; q = strstr(q + 1, ".param")) {
    uint64_t v = strncmp(q, ".param .u32", 11) == 0 || strncmp(q, ".param .b32", 11) == 0
                     ? *(const uint32_t *)params[count]
                     : *(const uint64_t *)params[count];
    if (values && count < max)
      values[count] = v;
    ++count;
  }
  return count;
}

static CUresult launch(const struct Function *f, const unsigned grid[3], const unsigned block[3],
                       unsigned shared, void **params) {
  if (shared > kDefaultDynamicShared && (int)shared > f->maxDynamicShared) {
    fprintf(stderr, "fake libcuda: %s launched with %u bytes of dynamic shared memory, %d allowed\n",
            f->name, shared, f->maxDynamicShared > kDefaultDynamicShared ? f->maxDynamicShared
                                                                        : kDefaultDynamicShared);
    return INVALID_VALUE;
  }
  if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2] ||
      (uint64_t)block[0] * block[1] * block[2] > 1024 || grid[1] > 65535) {
    fprintf(stderr, "fake libcuda: illegal launch geometry %ux%ux%u blocks of %ux%ux%u\n",
            grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    return LAUNCH_FAILED;
  }
  // FAKE_CUDA_GRID_Y_CAP=N runs at most N blocks down y, as a GPU runs
  // at most 65535: every kernel strides over the row blocks past gridDim.y
  // (KernelABI.h), which the cap makes every launch of a test exercise.
  unsigned cappedGrid[3] = {grid[0], grid[1], grid[2]};
  const char *capText = getenv("FAKE_CUDA_GRID_Y_CAP");
  int cap = capText ? atoi(capText) : 0;
  if (cap > 0 && cappedGrid[1] > (unsigned)cap)
    cappedGrid[1] = (unsigned)cap;
  grid = cappedGrid;
  uint64_t values[kMaxNodeParams];
  int count = readParams(f, params, values, kMaxNodeParams);
  if (count > kMaxNodeParams) {
    fprintf(stderr, "fake libcuda: %s takes %d parameters, more than %d\n", f->name, count,
            kMaxNodeParams);
    return LAUNCH_FAILED;
  }
  const char *r = getenv("FAKE_CUDA_REPORT");
  if (r && strcmp(r, "2") == 0)
    fprintf(stderr, "fake libcuda: launch %s rows=%llu grid.y=%u\n", f->name,
            (unsigned long long)(count >= 2 ? values[count - 2] : 0), grid[1]);
  ++launches;
  if (f->emulated) {
    const char *error = "";
    if (ptx_emulator_launch(emulated, f->emulated, grid, block, shared, params, &error) != 0) {
      fprintf(stderr, "fake libcuda: %s\n", error);
      return LAUNCH_FAILED;
    }
  }
  return OK;
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
  (void)stream; (void)extra;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return launch(fn, grid, block, shared, params);
}

// cuLaunchKernelEx (cuda.h's CUlaunchConfig, CUlaunchAttribute): tbc sets
// one attribute, programmatic stream serialization (6), and only on kernels
// that wait for their predecessors themselves (griddepcontrol.wait), on an
// sm_90 device; anything else is refused. The launch then runs as any
// other (one after another here).
struct LaunchAttribute { int id; char pad[4]; union { char bytes[64]; int value; } v; };
struct LaunchConfig {
  unsigned grid[3], block[3], shared;
  void *stream;
  struct LaunchAttribute *attrs;
  unsigned numAttrs;
};
// FAKE_CUDA_REFUSE_PDL=1: the driver refuses programmatic launches and
// edges (as one might where it does not support them), for the runtime's
// fallback to plain ones.
static CUresult programmatic(const struct Function *f) {
  if (getenv("FAKE_CUDA_REFUSE_PDL"))
    return NOT_SUPPORTED;
  int cc = 0;
  cuDeviceGetAttribute(&cc, 75, 0);
  if (cc < 9 || !f->waits) {
    fprintf(stderr, "fake libcuda: %s launched programmatically %s\n", f->name,
            cc < 9 ? "on a GPU before sm_90" : "but never runs griddepcontrol.wait");
    return INVALID_VALUE;
  }
  return OK;
}
CUresult cuLaunchKernelEx(const struct LaunchConfig *c, void *fn, void **params, void **extra) {
  (void)extra;
  if (c->numAttrs != 1 || c->attrs[0].id != 6 || c->attrs[0].v.value != 1) {
    fprintf(stderr, "fake libcuda: cuLaunchKernelEx with attributes tbc does not set\n");
    return INVALID_VALUE;
  }
  CUresult r = programmatic(fn);
  if (r != OK)
    return r;
  ++programmaticLaunches;
  return launch(fn, c->grid, c->block, c->shared, params);
}

// Graphs of kernel nodes (the runtime's CudaLaunchGraph.cpp): a node copies
// its parameters when added or updated, as the driver does; each node must
// depend on the one added before it (the runtime builds a chain); an
// instantiated graph is a copy whose nodes cuGraphExecKernelNodeSetParams
// changes; cuGraphLaunch runs its nodes in order, as cuLaunchKernel would.
// A node may instead be added without dependencies and then joined to the
// one before it by cuGraphAddDependencies_v2 with a programmatic edge (the
// next call; instantiating a graph with a node left unjoined fails).
// A node handle is its index + 1. FAKE_CUDA_REPORT adds a line of counts
// when graphs were used.
struct KernelNodeParams {
  void *func;
  unsigned grid[3], block[3], shared;
  void **params, **extra;
  void *kern, *ctx;
};
struct Node {
  struct Function *fn;
  unsigned grid[3], block[3];
  uint64_t values[kMaxNodeParams];
  int count;
};
struct Graph { struct Node *nodes; int count; int unjoined; /* node index + 1 */ };
static int graphsBuilt, graphLaunches, nodeUpdates, programmaticEdges;

static void graphReport(void) {
  if (getenv("FAKE_CUDA_REPORT") && graphsBuilt)
    fprintf(stderr,
            "fake libcuda: %d graphs built, %d graph launches, %d node updates, %d programmatic "
            "edges\n",
            graphsBuilt, graphLaunches, nodeUpdates, programmaticEdges);
}

static CUresult setNode(struct Node *n, const struct KernelNodeParams *p) {
  if (!p->func || p->extra || p->shared)
    return INVALID_VALUE;
  n->fn = p->func;
  memcpy(n->grid, p->grid, sizeof n->grid);
  memcpy(n->block, p->block, sizeof n->block);
  n->count = readParams(n->fn, p->params, n->values, kMaxNodeParams);
  return n->count <= kMaxNodeParams ? OK : INVALID_VALUE;
}

CUresult cuGraphCreate(struct Graph **g, unsigned flags) {
  (void)flags;
  *g = calloc(1, sizeof(struct Graph));
  return OK;
}
CUresult cuGraphAddKernelNode_v2(uintptr_t *node, struct Graph *g, const uintptr_t *deps,
                                 size_t ndeps, const struct KernelNodeParams *p) {
  // After the first, a node depends on the one before it, or on nothing
  // until the next call joins them.
  int follows = g->count == 0 ? ndeps == 0
                              : ndeps == 0 || (ndeps == 1 && deps[0] == (uintptr_t)g->count);
  if (g->unjoined || !follows) {
    fprintf(stderr, "fake libcuda: graph node %d does not follow the one before it\n", g->count);
    return INVALID_VALUE;
  }
  if (g->count && ndeps == 0)
    g->unjoined = g->count + 1;
  g->nodes = realloc(g->nodes, sizeof(struct Node) * (size_t)(g->count + 1));
  CUresult r = setNode(&g->nodes[g->count], p);
  if (r != OK)
    return r;
  *node = (uintptr_t)++g->count;
  return OK;
}
struct GraphEdgeData { unsigned char fromPort, toPort, type, reserved[5]; };
CUresult cuGraphAddDependencies_v2(struct Graph *g, const uintptr_t *from, const uintptr_t *to,
                                   const struct GraphEdgeData *edge, size_t n) {
  if (n != 1 || !g->unjoined || to[0] != (uintptr_t)g->unjoined ||
      from[0] != (uintptr_t)g->unjoined - 1 || edge->fromPort != 1 || edge->toPort ||
      edge->type != 1) {
    fprintf(stderr, "fake libcuda: an edge tbc does not add (the last node from the one "
                    "before it, programmatic)\n");
    return INVALID_VALUE;
  }
  CUresult r = programmatic(g->nodes[g->unjoined - 1].fn);
  if (r != OK)
    return r;
  g->unjoined = 0;
  ++programmaticEdges;
  return OK;
}
CUresult cuGraphInstantiateWithFlags(struct Graph **exec, struct Graph *g,
                                     unsigned long long flags) {
  (void)flags;
  if (g->unjoined)
    return INVALID_VALUE;
  struct Graph *e = calloc(1, sizeof(struct Graph));
  e->count = g->count;
  e->nodes = malloc(sizeof(struct Node) * (size_t)(g->count ? g->count : 1));
  memcpy(e->nodes, g->nodes, sizeof(struct Node) * (size_t)g->count);
  *exec = e;
  if (!graphsBuilt++)
    atexit(graphReport);
  return OK;
}
CUresult cuGraphExecKernelNodeSetParams_v2(struct Graph *exec, uintptr_t node,
                                           const struct KernelNodeParams *p) {
  if (node < 1 || node > (uintptr_t)exec->count)
    return INVALID_VALUE;
  struct Node *n = &exec->nodes[node - 1];
  if (p->func != n->fn) // CUDA allows another function of the context; tbc never asks
    return INVALID_VALUE;
  ++nodeUpdates;
  return setNode(n, p);
}
CUresult cuGraphLaunch(struct Graph *exec, void *stream) {
  (void)stream;
  ++graphLaunches;
  for (int i = 0; i < exec->count; ++i) {
    struct Node *n = &exec->nodes[i];
    void *params[kMaxNodeParams];
    for (int j = 0; j < n->count; ++j)
      params[j] = &n->values[j];
    CUresult r = launch(n->fn, n->grid, n->block, 0, params);
    if (r != OK)
      return r;
  }
  return OK;
}
static void freeGraph(struct Graph *g) {
  free(g->nodes);
  free(g);
}
CUresult cuGraphExecDestroy(struct Graph *exec) { freeGraph(exec); return OK; }
CUresult cuGraphDestroy(struct Graph *g) { freeGraph(g); return OK; }

CUresult cuMemAlloc_v2(uint64_t *p, size_t bytes) {
  if (allocationCount == 4096)
    return INVALID_VALUE;
  char *base = malloc(bytes);
  if (!base)
    return INVALID_VALUE;
  // A pattern by offset, so that a copy from the wrong place shows; with
  // FAKE_CUDA_FILL=nan, all NaN bits (as f32 and as bf16/f16 pairs), so
  // that a kernel reading memory nothing wrote, even to multiply it by a
  // zero weight, shows too.
  const char *fill = getenv("FAKE_CUDA_FILL");
  if (fill && strcmp(fill, "nan") == 0)
    memset(base, 0xff, bytes);
  else
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      float v = (float)((uint32_t)(i / 4 * 2654435761u) % 65521u);
      memcpy(base + i, &v, 4);
    }
  allocations[allocationCount++] = (struct Allocation){base, bytes};
  *p = (uint64_t)(uintptr_t)base;
  return OK;
}
CUresult cuMemFree_v2(uint64_t p) {
  for (int i = 0; i < allocationCount; ++i)
    if ((uint64_t)(uintptr_t)allocations[i].base == p) {
      free(allocations[i].base);
      allocations[i] = allocations[--allocationCount];
      return OK;
    }
  return outOfBounds("free", p, 0);
}
CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n) {
  if (!owner(dst, n))
    return outOfBounds("host-to-device copy", dst, n);
  memcpy((void *)(uintptr_t)dst, src, n);
  return OK;
}
CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n) {
  if (!owner(src, n))
    return outOfBounds("device-to-host copy", src, n);
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return OK;
}
CUresult cuMemcpyDtoD_v2(uint64_t dst, uint64_t src, size_t n) {
  if (!owner(dst, n) || !owner(src, n))
    return outOfBounds("device-to-device copy", owner(src, n) ? dst : src, n);
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return OK;
}

CUresult cuEventCreate(double **e, unsigned flags) {
  (void)flags;
  *e = calloc(1, sizeof(double));
  return *e ? OK : INVALID_VALUE;
}
CUresult cuEventRecord(double *e, void *stream) {
  (void)stream;
  *e = (clock_us += 1.0);
  return OK;
}
CUresult cuEventSynchronize(double *e) { (void)e; return OK; }
CUresult cuEventElapsedTime_v2(float *ms, double *a, double *b) {
  *ms = (float)((*b - *a) / 1000.0);
  return OK;
}
CUresult cuEventDestroy_v2(double *e) { free(e); return OK; }
