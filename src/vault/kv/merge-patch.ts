/**
 * JSON Merge Patch (RFC 7386), as Vault applies to `kv patch`: objects merge recursively, null
 * removes a key, anything else replaces.
 *
 *   mergePatch({ a: 1, b: { c: 2 } }, { a: null, b: { d: 3 } })  // { b: { c: 2, d: 3 } }
 */
type Json = unknown;

const isObject = (v: Json): v is Record<string, Json> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return patch;
  // A Map, then Object.fromEntries: assigning a "__proto__" key would otherwise set the prototype.
  const out = new Map<string, Json>(isObject(target) ? Object.entries(target) : []);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) out.delete(key);
    else out.set(key, mergePatch(out.get(key), value));
  }
  return Object.fromEntries(out);
}
