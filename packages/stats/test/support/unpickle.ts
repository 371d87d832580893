/**
 * A minimal pickle reader for the tests (the opcodes our writer uses, plus FRAME, BINPUT and the
 * legacy container opcodes), so the pickle tests run where python3 is absent. Tuples become
 * `{ tuple: [...] }` so they can be told from lists.
 */
export function unpickle(bytes: Uint8Array): unknown {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoder = new TextDecoder();
  const stack: unknown[] = [];
  const marks: number[] = [];
  const memo: unknown[] = [];
  let at = 0;
  const popMark = () => {
    const mark = marks.pop();
    if (mark === undefined) throw new Error('no mark');
    return stack.splice(mark);
  };
  for (;;) {
    const op = bytes[at++];
    switch (op) {
      case 0x80:
        at++;
        break;
      case 0x95:
        at += 8;
        break;
      case 0x2e:
        return stack.pop();
      case 0x4e:
        stack.push(null);
        break;
      case 0x88:
        stack.push(true);
        break;
      case 0x89:
        stack.push(false);
        break;
      case 0x4b:
        stack.push(bytes[at++]);
        break;
      case 0x4d:
        stack.push(view.getUint16(at, true));
        at += 2;
        break;
      case 0x4a:
        stack.push(view.getInt32(at, true));
        at += 4;
        break;
      case 0x8a: {
        const n = bytes[at++]!;
        let v = 0n;
        for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(bytes[at + i]!);
        if (n > 0 && bytes[at + n - 1]! >= 0x80) v -= 1n << BigInt(8 * n);
        at += n;
        stack.push(
          v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)
            ? Number(v)
            : v,
        );
        break;
      }
      case 0x47:
        stack.push(view.getFloat64(at, false));
        at += 8;
        break;
      case 0x8c: {
        const n = bytes[at++]!;
        stack.push(decoder.decode(bytes.subarray(at, at + n)));
        at += n;
        break;
      }
      case 0x58: {
        const n = view.getUint32(at, true);
        at += 4;
        stack.push(decoder.decode(bytes.subarray(at, at + n)));
        at += n;
        break;
      }
      case 0x5d:
        stack.push([]);
        break;
      case 0x7d:
        stack.push({});
        break;
      case 0x28:
        marks.push(stack.length);
        break;
      case 0x65: {
        const items = popMark();
        (stack[stack.length - 1] as unknown[]).push(...items);
        break;
      }
      case 0x61: {
        const item = stack.pop();
        (stack[stack.length - 1] as unknown[]).push(item);
        break;
      }
      case 0x75: {
        const items = popMark();
        const dict = stack[stack.length - 1] as Record<string, unknown>;
        for (let i = 0; i < items.length; i += 2) dict[String(items[i])] = items[i + 1];
        break;
      }
      case 0x73: {
        const value = stack.pop();
        const key = stack.pop();
        (stack[stack.length - 1] as Record<string, unknown>)[String(key)] = value;
        break;
      }
      case 0x29:
        stack.push({ tuple: [] });
        break;
      case 0x85:
        stack.push({ tuple: stack.splice(-1) });
        break;
      case 0x86:
        stack.push({ tuple: stack.splice(-2) });
        break;
      case 0x87:
        stack.push({ tuple: stack.splice(-3) });
        break;
      case 0x74:
        stack.push({ tuple: popMark() });
        break;
      case 0x94:
        memo.push(stack[stack.length - 1]);
        break;
      case 0x71:
        memo[bytes[at++]!] = stack[stack.length - 1];
        break;
      case 0x72:
        memo[view.getUint32(at, true)] = stack[stack.length - 1];
        at += 4;
        break;
      case 0x68:
        stack.push(memo[bytes[at++]!]);
        break;
      case 0x6a:
        stack.push(memo[view.getUint32(at, true)]);
        at += 4;
        break;
      default:
        throw new Error(`unsupported opcode 0x${(op ?? 0).toString(16)} at ${at - 1}`);
    }
  }
}
