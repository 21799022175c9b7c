/**
 * Renders a received value for an error message without throwing on exotic input: a string quoted and cut at
 * `maxLength` characters, a primitive as itself, anything else by its kind. The one copy every package uses.
 */
export function describe(value: unknown, maxLength = 40): string {
  if (typeof value === 'string') return JSON.stringify(value.length > maxLength ? `${value.slice(0, maxLength)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) {
    return String(value);
  }
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}
