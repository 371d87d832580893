/**
 * A small JSON Schema checker for the subset `GpuMemDump.schema.json` uses: type, enum, pattern,
 * properties, required, additionalProperties, propertyNames, items, $ref to `#/$defs/...`.
 * Returns a list of problems (empty when valid).
 */
type Schema = Record<string, unknown>;

export function validate(value: unknown, root: Schema): string[] {
  const problems: string[] = [];
  const check = (v: unknown, schema: Schema, path: string): void => {
    if (typeof schema.$ref === 'string') {
      const name = schema.$ref.replace('#/$defs/', '');
      check(v, (root.$defs as Record<string, Schema>)[name]!, path);
      return;
    }
    const type = schema.type as string | undefined;
    if (type) {
      const ok =
        (type === 'object' && typeof v === 'object' && v !== null && !Array.isArray(v)) ||
        (type === 'array' && Array.isArray(v)) ||
        (type === 'string' && typeof v === 'string') ||
        (type === 'integer' && Number.isInteger(v)) ||
        (type === 'number' && typeof v === 'number') ||
        (type === 'boolean' && typeof v === 'boolean');
      if (!ok) {
        problems.push(`${path}: expected ${type}`);
        return;
      }
    }
    if (Array.isArray(schema.enum) && !schema.enum.includes(v))
      problems.push(`${path}: not in enum`);
    if (
      typeof schema.pattern === 'string' &&
      typeof v === 'string' &&
      !new RegExp(schema.pattern).test(v)
    ) {
      problems.push(`${path}: does not match ${schema.pattern}`);
    }
    if (Array.isArray(v) && schema.items) {
      for (const [i, item] of v.entries()) check(item, schema.items as Schema, `${path}[${i}]`);
    }
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const object = v as Record<string, unknown>;
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      for (const key of (schema.required ?? []) as string[]) {
        if (!(key in object)) problems.push(`${path}: missing required ${key}`);
      }
      for (const [key, child] of Object.entries(object)) {
        if (schema.propertyNames && typeof (schema.propertyNames as Schema).pattern === 'string') {
          if (!new RegExp((schema.propertyNames as Schema).pattern as string).test(key)) {
            problems.push(`${path}: property name ${key} does not match`);
          }
        }
        if (properties[key]) check(child, properties[key], `${path}.${key}`);
        else if (schema.additionalProperties === false) problems.push(`${path}: unexpected ${key}`);
        else if (typeof schema.additionalProperties === 'object') {
          check(child, schema.additionalProperties as Schema, `${path}.${key}`);
        }
      }
    }
  };
  check(value, root, '$');
  return problems;
}
