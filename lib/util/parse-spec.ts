/**
 * @file Parsing a spec with its zod schema, for the parts that take one from a config or a library
 * call (a loss's options, a model spec): defaults filled in, and a bad value a {@link DmlError}
 * (`E_ARG`) that names the field (`loss.temperature`, `model.hidden[1]`), what was expected and what
 * was received.
 */
import type { z } from 'zod';
import { invalidParameterError } from '../errors.js';

/**
 * Parses `input` with `schema`, filling defaults; `prefix` names the spec in errors (`loss`, `model`).
 * Unknown fields are an error (the schemas are strict), so a typo in a config file never passes
 * silently.
 */
export function parseSpec<S extends z.ZodType>(schema: S, input: unknown, prefix: string): z.output<S> {
  const result = schema.safeParse(input ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.path.map((key) => (typeof key === 'number' ? key : String(key)));
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    throw invalidParameterError(
      fieldName(prefix, [...path, key]),
      `no unknown option (known: ${knownKeys(schemaAt(schema, path, input), valueAt(input, path)).join(', ')})`,
      valueAt(input, [...path, key]),
    );
  }
  throw invalidParameterError(fieldName(prefix, path), expectation(issue, fieldSchema(schema, path)), valueAt(input, path));
}

/** `model.hidden[1]`: object keys after dots, array indices in brackets. */
function fieldName(prefix: string, path: ReadonlyArray<string | number>): string {
  return path.reduce<string>((name, key) => (typeof key === 'number' ? `${name}[${key}]` : `${name}.${key}`), prefix);
}

function expectation(issue: z.core.$ZodIssue, field: z.ZodType | undefined): string {
  switch (issue.code) {
    case 'invalid_type': {
      const type = issue.expected === 'int' ? 'integer' : issue.expected;
      const orNull = field !== undefined && field.safeParse(null).success ? ' or null' : '';
      return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}${orNull}`;
    }
    case 'too_small':
      if (issue.origin === 'array') return `an array of at least ${String(issue.minimum)} item(s)`;
      if (issue.origin === 'string') return Number(issue.minimum) === 1 ? 'a non-empty string' : `a string of at least ${String(issue.minimum)} characters`;
      return `a number ${issue.inclusive ? '>=' : '>'} ${String(issue.minimum)}`;
    case 'too_big':
      if (issue.origin === 'array') return `an array of at most ${String(issue.maximum)} item(s)`;
      return `a number ${issue.inclusive ? '<=' : '<'} ${String(issue.maximum)}`;
    case 'invalid_value':
      return `one of ${issue.values.map((v) => String(v)).join(', ')}`;
    case 'invalid_union': {
      // A discriminated union's unknown discriminator: zod lists the known values in `options`.
      const options = 'options' in issue && Array.isArray(issue.options) ? issue.options.filter((o) => o !== undefined && o !== null) : [];
      return options.length > 0 ? `one of ${options.map((o) => String(o)).join(', ')}` : issue.message;
    }
    default:
      return issue.message;
  }
}

function valueAt(input: unknown, path: ReadonlyArray<string | number>): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/**
 * The fields of the object schema `input` is checked against: the schema's own, or, for a
 * discriminated union (a model spec), those of the branch its discriminator names.
 */
function shapeOf(schema: z.ZodType, input?: unknown): Record<string, z.ZodType> | undefined {
  const own = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape;
  if (own !== undefined) return own;
  const def = (schema as unknown as { _zod: { def: { options?: z.ZodType[]; discriminator?: string } } })._zod.def;
  if (def.options === undefined || def.discriminator === undefined || input === null || typeof input !== 'object') return undefined;
  const value = (input as Record<string, unknown>)[def.discriminator];
  for (const option of def.options) {
    const shape = shapeOf(option);
    if (shape?.[def.discriminator]?.safeParse(value).success) return shape;
  }
  return undefined;
}

/** `schema` without its default, nullable and optional wrappers. */
function unwrapped(schema: z.ZodType): z.ZodType {
  let inner = schema;
  for (;;) {
    const next = (inner as unknown as { _zod: { def: { innerType?: z.ZodType } } })._zod.def.innerType;
    if (next === undefined) return inner;
    inner = next;
  }
}

/** The schema of the object at `path` of `input` (nested options such as a loss's `miner`), through wrappers and unions. */
function schemaAt(schema: z.ZodType, path: ReadonlyArray<string | number>, input: unknown): z.ZodType {
  let current = schema;
  for (let depth = 0; depth < path.length; depth++) {
    const field = shapeOf(unwrapped(current), valueAt(input, path.slice(0, depth)))?.[String(path[depth])];
    if (field === undefined) return current;
    current = unwrapped(field);
  }
  return current;
}

function knownKeys(schema: z.ZodType, input: unknown): string[] {
  const shape = shapeOf(schema, input);
  return shape === undefined ? [] : Object.keys(shape);
}

/** The schema of a top-level option (the loss options are flat), if the path names one. */
function fieldSchema(schema: z.ZodType, path: ReadonlyArray<string | number>): z.ZodType | undefined {
  return path.length === 1 ? shapeOf(schema)?.[String(path[0])] : undefined;
}
