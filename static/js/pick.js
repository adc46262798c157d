// pick(obj, ...keys): the first key of obj whose value is not null or
// undefined (API objects name some fields differently across endpoints).
export function pick(obj, ...keys) {
  if (!obj) return undefined;
  for (const k of keys) {
    if (obj[k] !== null && obj[k] !== undefined) return obj[k];
  }
  return undefined;
}
