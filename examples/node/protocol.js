// The policyspec line protocol (spec/protocol.md), policy side: read one
// JSON request per line on stdin, answer one JSON line on stdout.
//
// serve(makePolicy, name) runs the loop for any class with the seed API
// (get, insert, remove, touch, evict, clear, markEvictable,
// markNonEvictable). Blocks are plain objects {id, ref_cnt}; this module
// keeps exactly one object per block id, so the policy hands back the very
// object it was given, and applies the manager's ref_cnt writes to it.
// It also keeps the last 16 key containers it handed the policy, each with
// a copy, and says in every answer ("args") whether the policy changed one
// (API-ARGS-UNCHANGED), as spec/protocol.md describes.
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

function same(container, copy) {
  if (container instanceof Set) {
    return container.size === copy.size && [...copy].every((k) => container.has(k));
  }
  return container.length === copy.length && copy.every((k, i) => container[i] === k);
}

function serve(makePolicy, name) {
  let policy = null;
  let handles = new Map();
  let given = []; // [op, container, copy], the last 16 handed to the policy

  function keep(op, container) {
    given.push([op, container, container instanceof Set ? new Set(container) : [...container]]);
    if (given.length > 16) given.shift();
    return container;
  }

  function changed() {
    // "" when every kept container equals its copy, else what changed (once).
    for (const [op, container, copy] of given) {
      if (!same(container, copy)) {
        given = [];
        const what = op === "touch" ? "keys list" : "protected set";
        const size = (c) => (c instanceof Set ? c.size : c.length);
        return `the ${what} given to ${op} was changed by the policy (now ` +
          `${size(container)} items, was ${size(copy)})`;
      }
    }
    return "";
  }

  const ops = {
    hello: () => ({ protocol: PROTOCOL, name, capabilities: ["clear", "mark"] }),
    create: (m) => {
      policy = makePolicy(m.capacity);
      handles = new Map();
      given = [];
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
    touch: (m) => policy.touch(keep("touch", m.keys)),
    evict: (m) => {
      const result = policy.evict(m.n, keep("evict", new Set(m.protected)));
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
    let asked;
    try {
      const message = JSON.parse(line);
      asked = message.op;
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
    if (!["hello", "create", "set_ref"].includes(asked) && given.length > 0) {
      answer.args = changed();
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  });
  lines.on("close", () => process.exit(0));
}

module.exports = { serve };
