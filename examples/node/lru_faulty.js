// The LRU of lru.js with one fault: evict ignores `protected` (the fault of
// vLLM PR #35846, BUGS.md V1). policyspec must reject it with
// EVICT-UNPROTECTED:
//
//   policyspec check --exec 'node examples/node/lru_faulty.js'   # exit 1
"use strict";

const { serve } = require("./protocol");
const { LRUCachePolicy } = require("./lru");

class IgnoresProtected extends LRUCachePolicy {
  evict(n, _protectedKeys) {
    return super.evict(n, new Set()); // the fault: protected is dropped
  }
}

serve((capacity) => new IgnoresProtected(capacity), "lru_faulty.js");
