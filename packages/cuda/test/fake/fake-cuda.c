/*
 * A fake CUDA runtime and driver library for tests on machines without a GPU.
 *
 * It exports the runtime (cuda*) and driver (cu*) symbols that @allot/cuda binds, with the same
 * signatures and status codes, backed by host memory:
 *
 *   device address space   a PROT_NONE reservation: device pointers point into it, so code that
 *                          reads device memory as host memory faults instead of passing
 *   device bytes           kept elsewhere (malloc), reached only through cudaMemcpy / cudaMemset
 *   streams and events     queues of work that runs when synchronized, or when queried after
 *                          FAKE_CUDA_QUERY_LATENCY "not ready" answers
 *
 * Configuration, read once when the library is loaded:
 *   FAKE_CUDA_MODE              ok (default) | nodriver (status 35 everywhere) | nodevice (status 100)
 *   FAKE_CUDA_CAPACITY          bytes of device memory per device (default 1 GiB)
 *   FAKE_CUDA_HOST_CAPACITY     bytes of pinned host memory (default 1 GiB)
 *   FAKE_CUDA_DEVICES           number of devices (default 1)
 *   FAKE_CUDA_QUERY_LATENCY     queries answered cudaErrorNotReady before queued work completes (0)
 *   FAKE_CUDA_RUNTIME_VERSION   13000 (default) or 12xxx: selects the prefetch/advice signatures
 *   FAKE_CUDA_HIGH_POINTERS     1: device pointers at or above 2^53 (never dereferenceable)
 *   FAKE_CUDA_NO_POOLS          1: the device does not support memory pools
 *   FAKE_CUDA_NO_VMM            1: the device does not support the virtual memory management API
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define EXPORT __attribute__((visibility("default")))

/* ── status codes (runtime and driver share the numbers we use) ─────────────────────────────── */
enum {
  OK = 0,
  INVALID_VALUE = 1,
  MEMORY_ALLOCATION = 2,
  INITIALIZATION = 3,
  INSUFFICIENT_DRIVER = 35,
  NO_DEVICE = 100,
  INVALID_DEVICE = 101,
  INVALID_HANDLE = 400,
  NOT_READY = 600,
  ILLEGAL_ADDRESS = 700,
  ALREADY_REGISTERED = 712,
  NOT_REGISTERED = 713,
  NOT_SUPPORTED = 801,
  UNKNOWN = 999,
};

struct status_text {
  int code;
  const char *name;
  const char *driver_name;
  const char *text;
};

static const struct status_text STATUS[] = {
    {OK, "cudaSuccess", "CUDA_SUCCESS", "no error"},
    {INVALID_VALUE, "cudaErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {MEMORY_ALLOCATION, "cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {INITIALIZATION, "cudaErrorInitializationError", "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {INSUFFICIENT_DRIVER, "cudaErrorInsufficientDriver", "CUDA_ERROR_INSUFFICIENT_DRIVER",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {NO_DEVICE, "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {INVALID_DEVICE, "cudaErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {INVALID_HANDLE, "cudaErrorInvalidResourceHandle", "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {NOT_READY, "cudaErrorNotReady", "CUDA_ERROR_NOT_READY", "device not ready"},
    {ILLEGAL_ADDRESS, "cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {ALREADY_REGISTERED, "cudaErrorHostMemoryAlreadyRegistered", "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {NOT_REGISTERED, "cudaErrorHostMemoryNotRegistered", "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {NOT_SUPPORTED, "cudaErrorNotSupported", "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {UNKNOWN, "cudaErrorUnknown", "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const struct status_text *status_of(int code) {
  for (size_t i = 0; i < sizeof STATUS / sizeof STATUS[0]; i++)
    if (STATUS[i].code == code) return &STATUS[i];
  return NULL;
}

/* ── configuration ──────────────────────────────────────────────────────────────────────────── */
#define MODE_OK 0
#define MODE_NO_DRIVER 1
#define MODE_NO_DEVICE 2

static struct {
  int mode;
  uint64_t capacity;
  uint64_t host_capacity;
  int devices;
  int latency;
  int runtime_version;
  int high_pointers;
  int pools;
  int vmm;
} cfg;

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *v = getenv(name);
  return v && *v ? strtoull(v, NULL, 0) : fallback;
}

#define GRANULARITY (2u << 20)
#define ALIGN 512u
#define ARENA_SIZE (1ull << 40)
#define HIGH_BASE (1ull << 53)

static uint64_t arena_base;
static uint64_t arena_size;

__attribute__((constructor)) static void fake_init(void) {
  const char *mode = getenv("FAKE_CUDA_MODE");
  cfg.mode = !mode || !*mode || !strcmp(mode, "ok") ? MODE_OK
             : !strcmp(mode, "nodriver")           ? MODE_NO_DRIVER
             : !strcmp(mode, "nodevice")           ? MODE_NO_DEVICE
                                                   : MODE_OK;
  cfg.capacity = env_u64("FAKE_CUDA_CAPACITY", 1ull << 30);
  cfg.host_capacity = env_u64("FAKE_CUDA_HOST_CAPACITY", 1ull << 30);
  cfg.devices = (int)env_u64("FAKE_CUDA_DEVICES", 1);
  cfg.latency = (int)env_u64("FAKE_CUDA_QUERY_LATENCY", 0);
  cfg.runtime_version = (int)env_u64("FAKE_CUDA_RUNTIME_VERSION", 13000);
  cfg.high_pointers = (int)env_u64("FAKE_CUDA_HIGH_POINTERS", 0);
  cfg.pools = !env_u64("FAKE_CUDA_NO_POOLS", 0);
  cfg.vmm = !env_u64("FAKE_CUDA_NO_VMM", 0);
  if (cfg.high_pointers) {
    arena_base = HIGH_BASE;
    arena_size = ARENA_SIZE;
    return;
  }
  /* Address space only: PROT_NONE, never backed. Reading a device pointer on the host faults. */
  for (uint64_t size = ARENA_SIZE; size >= (1ull << 32); size >>= 1) {
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      arena_base = ((uint64_t)(uintptr_t)p + GRANULARITY - 1) / GRANULARITY * GRANULARITY;
      arena_size = size - (arena_base - (uint64_t)(uintptr_t)p);
      return;
    }
  }
}

static int ready(void) {
  if (cfg.mode == MODE_NO_DRIVER) return INSUFFICIENT_DRIVER;
  if (cfg.mode == MODE_NO_DEVICE) return NO_DEVICE;
  return OK;
}

#define READY()            \
  do {                     \
    int s_ = ready();      \
    if (s_ != OK) return s_; \
  } while (0)

static int current_device;
static uint64_t used[64];  /* device bytes in use, per device */
static uint64_t host_used; /* pinned host bytes */

static int valid_device(int device) { return device >= 0 && device < cfg.devices && device < 64; }

/* ── device address ranges ──────────────────────────────────────────────────────────────────── */
enum { RANGE_DEVICE = 1, RANGE_MANAGED = 2, RANGE_RESERVED = 3 };

struct pool;

struct range {
  uint64_t addr, size; /* [addr, addr + size) in the arena (managed: a host address) */
  int kind;
  int device;
  unsigned char *backing; /* device bytes (RANGE_DEVICE, RANGE_MANAGED) */
  struct pool *pool;      /* stream-ordered allocations */
};

static struct range *ranges; /* sorted by addr */
static size_t range_count, range_cap;

static size_t range_lower_bound(uint64_t addr) {
  size_t lo = 0, hi = range_count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (ranges[mid].addr < addr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the range that contains addr, or -1. */
static long range_find(uint64_t addr) {
  size_t i = range_lower_bound(addr);
  if (i < range_count && ranges[i].addr == addr) return (long)i;
  if (i > 0 && addr < ranges[i - 1].addr + ranges[i - 1].size) return (long)i - 1;
  return -1;
}

static int range_insert(struct range r) {
  if (range_count == range_cap) {
    size_t cap = range_cap ? range_cap * 2 : 64;
    struct range *grown = realloc(ranges, cap * sizeof *ranges);
    if (!grown) return MEMORY_ALLOCATION;
    ranges = grown;
    range_cap = cap;
  }
  size_t i = range_lower_bound(r.addr);
  memmove(&ranges[i + 1], &ranges[i], (range_count - i) * sizeof *ranges);
  ranges[i] = r;
  range_count++;
  return OK;
}

static void range_remove(size_t i) {
  memmove(&ranges[i], &ranges[i + 1], (range_count - i - 1) * sizeof *ranges);
  range_count--;
}

/** First fit in the arena (addresses are reused after a free, lowest first, as cudaMalloc does). */
static int arena_place(uint64_t size, uint64_t align, uint64_t *out) {
  uint64_t at = arena_base;
  for (size_t i = 0; i < range_count; i++) {
    if (ranges[i].kind == RANGE_MANAGED) continue;
    at = (at + align - 1) / align * align;
    if (at + size <= ranges[i].addr) break;
    uint64_t end = ranges[i].addr + ranges[i].size;
    if (end > at) at = end;
  }
  at = (at + align - 1) / align * align;
  if (at + size > arena_base + arena_size) return MEMORY_ALLOCATION;
  *out = at;
  return OK;
}

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* ── VMM: physical handles and mappings ─────────────────────────────────────────────────────── */
struct handle {
  uint64_t size;
  int device;
  int refs; /* 1 for the handle itself, 1 per mapping */
  unsigned char *backing;
  struct handle *next;
};

struct mapping {
  uint64_t addr, size, offset;
  struct handle *handle;
  int accessible;
  struct mapping *next;
};

static struct handle *handles;
static struct mapping *mappings;

static int handle_live(struct handle *h) {
  for (struct handle *p = handles; p; p = p->next)
    if (p == h) return 1;
  return 0;
}

static void handle_unref(struct handle *h) {
  if (--h->refs > 0) return;
  for (struct handle **p = &handles; *p; p = &(*p)->next)
    if (*p == h) {
      *p = h->next;
      break;
    }
  used[h->device] -= h->size;
  free(h->backing);
  free(h);
}

/** Whether addr lies in the device address space this library hands out. */
static int in_arena(uint64_t addr) { return addr >= arena_base && addr < arena_base + arena_size; }

/**
 * Host bytes behind device address `addr`, and how many of the next `n` bytes are contiguous there
 * (`*len`). NULL when the address is not device memory this library handed out, or is not mapped
 * and accessible (VMM ranges). Managed memory counts as device memory.
 */
static unsigned char *resolve(uint64_t addr, uint64_t n, uint64_t *len) {
  long i = range_find(addr);
  if (i < 0) return NULL;
  struct range *r = &ranges[i];
  if (r->kind == RANGE_RESERVED) {
    for (struct mapping *m = mappings; m; m = m->next)
      if (addr >= m->addr && addr < m->addr + m->size) {
        if (!m->accessible) return NULL;
        uint64_t left = m->addr + m->size - addr;
        *len = n < left ? n : left;
        return m->handle->backing + m->offset + (addr - m->addr);
      }
    return NULL;
  }
  uint64_t left = r->addr + r->size - addr;
  *len = n < left ? n : left;
  return r->backing + (addr - r->addr);
}

/** Whether [addr, addr + n) is device memory (1), host memory (0), or broken device memory (-1). */
static int classify(uint64_t addr, uint64_t n) {
  if (range_find(addr) < 0 && !in_arena(addr)) return 0;
  while (n > 0) {
    uint64_t len;
    if (!resolve(addr, n, &len)) return -1;
    addr += len;
    n -= len;
  }
  return 1;
}

/** Copies n bytes; each side is device memory (resolved piece by piece) or a host pointer. */
static void transfer(uint64_t dst, int dst_dev, uint64_t src, int src_dev, uint64_t n) {
  while (n > 0) {
    uint64_t dl = n, sl = n;
    unsigned char *d = dst_dev ? resolve(dst, n, &dl) : (unsigned char *)(uintptr_t)dst;
    const unsigned char *s = src_dev ? resolve(src, n, &sl) : (const unsigned char *)(uintptr_t)src;
    if (!d || !s) return; /* unmapped after the call was accepted: the work is lost, as on a GPU fault */
    uint64_t chunk = dl < sl ? dl : sl;
    memmove(d, s, chunk);
    dst += chunk;
    src += chunk;
    n -= chunk;
  }
}

static void fill(uint64_t dst, int value, uint64_t n) {
  while (n > 0) {
    uint64_t len;
    unsigned char *d = resolve(dst, n, &len);
    if (!d) return;
    memset(d, value, len);
    dst += len;
    n -= len;
  }
}

/* ── streams, events and queued work ────────────────────────────────────────────────────────── */
enum { OP_COPY = 1, OP_SET = 2, OP_FREE = 3 };

struct op {
  int kind;
  uint64_t ticket;
  uint64_t dst, src;
  int dst_dev, src_dev;
  unsigned char *owned; /* a snapshot of pageable host bytes, freed after the copy */
  uint64_t n;
  int value;
  uint64_t free_addr;
  struct op *next;
};

struct stream {
  uint64_t enqueued, completed;
  int queries_left;
  struct op *head, *tail;
  struct stream *next;
};

struct event {
  struct stream *stream;
  uint64_t ticket;
  int recorded;
  int queries_left;
  struct event *next;
};

static struct stream legacy; /* stream 0 */
static struct stream *streams;
static struct event *events;

static struct stream *stream_of(uint64_t handle) {
  if (handle == 0 || handle == 1 || handle == 2) return &legacy; /* legacy, per-thread aliases */
  for (struct stream *s = streams; s; s = s->next)
    if ((uint64_t)(uintptr_t)s == handle) return s;
  return NULL;
}

static struct event *event_of(uint64_t handle) {
  for (struct event *e = events; e; e = e->next)
    if ((uint64_t)(uintptr_t)e == handle) return e;
  return NULL;
}

static void free_range_now(uint64_t addr);

static void run_op(struct op *op) {
  switch (op->kind) {
  case OP_COPY:
    transfer(op->dst, op->dst_dev, op->owned ? (uint64_t)(uintptr_t)op->owned : op->src, op->src_dev, op->n);
    break;
  case OP_SET:
    fill(op->dst, op->value, op->n);
    break;
  case OP_FREE:
    free_range_now(op->free_addr);
    break;
  }
  free(op->owned);
}

static void stream_run(struct stream *s, uint64_t upto) {
  while (s->head && s->head->ticket <= upto) {
    struct op *op = s->head;
    s->head = op->next;
    if (!s->head) s->tail = NULL;
    run_op(op);
    free(op);
  }
  if (upto > s->completed) s->completed = upto;
}

static void pools_trim_all(void);

static void sync_all(void) {
  stream_run(&legacy, legacy.enqueued);
  for (struct stream *s = streams; s; s = s->next) stream_run(s, s->enqueued);
  pools_trim_all();
}

static int enqueue(struct stream *s, struct op *op) {
  op->ticket = ++s->enqueued;
  op->next = NULL;
  if (s->tail) s->tail->next = op;
  else s->head = op;
  s->tail = op;
  s->queries_left = cfg.latency;
  return OK;
}

/* ── memory pools ───────────────────────────────────────────────────────────────────────────── */
struct pool {
  int device;
  uint64_t threshold; /* release threshold: cached bytes kept across synchronizations */
  uint64_t used;      /* bytes in live allocations */
  uint64_t cached;    /* bytes freed but kept by the pool */
  struct pool *next;
};

static struct pool *pools;
static struct pool default_pools[64];
static struct pool *current_pools[64];

static struct pool *pool_of(uint64_t handle) {
  for (int d = 0; d < cfg.devices && d < 64; d++)
    if ((uint64_t)(uintptr_t)&default_pools[d] == handle) return &default_pools[d];
  for (struct pool *p = pools; p; p = p->next)
    if ((uint64_t)(uintptr_t)p == handle) return p;
  return NULL;
}

static void pool_trim(struct pool *p, uint64_t keep) {
  if (p->cached > keep) {
    used[p->device] -= p->cached - keep;
    p->cached = keep;
  }
}

static void pools_trim_all(void) {
  for (int d = 0; d < cfg.devices && d < 64; d++) pool_trim(&default_pools[d], default_pools[d].threshold);
  for (struct pool *p = pools; p; p = p->next) pool_trim(p, p->threshold);
}

static void free_range_now(uint64_t addr) {
  long i = range_find(addr);
  if (i < 0) return;
  struct range *r = &ranges[i];
  if (r->pool) {
    r->pool->used -= r->size;
    r->pool->cached += r->size; /* the pool keeps it until trimmed */
  } else {
    used[r->device] -= r->size;
  }
  if (r->kind == RANGE_MANAGED) free((void *)(uintptr_t)r->addr);
  else free(r->backing);
  range_remove((size_t)i);
}

/** Places `size` bytes of device memory; `pool` set for stream-ordered allocations. */
static int device_alloc(uint64_t *out, uint64_t size, int device, struct pool *pool) {
  uint64_t rounded = round_up(size ? size : 1, ALIGN);
  uint64_t take_from_cache = 0;
  if (pool) take_from_cache = pool->cached < rounded ? pool->cached : rounded;
  if (used[device] - take_from_cache + rounded > cfg.capacity) {
    if (pool) { /* a pool under pressure gives its cache back first, as the driver does */
      pool_trim(pool, 0);
      take_from_cache = 0;
    }
    if (used[device] + rounded > cfg.capacity) return MEMORY_ALLOCATION;
  }
  uint64_t addr;
  if (arena_place(rounded, ALIGN, &addr) != OK) return MEMORY_ALLOCATION;
  unsigned char *backing = malloc(rounded);
  if (!backing) return MEMORY_ALLOCATION;
  struct range r = {addr, rounded, RANGE_DEVICE, device, backing, pool};
  if (range_insert(r) != OK) {
    free(backing);
    return MEMORY_ALLOCATION;
  }
  if (pool) {
    pool->cached -= take_from_cache;
    used[device] -= take_from_cache;
    pool->used += rounded;
  }
  used[device] += rounded;
  *out = addr;
  return OK;
}

/* ══ runtime API ═══════════════════════════════════════════════════════════════════════════════ */

EXPORT const char *cudaGetErrorName(int status) {
  const struct status_text *t = status_of(status);
  return t ? t->name : "cudaErrorUnknown";
}

EXPORT const char *cudaGetErrorString(int status) {
  const struct status_text *t = status_of(status);
  return t ? t->text : "unrecognized error code";
}

static int last_error;

EXPORT int cudaGetLastError(void) {
  int s = last_error;
  last_error = OK;
  return s;
}

EXPORT int cudaRuntimeGetVersion(int *version) {
  if (!version) return INVALID_VALUE;
  *version = cfg.runtime_version;
  return OK;
}

EXPORT int cudaDriverGetVersion(int *version) {
  if (!version) return INVALID_VALUE;
  *version = cfg.mode == MODE_NO_DRIVER ? 0 : 13000;
  return OK;
}

EXPORT int cudaGetDeviceCount(int *count) {
  if (!count) return INVALID_VALUE;
  *count = 0;
  READY();
  *count = cfg.devices;
  return OK;
}

EXPORT int cudaSetDevice(int device) {
  READY();
  if (!valid_device(device)) return INVALID_DEVICE;
  current_device = device;
  return OK;
}

EXPORT int cudaGetDevice(int *device) {
  READY();
  if (!device) return INVALID_VALUE;
  *device = current_device;
  return OK;
}

EXPORT int cudaDeviceSynchronize(void) {
  READY();
  sync_all();
  return OK;
}

EXPORT int cudaGetDeviceProperties(void *prop, int device) {
  READY();
  if (!prop) return INVALID_VALUE;
  if (!valid_device(device)) return INVALID_DEVICE;
  char *name = prop; /* `char name[256]` opens cudaDeviceProp in every CUDA version */
  memset(name, 0, 256);
  snprintf(name, 256, "Fake CUDA Device %d", device);
  return OK;
}

EXPORT int cudaDeviceGetAttribute(int *value, int attr, int device) {
  READY();
  if (!value) return INVALID_VALUE;
  if (!valid_device(device)) return INVALID_DEVICE;
  switch (attr) {
  case 75: *value = 9; return OK;  /* compute capability major */
  case 76: *value = 0; return OK;  /* minor */
  case 83: *value = 1; return OK;  /* managed memory */
  case 89: *value = 1; return OK;  /* concurrent managed access */
  case 99: *value = 1; return OK;  /* host register supported */
  case 115: *value = cfg.pools; return OK;
  default: *value = 0; return OK;
  }
}

EXPORT int cudaDeviceGetPCIBusId(char *bus_id, int len, int device) {
  READY();
  if (!bus_id || len <= 0) return INVALID_VALUE;
  if (!valid_device(device)) return INVALID_DEVICE;
  snprintf(bus_id, (size_t)len, "0000:%02X:00.0", 0x3B + device);
  return OK;
}

EXPORT int cudaMemGetInfo(uint64_t *free_bytes, uint64_t *total_bytes) {
  READY();
  if (!free_bytes || !total_bytes) return INVALID_VALUE;
  *free_bytes = cfg.capacity - used[current_device];
  *total_bytes = cfg.capacity;
  return OK;
}

EXPORT int cudaMalloc(uint64_t *ptr, uint64_t size) {
  READY();
  if (!ptr) return INVALID_VALUE;
  if (size == 0) {
    *ptr = 0;
    return OK;
  }
  int s = device_alloc(ptr, size, current_device, NULL);
  if (s != OK) last_error = s;
  return s;
}

EXPORT int cudaFree(uint64_t ptr) {
  READY();
  if (ptr == 0) return OK; /* cudaFree(0): initializes the context */
  sync_all(); /* cudaFree synchronizes the device */
  long i = range_find(ptr);
  if (i < 0 || ranges[i].addr != ptr || ranges[i].kind == RANGE_RESERVED) return INVALID_VALUE;
  free_range_now(ptr);
  return OK;
}

EXPORT int cudaMallocManaged(uint64_t *ptr, uint64_t size, unsigned flags) {
  READY();
  if (!ptr || size == 0 || (flags != 1 && flags != 2)) return INVALID_VALUE;
  uint64_t rounded = round_up(size, ALIGN);
  if (used[current_device] + rounded > cfg.capacity) return MEMORY_ALLOCATION;
  void *p = NULL;
  if (posix_memalign(&p, 4096, rounded)) return MEMORY_ALLOCATION;
  memset(p, 0, rounded);
  struct range r = {(uint64_t)(uintptr_t)p, rounded, RANGE_MANAGED, current_device, p, NULL};
  if (range_insert(r) != OK) {
    free(p);
    return MEMORY_ALLOCATION;
  }
  used[current_device] += rounded;
  *ptr = (uint64_t)(uintptr_t)p;
  return OK;
}

/* Managed memory advice and prefetch. CUDA 13 takes `struct cudaMemLocation { int type; int id; }`
 * by value (one integer register); CUDA 12 an int device. A mismatched caller is refused. */
static int managed_range(uint64_t ptr, uint64_t count) {
  long i = range_find(ptr);
  if (i < 0 || ranges[i].kind != RANGE_MANAGED || ptr + count > ranges[i].addr + ranges[i].size) return INVALID_VALUE;
  return OK;
}

static int check_location(uint64_t location) {
  int type = (int)(uint32_t)location;
  int id = (int)(uint32_t)(location >> 32);
  if (type == 1) return valid_device(id) ? OK : INVALID_DEVICE; /* device */
  if (type == 2 || type == 3 || type == 4) return OK;           /* host, host NUMA, current NUMA */
  return INVALID_VALUE;
}

static int check_device_or_cpu(uint64_t device) {
  int d = (int)(uint32_t)device;
  return d == -1 || valid_device(d) ? OK : INVALID_DEVICE;
}

EXPORT int cudaMemPrefetchAsync(uint64_t ptr, uint64_t count, uint64_t a, uint64_t b, uint64_t c) {
  READY();
  int s = managed_range(ptr, count);
  if (s != OK) return s;
  if (cfg.runtime_version >= 13000) {
    (void)c; /* (ptr, count, location, flags, stream) */
    s = check_location(a);
    if (s != OK) return s;
    return stream_of(c) ? OK : INVALID_HANDLE;
  }
  s = check_device_or_cpu(a); /* (ptr, count, device, stream) */
  if (s != OK) return s;
  return stream_of(b) ? OK : INVALID_HANDLE;
}

EXPORT int cudaMemAdvise(uint64_t ptr, uint64_t count, int advice, uint64_t where) {
  READY();
  int s = managed_range(ptr, count);
  if (s != OK) return s;
  if (advice < 1 || advice > 6) return INVALID_VALUE;
  return cfg.runtime_version >= 13000 ? check_location(where) : check_device_or_cpu(where);
}

/* ── pinned host memory ─────────────────────────────────────────────────────────────────────── */
struct host_block {
  uint64_t addr, size;
  int registered; /* 0: cudaHostAlloc, 1: cudaHostRegister */
  struct host_block *next;
};

static struct host_block *host_blocks;

EXPORT int cudaHostAlloc(uint64_t *ptr, uint64_t size, unsigned flags) {
  READY();
  if (!ptr || size == 0 || flags > 0xF) return INVALID_VALUE;
  if (host_used + size > cfg.host_capacity) return MEMORY_ALLOCATION;
  void *p = NULL;
  if (posix_memalign(&p, 4096, round_up(size, 4096))) return MEMORY_ALLOCATION;
  struct host_block *b = malloc(sizeof *b);
  *b = (struct host_block){(uint64_t)(uintptr_t)p, size, 0, host_blocks};
  host_blocks = b;
  host_used += size;
  *ptr = (uint64_t)(uintptr_t)p;
  return OK;
}

EXPORT int cudaFreeHost(uint64_t ptr) {
  READY();
  sync_all();
  for (struct host_block **p = &host_blocks; *p; p = &(*p)->next) {
    struct host_block *b = *p;
    if (b->addr == ptr && !b->registered) {
      *p = b->next;
      host_used -= b->size;
      free((void *)(uintptr_t)b->addr);
      free(b);
      return OK;
    }
  }
  return INVALID_VALUE;
}

EXPORT int cudaHostRegister(uint64_t ptr, uint64_t size, unsigned flags) {
  READY();
  if (!ptr || size == 0 || flags > 0xF) return INVALID_VALUE;
  for (struct host_block *b = host_blocks; b; b = b->next)
    if (ptr < b->addr + b->size && b->addr < ptr + size) return ALREADY_REGISTERED;
  struct host_block *b = malloc(sizeof *b);
  *b = (struct host_block){ptr, size, 1, host_blocks};
  host_blocks = b;
  return OK;
}

EXPORT int cudaHostUnregister(uint64_t ptr) {
  READY();
  for (struct host_block **p = &host_blocks; *p; p = &(*p)->next) {
    struct host_block *b = *p;
    if (b->addr == ptr && b->registered) {
      *p = b->next;
      free(b);
      return OK;
    }
  }
  return NOT_REGISTERED;
}

/* ── streams and events ─────────────────────────────────────────────────────────────────────── */
EXPORT int cudaStreamCreateWithFlags(uint64_t *out, unsigned flags) {
  READY();
  if (!out || flags > 1) return INVALID_VALUE;
  struct stream *s = calloc(1, sizeof *s);
  s->next = streams;
  streams = s;
  *out = (uint64_t)(uintptr_t)s;
  return OK;
}

EXPORT int cudaStreamDestroy(uint64_t handle) {
  READY();
  struct stream *s = stream_of(handle);
  if (!s || s == &legacy) return INVALID_HANDLE;
  stream_run(s, s->enqueued); /* work already queued still completes */
  for (struct stream **p = &streams; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  for (struct event *e = events; e; e = e->next)
    if (e->stream == s) e->stream = NULL; /* completed */
  free(s);
  return OK;
}

EXPORT int cudaStreamSynchronize(uint64_t handle) {
  READY();
  struct stream *s = stream_of(handle);
  if (!s) return INVALID_HANDLE;
  if (s == &legacy) sync_all(); /* the legacy default stream waits for the others */
  else stream_run(s, s->enqueued);
  pools_trim_all();
  return OK;
}

EXPORT int cudaStreamQuery(uint64_t handle) {
  READY();
  struct stream *s = stream_of(handle);
  if (!s) return INVALID_HANDLE;
  if (s->completed >= s->enqueued) return OK;
  if (s->queries_left > 0) {
    s->queries_left--;
    return NOT_READY;
  }
  stream_run(s, s->enqueued);
  return OK;
}

EXPORT int cudaEventCreateWithFlags(uint64_t *out, unsigned flags) {
  READY();
  if (!out || flags > 0xF) return INVALID_VALUE;
  struct event *e = calloc(1, sizeof *e);
  e->next = events;
  events = e;
  *out = (uint64_t)(uintptr_t)e;
  return OK;
}

EXPORT int cudaEventRecord(uint64_t event, uint64_t stream) {
  READY();
  struct event *e = event_of(event);
  struct stream *s = stream_of(stream);
  if (!e || !s) return INVALID_HANDLE;
  e->stream = s;
  e->ticket = s->enqueued;
  e->recorded = 1;
  e->queries_left = s->completed >= s->enqueued ? 0 : cfg.latency;
  return OK;
}

EXPORT int cudaEventQuery(uint64_t event) {
  READY();
  struct event *e = event_of(event);
  if (!e) return INVALID_HANDLE;
  if (!e->recorded || !e->stream || e->stream->completed >= e->ticket) return OK;
  if (e->queries_left > 0) {
    e->queries_left--;
    return NOT_READY;
  }
  stream_run(e->stream, e->ticket);
  return OK;
}

EXPORT int cudaEventSynchronize(uint64_t event) {
  READY();
  struct event *e = event_of(event);
  if (!e) return INVALID_HANDLE;
  if (e->recorded && e->stream) stream_run(e->stream, e->ticket);
  pools_trim_all();
  return OK;
}

EXPORT int cudaEventElapsedTime(float *ms, uint64_t start, uint64_t end) {
  READY();
  if (!ms) return INVALID_VALUE;
  if (!event_of(start) || !event_of(end)) return INVALID_HANDLE;
  *ms = 0.0f;
  return OK;
}

EXPORT int cudaEventDestroy(uint64_t event) {
  READY();
  for (struct event **p = &events; *p; p = &(*p)->next)
    if ((uint64_t)(uintptr_t)*p == event) {
      struct event *e = *p;
      *p = e->next;
      free(e);
      return OK;
    }
  return INVALID_HANDLE;
}

/* ── copies and memset ──────────────────────────────────────────────────────────────────────── */
enum { H2H = 0, H2D = 1, D2H = 2, D2D = 3, DEFAULT_KIND = 4 };

/** Checks both sides of a copy against its kind: which side is device memory. */
static int copy_sides(uint64_t dst, uint64_t src, uint64_t n, int kind, int *dst_dev, int *src_dev) {
  if (kind < 0 || kind > 4) return INVALID_VALUE;
  int d = classify(dst, n);
  int s = classify(src, n);
  if (d < 0 || s < 0) return INVALID_VALUE; /* freed, unmapped or out of range */
  int want_d = kind == H2D || kind == D2D ? 1 : kind == DEFAULT_KIND ? d : 0;
  int want_s = kind == D2H || kind == D2D ? 1 : kind == DEFAULT_KIND ? s : 0;
  if (want_d != d || want_s != s) return INVALID_VALUE;
  *dst_dev = d;
  *src_dev = s;
  return OK;
}

EXPORT int cudaMemcpy(uint64_t dst, uint64_t src, uint64_t n, int kind) {
  READY();
  if (n == 0) return OK;
  int d, s;
  int st = copy_sides(dst, src, n, kind, &d, &s);
  if (st != OK) return st;
  sync_all(); /* the legacy default stream: everything queued before completes first */
  transfer(dst, d, src, s, n);
  return OK;
}

EXPORT int cudaMemcpyAsync(uint64_t dst, uint64_t src, uint64_t n, int kind, uint64_t stream) {
  READY();
  struct stream *st = stream_of(stream);
  if (!st) return INVALID_HANDLE;
  if (n == 0) return OK;
  int d, s;
  int status = copy_sides(dst, src, n, kind, &d, &s);
  if (status != OK) return status;
  struct op *op = calloc(1, sizeof *op);
  *op = (struct op){.kind = OP_COPY, .dst = dst, .src = src, .dst_dev = d, .src_dev = s, .n = n};
  if (!s) { /* pageable host bytes are staged at the call, as the driver does */
    op->owned = malloc(n);
    memcpy(op->owned, (const void *)(uintptr_t)src, n);
  }
  return enqueue(st, op);
}

EXPORT int cudaMemset(uint64_t dst, int value, uint64_t n) {
  READY();
  if (n == 0) return OK;
  if (classify(dst, n) != 1) return INVALID_VALUE;
  sync_all();
  fill(dst, value, n);
  return OK;
}

EXPORT int cudaMemsetAsync(uint64_t dst, int value, uint64_t n, uint64_t stream) {
  READY();
  struct stream *st = stream_of(stream);
  if (!st) return INVALID_HANDLE;
  if (n == 0) return OK;
  if (classify(dst, n) != 1) return INVALID_VALUE;
  struct op *op = calloc(1, sizeof *op);
  *op = (struct op){.kind = OP_SET, .dst = dst, .value = value, .n = n};
  return enqueue(st, op);
}

/* ── stream-ordered allocation ──────────────────────────────────────────────────────────────── */
/* struct cudaMemPoolProps: allocType, handleTypes, location {type, id}, win32 attrs, maxSize, ... */
struct pool_props {
  int alloc_type;
  int handle_types;
  int location_type;
  int location_id;
};

EXPORT int cudaDeviceGetDefaultMemPool(uint64_t *out, int device) {
  READY();
  if (!out) return INVALID_VALUE;
  if (!valid_device(device)) return INVALID_DEVICE;
  if (!cfg.pools) return NOT_SUPPORTED;
  default_pools[device].device = device;
  *out = (uint64_t)(uintptr_t)&default_pools[device];
  return OK;
}

EXPORT int cudaMemPoolCreate(uint64_t *out, const struct pool_props *props) {
  READY();
  if (!out || !props) return INVALID_VALUE;
  if (!cfg.pools) return NOT_SUPPORTED;
  if (props->alloc_type != 1 || props->location_type != 1) return INVALID_VALUE;
  if (!valid_device(props->location_id)) return INVALID_DEVICE;
  struct pool *p = calloc(1, sizeof *p);
  p->device = props->location_id;
  p->next = pools;
  pools = p;
  *out = (uint64_t)(uintptr_t)p;
  return OK;
}

EXPORT int cudaMemPoolDestroy(uint64_t handle) {
  READY();
  struct pool *p = pool_of(handle);
  if (!p) return INVALID_HANDLE;
  if (p >= default_pools && p < default_pools + 64) return INVALID_VALUE;
  sync_all();
  for (size_t i = 0; i < range_count; i++)
    if (ranges[i].pool == p) ranges[i].pool = NULL; /* live allocations outlive the pool */
  pool_trim(p, 0);
  for (struct pool **q = &pools; *q; q = &(*q)->next)
    if (*q == p) {
      *q = p->next;
      break;
    }
  free(p);
  return OK;
}

enum { ATTR_RELEASE_THRESHOLD = 4, ATTR_RESERVED_CURRENT = 5, ATTR_USED_CURRENT = 7 };

EXPORT int cudaMemPoolSetAttribute(uint64_t handle, int attr, uint64_t *value) {
  READY();
  struct pool *p = pool_of(handle);
  if (!p) return INVALID_HANDLE;
  if (!value) return INVALID_VALUE;
  if (attr != ATTR_RELEASE_THRESHOLD) return INVALID_VALUE;
  p->threshold = *value;
  return OK;
}

EXPORT int cudaMemPoolGetAttribute(uint64_t handle, int attr, uint64_t *value) {
  READY();
  struct pool *p = pool_of(handle);
  if (!p) return INVALID_HANDLE;
  if (!value) return INVALID_VALUE;
  switch (attr) {
  case ATTR_RELEASE_THRESHOLD: *value = p->threshold; return OK;
  case ATTR_RESERVED_CURRENT: *value = p->used + p->cached; return OK;
  case ATTR_USED_CURRENT: *value = p->used; return OK;
  default: return INVALID_VALUE;
  }
}

EXPORT int cudaMemPoolTrimTo(uint64_t handle, uint64_t keep) {
  READY();
  struct pool *p = pool_of(handle);
  if (!p) return INVALID_HANDLE;
  pool_trim(p, keep);
  return OK;
}

EXPORT int cudaMallocFromPoolAsync(uint64_t *ptr, uint64_t size, uint64_t pool, uint64_t stream) {
  READY();
  struct pool *p = pool_of(pool);
  if (!p) return INVALID_HANDLE;
  if (!stream_of(stream)) return INVALID_HANDLE;
  if (!ptr || size == 0) return INVALID_VALUE;
  return device_alloc(ptr, size, p->device, p);
}

EXPORT int cudaMallocAsync(uint64_t *ptr, uint64_t size, uint64_t stream) {
  READY();
  if (!cfg.pools) return NOT_SUPPORTED;
  struct pool *p = current_pools[current_device];
  if (!p) {
    default_pools[current_device].device = current_device;
    p = &default_pools[current_device];
  }
  if (!stream_of(stream)) return INVALID_HANDLE;
  if (!ptr || size == 0) return INVALID_VALUE;
  return device_alloc(ptr, size, current_device, p);
}

EXPORT int cudaFreeAsync(uint64_t ptr, uint64_t stream) {
  READY();
  struct stream *s = stream_of(stream);
  if (!s) return INVALID_HANDLE;
  long i = range_find(ptr);
  if (i < 0 || ranges[i].addr != ptr || ranges[i].kind != RANGE_DEVICE) return INVALID_VALUE;
  struct op *op = calloc(1, sizeof *op);
  op->kind = OP_FREE;
  op->free_addr = ptr;
  return enqueue(s, op);
}

/* ══ driver API ════════════════════════════════════════════════════════════════════════════════ */

static int driver_ready(void) { return cfg.mode == MODE_OK ? OK : NO_DEVICE; }

#define DRIVER_READY()          \
  do {                          \
    int s_ = driver_ready();    \
    if (s_ != OK) return s_;    \
  } while (0)

EXPORT int cuInit(unsigned flags) {
  if (flags != 0) return INVALID_VALUE;
  return driver_ready();
}

EXPORT int cuDriverGetVersion(int *version) {
  if (!version) return INVALID_VALUE;
  *version = cfg.mode == MODE_NO_DRIVER ? 0 : 13000;
  return OK;
}

EXPORT int cuGetErrorName(int status, const char **out) {
  const struct status_text *t = status_of(status);
  if (!out || !t) return INVALID_VALUE;
  *out = t->driver_name;
  return OK;
}

EXPORT int cuGetErrorString(int status, const char **out) {
  const struct status_text *t = status_of(status);
  if (!out || !t) return INVALID_VALUE;
  *out = t->text;
  return OK;
}

EXPORT int cuDeviceGetAttribute(int *value, int attr, int device) {
  DRIVER_READY();
  if (!value) return INVALID_VALUE;
  if (!valid_device(device)) return INVALID_DEVICE;
  *value = attr == 102 ? cfg.vmm : 0;
  return OK;
}

/* CUmemAllocationProp: type, requestedHandleTypes, location {type, id}, win32HandleMetaData, allocFlags */
struct alloc_prop {
  int type;
  int handle_types;
  int location_type;
  int location_id;
};

static int check_prop(const struct alloc_prop *prop) {
  if (!prop || prop->type != 1 || prop->location_type != 1) return INVALID_VALUE;
  if (!valid_device(prop->location_id)) return INVALID_DEVICE;
  if (!cfg.vmm) return NOT_SUPPORTED;
  return OK;
}

EXPORT int cuMemGetAllocationGranularity(uint64_t *granularity, const struct alloc_prop *prop, int option) {
  DRIVER_READY();
  if (!granularity || (option != 0 && option != 1)) return INVALID_VALUE;
  int s = check_prop(prop);
  if (s != OK) return s;
  *granularity = GRANULARITY;
  return OK;
}

EXPORT int cuMemAddressReserve(uint64_t *ptr, uint64_t size, uint64_t alignment, uint64_t addr, uint64_t flags) {
  DRIVER_READY();
  (void)addr;
  if (!ptr || size == 0 || size % GRANULARITY || flags) return INVALID_VALUE;
  uint64_t align = alignment ? alignment : GRANULARITY;
  uint64_t at;
  if (arena_place(size, align, &at) != OK) return MEMORY_ALLOCATION;
  struct range r = {at, size, RANGE_RESERVED, 0, NULL, NULL};
  if (range_insert(r) != OK) return MEMORY_ALLOCATION;
  *ptr = at;
  return OK;
}

EXPORT int cuMemAddressFree(uint64_t ptr, uint64_t size) {
  DRIVER_READY();
  long i = range_find(ptr);
  if (i < 0 || ranges[i].kind != RANGE_RESERVED || ranges[i].addr != ptr || ranges[i].size != size)
    return INVALID_VALUE;
  for (struct mapping *m = mappings; m; m = m->next)
    if (m->addr >= ptr && m->addr < ptr + size) return INVALID_VALUE; /* unmap first */
  range_remove((size_t)i);
  return OK;
}

EXPORT int cuMemCreate(uint64_t *out, uint64_t size, const struct alloc_prop *prop, uint64_t flags) {
  DRIVER_READY();
  if (!out || size == 0 || size % GRANULARITY || flags) return INVALID_VALUE;
  int s = check_prop(prop);
  if (s != OK) return s;
  int device = prop->location_id;
  if (used[device] + size > cfg.capacity) return MEMORY_ALLOCATION;
  struct handle *h = calloc(1, sizeof *h);
  h->backing = malloc(size);
  if (!h->backing) {
    free(h);
    return MEMORY_ALLOCATION;
  }
  h->size = size;
  h->device = device;
  h->refs = 1;
  h->next = handles;
  handles = h;
  used[device] += size;
  *out = (uint64_t)(uintptr_t)h;
  return OK;
}

EXPORT int cuMemRelease(uint64_t handle) {
  DRIVER_READY();
  struct handle *h = (struct handle *)(uintptr_t)handle;
  if (!handle_live(h)) return INVALID_VALUE;
  handle_unref(h);
  return OK;
}

EXPORT int cuMemMap(uint64_t ptr, uint64_t size, uint64_t offset, uint64_t handle, uint64_t flags) {
  DRIVER_READY();
  struct handle *h = (struct handle *)(uintptr_t)handle;
  if (!handle_live(h) || flags || size == 0 || offset + size > h->size) return INVALID_VALUE;
  long i = range_find(ptr);
  if (i < 0 || ranges[i].kind != RANGE_RESERVED || ptr + size > ranges[i].addr + ranges[i].size) return INVALID_VALUE;
  for (struct mapping *m = mappings; m; m = m->next)
    if (ptr < m->addr + m->size && m->addr < ptr + size) return INVALID_VALUE; /* already mapped */
  struct mapping *m = calloc(1, sizeof *m);
  *m = (struct mapping){ptr, size, offset, h, 0, mappings};
  mappings = m;
  h->refs++;
  return OK;
}

EXPORT int cuMemUnmap(uint64_t ptr, uint64_t size) {
  DRIVER_READY();
  int found = 0;
  for (struct mapping **p = &mappings; *p;) {
    struct mapping *m = *p;
    if (m->addr >= ptr && m->addr + m->size <= ptr + size) {
      *p = m->next;
      handle_unref(m->handle);
      free(m);
      found = 1;
    } else {
      p = &m->next;
    }
  }
  return found ? OK : INVALID_VALUE;
}

/* CUmemAccessDesc: location {type, id}, flags */
struct access_desc {
  int location_type;
  int location_id;
  int flags;
};

EXPORT int cuMemSetAccess(uint64_t ptr, uint64_t size, const struct access_desc *desc, uint64_t count) {
  DRIVER_READY();
  if (!desc || count == 0) return INVALID_VALUE;
  for (uint64_t k = 0; k < count; k++) {
    if (desc[k].location_type != 1 || !valid_device(desc[k].location_id) || desc[k].flags > 3) return INVALID_VALUE;
  }
  uint64_t covered = 0;
  for (struct mapping *m = mappings; m; m = m->next)
    if (m->addr >= ptr && m->addr + m->size <= ptr + size) covered += m->size;
  if (covered != size) return INVALID_VALUE; /* every byte of the range must be mapped */
  for (struct mapping *m = mappings; m; m = m->next)
    if (m->addr >= ptr && m->addr + m->size <= ptr + size) m->accessible = desc[0].flags == 3;
  return OK;
}

/* ── a no-op for measuring the cost of one call through the FFI ─────────────────────────────── */
EXPORT int cudaPeekAtLastError(void) { return last_error; }
