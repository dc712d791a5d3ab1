// A least-recently-used CachePolicy in Node.js with the seed LRU's exact
// behaviour (spec/lru.md), served over the policyspec line protocol.
//
//   policyspec check --exec 'node examples/node/lru.js' --profile lru
//
// Two maps: `blocks` holds every present key, `evictable` exactly the idle
// keys, least recent first (a Map iterates in insertion order).
"use strict";

const { serve } = require("./protocol");

class KeyError extends Error {
  constructor(key) {
    super(JSON.stringify(key));
    this.name = "KeyError";
  }
}

class LRUCachePolicy {
  constructor(cacheCapacity) {
    this.cacheCapacity = cacheCapacity;
    this.blocks = new Map();
    this.evictable = new Map();
  }

  get(key) {
    return this.blocks.get(key) ?? null;
  }

  insert(key, block) {
    this.blocks.set(key, block);
    if (block.ref_cnt === 0) this.evictable.set(key, true);
  }

  remove(key) {
    if (!this.blocks.delete(key)) throw new KeyError(key);
    this.evictable.delete(key);
  }

  touch(keys) {
    // Last key first, so the head of the list ends up the most recent.
    for (let i = keys.length - 1; i >= 0; i--) {
      if (this.evictable.delete(keys[i])) this.evictable.set(keys[i], true);
    }
  }

  evict(n, protectedKeys) {
    if (n === 0) return [];
    const victims = [];
    for (const key of this.evictable.keys()) {
      if (protectedKeys.has(key)) continue;
      victims.push(key);
      if (victims.length === n) break;
    }
    if (victims.length < n) return null;
    return victims.map((key) => {
      const block = this.blocks.get(key);
      this.blocks.delete(key);
      this.evictable.delete(key);
      return [key, block];
    });
  }

  clear() {
    this.blocks.clear();
    this.evictable.clear();
  }

  markEvictable(key) {
    // An already idle key keeps its place, like the seed's assignment.
    if (!this.evictable.has(key)) this.evictable.set(key, true);
  }

  markNonEvictable(key) {
    if (!this.evictable.delete(key)) throw new KeyError(key);
  }
}

module.exports = { LRUCachePolicy, KeyError };

if (require.main === module) {
  serve((capacity) => new LRUCachePolicy(capacity), "lru.js");
}
