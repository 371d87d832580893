/** Linux constants the native layer passes to the kernel (`<sys/mman.h>`, `<numaif.h>`). */

export const PROT_READ = 0x1;
export const PROT_WRITE = 0x2;
export const MAP_PRIVATE = 0x02;
export const MAP_ANONYMOUS = 0x20;
/** Back the mapping with pages from the hugetlbfs pool (reserved with `vm.nr_hugepages`). */
export const MAP_HUGETLB = 0x40000;
/** Ask for transparent huge pages on this range. */
export const MADV_HUGEPAGE = 14;

export const MPOL_DEFAULT = 0;
export const MPOL_PREFERRED = 1;
export const MPOL_BIND = 2;
export const MPOL_INTERLEAVE = 3;
export const MPOL_LOCAL = 4;
export const MPOL_PREFERRED_MANY = 5;
/** get_mempolicy: return the policy of the range at `addr`, not of the thread. */
export const MPOL_F_ADDR = 1 << 1;

export const RLIMIT_MEMLOCK = 8;
export const SC_PAGESIZE = 30;

/** Bits in the node masks passed to the kernel (libnuma's default is the same order). */
export const NODE_MASK_BITS = 1024;
/** Pages per `move_pages` call when querying placement. */
export const MOVE_PAGES_BATCH = 4096;
