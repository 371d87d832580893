/**
 * Strings numbered as first seen, for data that names the same text many times (stack frames, what
 * made a block): each text once in `list`, referred to by its index.
 */

/** A table of texts: `index(text)` numbers a text, `list` holds them in that order. */
export interface TextTable {
  readonly list: string[];
  readonly index: (text: string) => number;
}

export function textTable(): TextTable {
  const list: string[] = [];
  const indices = new Map<string, number>();
  return {
    list,
    index: (text) => {
      let k = indices.get(text);
      if (k === undefined) {
        k = list.length;
        list.push(text);
        indices.set(text, k);
      }
      return k;
    },
  };
}
