// The policyspec line protocol (spec/protocol.md), policy side: read one
// JSON request per line on stdin, answer one JSON line on stdout.
//
// serve(makePolicy, name) runs the loop for any class with the seed API
// (get, insert, remove, touch, evict, clear, markEvictable,
// markNonEvictable). Blocks are plain objects {id, ref_cnt}; this module
// keeps exactly one object per block id, so the policy hands back the very
// object it was given, and applies the manager's ref_cnt writes to it.
"use strict";

const readline = require("readline");

const PROTOCOL = 1;

function wire(block) {
  // A block as the runner reads it; anything else is sent as it is, so
  // the runner can report it.
  if (block === undefined || block === null) return null;
  if (typeof block === "object" && "id" in block) return { id: block.id, ref_cnt: block.ref_cnt };
  return block;
}

function serve(makePolicy, name) {
  let policy = null;
  let handles = new Map();

  const ops = {
    hello: () => ({ protocol: PROTOCOL, name, capabilities: ["clear", "mark"] }),
    create: (m) => {
      policy = makePolicy(m.capacity);
      handles = new Map();
      return undefined;
    },
    set_ref: (m) => {
      const block = handles.get(m.id);
      if (block === undefined) throw new Error(`set_ref: unknown block ${m.id}`);
      block.ref_cnt = m.ref_cnt;
      return undefined;
    },
    insert: (m) => {
      const block = { id: m.block.id, ref_cnt: m.block.ref_cnt };
      handles.set(block.id, block);
      policy.insert(m.key, block);
      return undefined;
    },
    get: (m) => wire(policy.get(m.key)),
    remove: (m) => policy.remove(m.key),
    touch: (m) => policy.touch(m.keys),
    evict: (m) => {
      const result = policy.evict(m.n, new Set(m.protected));
      if (result === null || result === undefined) return null;
      return result.map(([key, block]) => [key, wire(block)]);
    },
    clear: () => policy.clear(),
    mark_evictable: (m) => policy.markEvictable(m.key),
    mark_non_evictable: (m) => policy.markNonEvictable(m.key),
  };

  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  lines.on("line", (line) => {
    let answer;
    try {
      const message = JSON.parse(line);
      const op = ops[message.op];
      if (op === undefined) throw new Error(`unknown op ${JSON.stringify(message.op)}`);
      if (policy === null && !["hello", "create"].includes(message.op)) {
        throw new Error("no policy yet: send create first");
      }
      const result = op(message);
      answer = message.op === "hello" ? { ok: true, ...result } : { ok: true, result: result ?? null };
    } catch (err) {
      answer = { ok: false, error: `${err.name}: ${err.message}` };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  });
  lines.on("close", () => process.exit(0));
}

module.exports = { serve };
