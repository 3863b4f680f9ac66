// Set.prototype.union and its siblings, which Node 22 has and Node 20 lacks, for
// gitlab-ci-local (it calls union). Loaded by the runner tests with
// NODE_OPTIONS=--require=<this file>; it defines only what the runtime lacks.
"use strict";
const methods = {
  union(other) {
    const out = new Set(this);
    for (const v of other.keys()) out.add(v);
    return out;
  },
  intersection(other) {
    const out = new Set();
    for (const v of this) if (other.has(v)) out.add(v);
    return out;
  },
  difference(other) {
    const out = new Set();
    for (const v of this) if (!other.has(v)) out.add(v);
    return out;
  },
  symmetricDifference(other) {
    const out = new Set(this);
    for (const v of other.keys()) {
      if (this.has(v)) out.delete(v);
      else out.add(v);
    }
    return out;
  },
  isSubsetOf(other) {
    for (const v of this) if (!other.has(v)) return false;
    return true;
  },
  isSupersetOf(other) {
    for (const v of other.keys()) if (!this.has(v)) return false;
    return true;
  },
  isDisjointFrom(other) {
    for (const v of this) if (other.has(v)) return false;
    return true;
  },
};
for (const [name, fn] of Object.entries(methods)) {
  if (typeof Set.prototype[name] !== "function") {
    Object.defineProperty(Set.prototype, name, { value: fn, writable: true, configurable: true });
  }
}
