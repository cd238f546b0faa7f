"""The script that runs first in every fresh sandbox context, before a forged tool's source.

It keeps the helpers the child needs (the one-arrow check and the call that turns a result into
JSON), gives the tool its ``fetch`` (answered by the child, through the network guard), and then
removes every way to make code from text or to name the global object: ``eval``, ``Function``,
``WebAssembly`` and ``globalThis`` are deleted, and V8 runs with code generation from strings
disallowed, so ``(() => {}).constructor("...")`` fails too.
"""

PRELUDE = r"""
(function () {
  "use strict";
  const g = globalThis;
  const { parse, stringify } = JSON;
  const toSource = Function.prototype.toString;
  const apply = Reflect.apply;
  const hasOwn = Object.prototype.hasOwnProperty;
  const freeze = Object.freeze;
  const TypeErr = TypeError;
  const PromiseOf = Promise;
  const NOT_ARROW = /^(async\s+)?function\b/;

  const isOneArrow = (candidate, source) =>
    typeof candidate === "function" &&
    !apply(hasOwn, candidate, ["prototype"]) &&
    apply(toSource, candidate, []) === source &&
    !NOT_ARROW.test(source);

  // The tool's synchronous part runs inside the hub's call, where a time limit can stop it.
  const run = (tool, inputJson) =>
    PromiseOf.resolve(tool(parse(inputJson))).then((value) =>
      stringify(value === undefined ? null : value),
    );

  return function setup(pyFetch) {
    const fetch = async (resource, options) => {
      const sent = stringify(options === undefined ? {} : options);
      const answer = parse(await pyFetch(String(resource), sent === undefined ? "{}" : sent));
      if (answer.error !== undefined) throw new TypeErr(answer.error);
      const { body, headers } = answer;
      return freeze({
        ok: answer.status >= 200 && answer.status < 300,
        status: answer.status,
        url: answer.url,
        truncated: answer.truncated,
        headers: freeze({ get: (name) => headers[String(name).toLowerCase()] ?? null }),
        text: async () => body,
        json: async () => parse(body),
      });
    };
    Object.defineProperty(g, "fetch", { value: fetch, enumerable: true });
    for (const name of ["eval", "Function", "WebAssembly", "globalThis"]) delete g[name];
    return freeze({ isOneArrow, run });
  };
})();
"""
