/**
 * PageMap: page number → slab id. It is the shared {@link AddressMap} of `@allot/blocks` (an
 * open-addressing table in typed arrays, keyed by non-negative integers exact to 2^53; a page
 * number below 2^31 is hashed with one multiplication), under the names the slab uses.
 *
 * A slab is aligned to the page size and covers whole pages, so the slab that holds an address is
 * the one registered for `floor(address / pageSize)`.
 */
import { AddressMap } from '@allot/blocks';

export class PageMap extends AddressMap {
  /** Forgets `page` (a no-op when it is not registered). */
  delete(page: number): void {
    this.take(page);
  }
}
