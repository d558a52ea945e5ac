/** Small checks and shapes of option values: empty strings, positive numbers, undefined fields. */

/** `value` unless it is undefined or empty. */
export function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/** `object` without its undefined fields, for APIs typed without `| undefined` (exactOptionalPropertyTypes). */
export function definedFields<T extends object>(object: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

/** `value` if it is a positive finite number; otherwise a TypeError naming the option. */
export function positive(value: number, name: string): number {
  if (!(value > 0) || !Number.isFinite(value)) throw new TypeError(`recalld: ${name} must be a positive number`);
  return value;
}
