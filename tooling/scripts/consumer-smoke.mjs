// What the package check runs against each published package after installing it, alone, from
// its tarball: the same body once as ESM (`import * as pkg`) and once as CJS (`require`).
// `pkg` is the package, `assert` is node:assert/strict. Packages without an entry get a check
// that both builds load and export the same names. A subpath export has its own entry
// (`@allot/cuda/caching`); it runs after the package's optional peers are installed too.

/** Native add-ons that importing the package must not load (they load on first use). */
export const lazyNative = {
  '@allot/cuda': ['koffi'],
  '@allot/numa': ['koffi'],
};

/**
 * Packages whose main entry is for Node.js alone, and why. Every other package's main entry, ESM
 * and CJS, must bundle for a browser as installed from its tarball: esbuild, platform 'browser',
 * nothing external and no stub, so importing a Node.js module fails the check. Subpath entries
 * for Node.js (`@allot/stats/serve`, `@allot/workloads/node`) are not checked.
 */
export const nodeOnly = {
  '@allot/cuda': 'the CUDA runtime through FFI (koffi), found on the file system',
  '@allot/numa': 'libnuma through FFI (koffi), the topology read from /sys',
};
export const smokeTests = {
  '@allot/core': `
    const source = pkg.hostSource();
    const region = source.acquire(4096);
    source.view(region.address, 4).set([1, 2, 3, 4]);
    assert.equal(region.bytes[3], 4);
    assert.equal(pkg.alignUp(2 ** 40 + 1, 2 ** 32), 2 ** 40 + 2 ** 32);
    assert.throws(() => pkg.checkSize(0), (e) => pkg.InvalidArgumentError.isInstance(e));
  `,
  '@allot/testkit': `
    const plan = pkg.failurePlan(0);
    assert.equal(plan.failAt, 0);
    assert.equal(typeof pkg.checkConformance, 'function');
  `,
  '@allot/first-fit': `
    const a = pkg.firstFit({ capacity: 2 ** 40, base: 2 ** 44 });
    const x = a.allocate(1000, 256);
    assert.equal(x % 256, 0);
    a.free(x);
    assert.equal(a.usage().liveCount, 0);
  `,
  '@allot/best-fit': `
    for (const mode of ['best', 'good', 'worst']) {
      const a = pkg.bestFit({ capacity: 1 << 20, mode });
      const x = a.allocate(100);
      assert.notEqual(x, null);
      a.free(x);
      assert.equal(a.usage().freeBytes, 1 << 20);
    }
  `,
  '@allot/buddy': `
    const a = pkg.buddy({ capacity: 1 << 20 });
    const x = a.allocate(1000);
    assert.equal(a.usableSize(x), 1024);
    a.free(x);
  `,
  '@allot/slab': `
    const upstream = { alignment: 8, _n: 0, _live: new Map(),
      allocate(size) { const a = 4096 + this._n; this._n += size + 4096; this._live.set(a, size); return a; },
      free(a) { this._live.delete(a); }, usableSize(a) { return this._live.get(a); }, owns(a) { return this._live.has(a); },
      usage() { return { capacity: 0, allocatedBytes: 0, freeBytes: 0, overheadBytes: 0, largestFreeBlock: 0, liveCount: 0, freeBlockCount: 0 }; },
      reset() {} };
    const s = pkg.slab({ upstream, sizeClasses: [64, 256] });
    const x = s.allocate(60);
    assert.notEqual(x, null);
    s.free(x);
  `,
  '@allot/blocks': `
    const index = new pkg.OrderedIndex({ augmented: true });
    index.insert(0, 2 ** 41, 0, 64);
    index.insert(1, 2 ** 40, 0, 16);
    assert.equal(index.firstAtLeast(-Infinity, 32), 0);
    assert.equal(index.first(), 1);
  `,
  '@allot/stats': `
    const upstream = { alignment: 8, _next: 64, _live: new Map(),
      allocate(size) { const a = this._next; this._next += size; this._live.set(a, size); return a; },
      free(a) { this._live.delete(a); }, usableSize(a) { return this._live.get(a); }, owns(a) { return this._live.has(a); },
      usage() { return { capacity: 1 << 20, allocatedBytes: 0, freeBytes: 1 << 20, overheadBytes: 0, largestFreeBlock: 1 << 20, liveCount: 0, freeBlockCount: 1 }; },
      reset() {} };
    const stats = pkg.withStats(upstream);
    stats.free(stats.allocate(100));
    assert.equal(stats.totals().allocations.allocated, 1);
    assert.equal(pkg.memoryStats(stats)['allocation.all.freed'], 1);
    const bytes = pkg.pickle({ segments: [], n: 2 ** 40 });
    assert.equal(bytes[0], 0x80);
  `,
  '@allot/caching': `
    const { hostSource } = require('@allot/core');
    const pool = pkg.cachingPool({ source: hostSource(), config: 'expandable_segments:False' });
    const a = pool.allocate(9000);
    assert.equal(pool.usableSize(a), 9216);
    pool.free(a);
    assert.equal(pool.memoryStats()['segment.small_pool.current'], 1);
    pool.emptyCache();
    assert.throws(() => pkg.cachingPool({ source: hostSource(), config: 'max_split_size_mb:abc' }), /max_split_size_mb/);
  `,
  '@allot/numa': `
    // Installed with only @allot/core and koffi: the source works without the caching pool.
    assert.throws(() => require.resolve('@allot/caching'), { code: 'MODULE_NOT_FOUND' });
    const topo = pkg.topology();
    assert.ok(topo.memoryNodes().includes(0));
    assert.deepEqual(pkg.parseCpuList('0-2,5'), [0, 1, 2, 5]);
    const source = pkg.numaSource({ node: 0, libnuma: false });
    const region = source.acquire(10000);
    assert.equal(region.node, 0);
    source.view(region.address, 4).set([1, 2, 3, 4]);
    assert.equal(region.bytes[3], 4);
    const where = pkg.placement(region, { libnuma: false });
    assert.deepEqual(where.byNode, { 0: where.pages });
    source.release(region);
    assert.equal(source.reservedBytes(), 0);
    assert.throws(() => pkg.numaSource({ node: 4096 }), (e) => e.code === 'ALLOT_INVALID_ARGUMENT');
  `,
  '@allot/numa/caching': `
    const pool = pkg.cachingHostAllocator({ node: 0, libnuma: false, pin: false, config: '' });
    assert.equal(pool.source.kind, 'numa');
    const a = pool.allocate(1000);
    pool.source.view(a, 4).set([1, 2, 3, 4]);
    assert.equal(pool.usableSize(a), 1024);
    pool.free(a);
    pool.emptyCache();
    assert.equal(pool.source.reservedBytes(), 0);
  `,
  '@allot/cuda': `
    // Installed with only @allot/core and koffi: deviceSource() needs nothing else. Without a GPU
    // it fails, when called, with the error that says why.
    assert.throws(() => require.resolve('@allot/caching'), { code: 'MODULE_NOT_FOUND' });
    assert.equal(typeof pkg.deviceSource, 'function');
    assert.equal(typeof pkg.isAvailable(), 'boolean');
    const status = pkg.cudaStatus();
    if (!status.available) {
      assert.ok(pkg.CudaUnavailableError.isInstance(status.error));
      assert.deepEqual(pkg.devices(), []);
      assert.throws(() => pkg.deviceSource(), (e) => pkg.CudaUnavailableError.isInstance(e));
    }
    assert.throws(
      () => pkg.deviceSource({ runtimePath: '/nonexistent/libcudart.so.13' }),
      (e) => pkg.CudaUnavailableError.isInstance(e) && e.attempts[0].failure === 'not found',
    );
  `,
  '@allot/cuda/caching': `
    const { CudaUnavailableError } = require('@allot/cuda');
    assert.equal(typeof pkg.CachingDeviceAllocator, 'function');
    assert.throws(
      () => pkg.cachingDeviceAllocator({ runtimePath: '/nonexistent/libcudart.so.13', config: '' }),
      (e) => CudaUnavailableError.isInstance(e) && e.attempts[0].failure === 'not found',
    );
  `,
  '@allot/pickle': `
    const bytes = pkg.pickle({ a: [1, 2], t: pkg.pickleTuple(0, 0), big: 2n ** 70n });
    assert.equal(JSON.stringify(pkg.unpickle(bytes, { tuple: (items) => ({ tuple: items }) }),
      (_, v) => (typeof v === 'bigint' ? String(v) : v)),
      '{"a":[1,2],"t":{"tuple":[0,0]},"big":"1180591620717411303424"}');
    assert.throws(() => pkg.unpickle(new Uint8Array([0x80, 2, 0x63])), (e) => e.code === 'ALLOT_PICKLE');
  `,
  '@allot/workloads': `
    const trace = pkg.parseCsvTrace('op,id,size\\nalloc,a,100\\nalloc,b,200\\nfree,a,100\\n', { name: 't.csv' });
    assert.equal(trace.length, 3);
    assert.equal(pkg.summarizeTrace(trace).peakLiveBytes, 300);
    assert.throws(() => pkg.parseCsvTrace('op,id,size\\nfree,x,1\\n'), (e) => e.code === pkg.TRACE_FORMAT_ERROR_CODE);
  `,
  '@allot/workloads/node': `
    const { gzipSync } = require('node:zlib');
    const { mkdtempSync, writeFileSync } = require('node:fs');
    const { join } = require('node:path');
    const dir = mkdtempSync(join(require('node:os').tmpdir(), 'allot-smoke-'));
    const csv = 'op,id,size\\nalloc,a,100\\nalloc,b,200\\nfree,a,100\\n';
    writeFileSync(join(dir, 't.csv.gz'), gzipSync(csv));
    writeFileSync(join(dir, 'bad.csv.gz'), gzipSync('op,id,size\\nfree,x,1\\n'));
    assert.equal(pkg.detectTraceFormatOf(gzipSync(csv)), 'csv');
    assert.equal(pkg.TRACES_DIR_ENV, 'ALLOT_TRACES_DIR');
    pkg.readTraces(join(dir, 't.csv.gz')).then(([trace]) => assert.equal(trace.length, 3));
    assert.rejects(pkg.readTraces(join(dir, 'bad.csv.gz')), (e) => e.code === 'ALLOT_TRACE_FORMAT');
  `,
  '@allot/stats/serve': `
    assert.equal(typeof pkg.serveMetrics, 'function');
    // prom-client, an optional peer, is not installed: serving metrics says so when called.
    pkg.serveMetrics({}, { port: 0 }).then(
      () => { throw new Error('serveMetrics ran without prom-client'); },
      (e) => assert.match(e.message, /optional peer dependency 'prom-client'/),
    );
  `,
  '@allot/thread-cache': `
    const heap = pkg.sharedHeap({ capacity: 1 << 20 });
    const cache = pkg.threadCache(pkg.attachHeap(structuredClone(heap.share())));
    const x = cache.allocate(100);
    cache.view(x, 4).set([1, 2, 3, 4]);
    assert.equal(heap.view(x, 4)[3], 4);
    cache.free(x);
    cache[Symbol.dispose]();
    assert.equal(heap.usage().allocatedBytes, 0);
    assert.throws(() => heap.free(x), (e) => e.code === 'ALLOT_INVALID_FREE');
  `,
};
