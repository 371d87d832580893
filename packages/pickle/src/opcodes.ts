/**
 * The pickle opcodes, by name, for the reader and the writer alike (`Lib/pickletools.py` documents
 * each), and what the reader says of the opcodes that would run Python code, which it never runs.
 */

/** The opcodes of protocols 0–5 that carry plain data, by byte value. */
export const Op = {
  MARK: 0x28, // (
  EMPTY_TUPLE: 0x29, // )
  STOP: 0x2e, // .
  POP: 0x30, // 0
  POP_MARK: 0x31, // 1
  DUP: 0x32, // 2
  BINBYTES: 0x42, // B
  SHORT_BINBYTES: 0x43, // C
  FLOAT: 0x46, // F
  BINFLOAT: 0x47, // G
  INT: 0x49, // I
  BININT: 0x4a, // J
  BININT1: 0x4b, // K
  LONG: 0x4c, // L
  BININT2: 0x4d, // M
  NONE: 0x4e, // N
  STRING: 0x53, // S
  BINSTRING: 0x54, // T
  SHORT_BINSTRING: 0x55, // U
  UNICODE: 0x56, // V
  BINUNICODE: 0x58, // X
  EMPTY_LIST: 0x5d, // ]
  APPEND: 0x61, // a
  DICT: 0x64, // d
  APPENDS: 0x65, // e
  GET: 0x67, // g
  BINGET: 0x68, // h
  LONG_BINGET: 0x6a, // j
  LIST: 0x6c, // l
  PUT: 0x70, // p
  BINPUT: 0x71, // q
  LONG_BINPUT: 0x72, // r
  SETITEM: 0x73, // s
  TUPLE: 0x74, // t
  SETITEMS: 0x75, // u
  EMPTY_DICT: 0x7d, // }
  PROTO: 0x80,
  TUPLE1: 0x85,
  TUPLE2: 0x86,
  TUPLE3: 0x87,
  NEWTRUE: 0x88,
  NEWFALSE: 0x89,
  LONG1: 0x8a,
  LONG4: 0x8b,
  SHORT_BINUNICODE: 0x8c,
  BINUNICODE8: 0x8d,
  BINBYTES8: 0x8e,
  EMPTY_SET: 0x8f,
  ADDITEMS: 0x90,
  FROZENSET: 0x91,
  MEMOIZE: 0x94,
  FRAME: 0x95,
  BYTEARRAY8: 0x96,
} as const;

/** Opcodes that would import or call Python code, by byte value: named in the refusal. */
const CODE_OPCODES: Readonly<Record<number, string>> = {
  80: 'PERSID',
  81: 'BINPERSID',
  82: 'REDUCE',
  98: 'BUILD',
  99: 'GLOBAL',
  105: 'INST',
  111: 'OBJ',
  129: 'NEWOBJ',
  130: 'EXT1',
  131: 'EXT2',
  132: 'EXT4',
  146: 'NEWOBJ_EX',
  147: 'STACK_GLOBAL',
  151: 'NEXT_BUFFER',
  152: 'READONLY_BUFFER',
};

/**
 * What the reader says of opcode `op`, which is no plain data: what it expected, and what it found
 * (naming an opcode that would run Python code).
 */
export function refusal(op: number): [expected: string, found: string] {
  const code = CODE_OPCODES[op];
  return code !== undefined
    ? [
        'plain data (dict, list, tuple, str, int, float, bool, None)',
        `opcode ${code}, which would import or call Python code`,
      ]
    : ['a pickle opcode', `byte 0x${op.toString(16).padStart(2, '0')}`];
}
