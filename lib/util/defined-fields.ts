/**
 * @file `definedFields`: an object without its undefined-valued fields, for handing optional config
 * values to options types declared with `exactOptionalPropertyTypes`.
 */

/** `spec` without the fields whose value is undefined (a shallow copy). */
export function definedFields<T extends object>(spec: T): Partial<{ [K in keyof T]: Exclude<T[K], undefined> }> {
  return Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== undefined)) as Partial<{ [K in keyof T]: Exclude<T[K], undefined> }>;
}
