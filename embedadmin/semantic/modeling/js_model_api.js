// Cube's JavaScript model API, evaluated in the QuickJS sandbox before the model files (js_sandbox.py runs it).
//
// Each model file runs as the body of a function that receives its own cube, view, asyncModule, require,
// addExport, setExport and module, inside `with (scope)`: a free identifier that is neither a JavaScript
// global nor declared in the file (`users`, `count`, `CUBE`) reads as a reference that prints as Cube's YAML
// syntax (`${users.id}` is "{users.id}"), which is what Cube's transpiler makes of it. Member functions
// (`sql: (CUBE) => ...`) are called once the files have run, with references for their parameters, as Cube
// does by parameter name. What a file defines leaves the sandbox as JSON; the Python side builds the same
// definitions the YAML loader builds, and one compiler validates both.
//
// Line numbers come from QuickJS stack traces (`<input>:LINE:COL` of the one script holding this file and the
// model files); the Python side maps them to files, so this file never deals with line maps.
(function (global) {
  'use strict';

  const REFERENCE = Symbol('reference');
  const FEATURE = Symbol('feature');
  // The wrapper's parameters: a file's own bindings, never references.
  const FILE_BINDINGS = new Set([
    'cube', 'view', 'context', 'asyncModule', 'require', 'addExport', 'setExport', 'module', 'exports',
    '__module', '__scope',
  ]);
  // Node and browser globals a model might reach for: absent here (as in Cube's vm context), so they stay
  // ReferenceErrors that the Python side explains, rather than references.
  const UNAVAILABLE = new Set([
    'process', 'fetch', 'setTimeout', 'setInterval', 'setImmediate', 'clearTimeout', 'clearInterval',
    'XMLHttpRequest', 'WebSocket', 'Buffer', '__dirname', '__filename', 'global', 'window', 'document',
    'navigator', 'Deno', 'Bun', 'WebAssembly', 'std', 'os',
  ]);
  const CONTEXT_ALIASES = { securityContext: 'securityContext', security_context: 'securityContext' };

  const files = [];
  const definitions = [];
  const problems = [];
  const asyncModules = [];

  // A model error that names a feature; its message is shown as it is (no "Error:" prefix).
  function refusal(message) {
    const error = new Error(message);
    error[FEATURE] = true;
    return error;
  }

  function stackOf(error) {
    return error && typeof error === 'object' && typeof error.stack === 'string' ? error.stack : '';
  }

  function messageOf(error) {
    // QuickJS throws null when it cannot even allocate the error object.
    if (error === null || (error instanceof Error && error.name === 'InternalError' && /out of memory/.test(error.message))) {
      return `the model's JavaScript used more than ${memoryLimitMegabytes} MB and was stopped`;
    }
    if (error && typeof error === 'object' && error[FEATURE]) {
      return String(error.message);
    }
    if (error instanceof ReferenceError) {
      const name = /^([A-Za-z_$][\w$]*) is not defined/.exec(String(error.message));
      if (name && UNAVAILABLE.has(name[1])) {
        return (
          `${name[1]} is not available: model files run in a sandbox without Node's or a browser's globals ` +
          '(no process, fetch, timers, files or Node modules), as in Cube'
        );
      }
    }
    if (error instanceof Error) {
      return `${error.name}: ${error.message}`;
    }
    return `uncaught ${typeof error}: ${String(error)}`;
  }

  function report(error, file, member, stack) {
    problems.push({ file, member: member || '', message: messageOf(error), stack: stack || stackOf(error) });
  }

  // {users.id}: what a reference prints as inside a string (a template literal, concatenation).
  function referenceText(path) {
    return `{${path.join('.')}}`;
  }

  function reference(path) {
    const text = () => referenceText(path);
    return new Proxy(() => {}, {
      get(target, property) {
        if (property === REFERENCE) return path;
        if (property === Symbol.toPrimitive) return text;
        if (typeof property === 'symbol') return undefined;
        if (property === 'toString' || property === 'valueOf') return text;
        if (property === 'then' || property === 'toJSON') return undefined;
        return reference(path.concat(property));
      },
      apply(target, self, args) {
        // {orders.sql()} / {CUBE.sql()}: another cube's SQL, as in YAML.
        if (path.length >= 2 && path[path.length - 1] === 'sql' && args.length === 0) {
          return `{${path.slice(0, -1).join('.')}.sql()}`;
        }
        throw refusal(`${path.join('.')}(...): a reference to a cube or member cannot be called`);
      },
      set() {
        throw refusal(`${path.join('.')}: a reference to a cube or member cannot be assigned to`);
      },
    });
  }

  function isReference(value) {
    return typeof value === 'function' && value[REFERENCE] !== undefined;
  }

  // --- SECURITY_CONTEXT, FILTER_PARAMS, FILTER_GROUP, SQL_UTILS ----------------------------------------------
  // The model compiles once per compile key, not per query, so these cannot be values here: each call prints as
  // the YAML form of the same call (`{FILTER_PARAMS.orders.date.filter("date")}`), which the compiler reads for
  // YAML and JavaScript alike and the SQL builder turns into bound parameters per query. A string argument is
  // written as JSON (a Python string literal too); a function argument is called with markers for its parameters
  // and written as the lambda YAML takes (`lambda p0, p1: f"... {p0} ..."`).
  const MARKER = '\u0000p';

  function argumentText(argument, where) {
    if (typeof argument === 'function' && !isReference(argument)) {
      const count = Math.max(argument.length, 1);
      const markers = Array.from({ length: count }, (_, index) => `${MARKER}${index}\u0000`);
      const body = String(argument.apply(undefined, markers));
      const parts = body.split(/(\u0000p\d+\u0000)/);
      const text = parts
        .map((part) => {
          const marker = /^\u0000p(\d+)\u0000$/.exec(part);
          return marker ? `{p${marker[1]}}` : part.replace(/\{/g, '{{').replace(/\}/g, '}}');
        })
        .join('');
      const names = Array.from({ length: count }, (_, index) => `p${index}`).join(', ');
      return `lambda ${names}: f${JSON.stringify(text)}`;
    }
    if (argument === undefined || argument === null || typeof argument === 'object') {
      throw refusal(`${where}: needs the SQL of a column (a string) or a function returning SQL`);
    }
    return JSON.stringify(String(argument));
  }

  function securityContextSymbol(name, path) {
    const written = [name].concat(path).join('.');
    const needsMethod = () => {
      throw refusal(
        `${written}: name a claim and call .filter('column'), .requiredFilter('column') or .unsafeValue(); ` +
          'its value is bound as a parameter of each query, never written into the SQL',
      );
    };
    const call = (method) => {
      if (!path.length) needsMethod();
      if (method === 'unsafeValue') return () => `{${written}.unsafeValue()}`;
      return (column) => `{${written}.${method}(${argumentText(column, `${written}.${method}()`)})}`;
    };
    return new Proxy(function () {}, {
      get(target, property) {
        if (property === Symbol.toPrimitive) return needsMethod;
        if (typeof property === 'symbol') return undefined;
        if (property === 'then' || property === 'toJSON') return undefined;
        if (property === 'toString' || property === 'valueOf') return needsMethod;
        if (property === 'filter' || property === 'requiredFilter' || property === 'unsafeValue') {
          return call(property);
        }
        return securityContextSymbol(name, path.concat(property));
      },
      apply: needsMethod,
    });
  }

  function filterParamsSymbol(path) {
    const written = ['FILTER_PARAMS'].concat(path).join('.');
    const wrong = () => {
      throw refusal(`${written}: write FILTER_PARAMS.cube_name.member_name.filter(sql_expression)`);
    };
    return new Proxy(function () {}, {
      get(target, property) {
        if (property === Symbol.toPrimitive) return wrong;
        if (typeof property === 'symbol') return undefined;
        if (property === 'then' || property === 'toJSON' || property === '_objectWithResolvedProperties') {
          return undefined;
        }
        if (property === 'toString' || property === 'valueOf') return wrong;
        if (path.length === 2) {
          if (property !== 'filter') wrong();
          return (column) => `{${written}.filter(${argumentText(column, `${written}.filter()`)})}`;
        }
        return filterParamsSymbol(path.concat(property));
      },
      apply: wrong,
    });
  }

  function filterGroup(...items) {
    const inner = items.map((item) => {
      const match = typeof item === 'string' ? /^\{(FILTER_PARAMS\.[\s\S]*)\}$/.exec(item) : null;
      if (!match) throw refusal('FILTER_GROUP() takes FILTER_PARAMS.cube.member.filter(...) calls only');
      return match[1];
    });
    if (!inner.length) throw refusal('FILTER_GROUP() needs at least one FILTER_PARAMS.cube.member.filter(...)');
    return `{FILTER_GROUP(${inner.join(', ')})}`;
  }

  const sqlUtils = new Proxy(
    {
      convertTz: (sql) => `{SQL_UTILS.convertTz(${argumentText(sql, 'SQL_UTILS.convertTz()')})}`,
    },
    {
      get(target, property) {
        if (typeof property === 'symbol') return undefined;
        if (property === 'convertTz') return target.convertTz;
        if (property === 'then' || property === 'toJSON') return undefined;
        throw refusal(`SQL_UTILS.${String(property)}: SQL_UTILS has convertTz(sql) only, as in Cube`);
      },
    },
  );

  // COMPILE_CONTEXT: the compile context the server compiles with, read-only: its securityContext holds the
  // fields of the deployment's compile-context keys (one model per distinct key) and nothing else. A key it does
  // not have reads as undefined, as in Cube (`${COMPILE_CONTEXT.securityContext.tenant}` is "undefined"): a
  // model compiled without a tenant (the panel's view of it) still compiles.
  function readOnly(value) {
    if (value === null || typeof value !== 'object') return value;
    Object.keys(value).forEach((key) => readOnly(value[key]));
    return Object.freeze(value);
  }

  let memoryLimitMegabytes = 0;
  const contextSymbols = {
    SECURITY_CONTEXT: securityContextSymbol('SECURITY_CONTEXT', []),
    USER_CONTEXT: securityContextSymbol('USER_CONTEXT', []), // SECURITY_CONTEXT's old name, as in Cube
    FILTER_PARAMS: filterParamsSymbol([]),
    FILTER_GROUP: filterGroup,
    SQL_UTILS: sqlUtils,
  };

  function scope() {
    const variables = new Map(); // a sloppy `var x = ...` of the file lands here, through the `with`
    return new Proxy(Object.create(null), {
      has(target, name) {
        return (
          typeof name === 'string' &&
          !FILE_BINDINGS.has(name) &&
          !UNAVAILABLE.has(name) &&
          !(name in global)
        );
      },
      get(target, name) {
        if (typeof name === 'symbol') return undefined; // Symbol.unscopables: nothing is hidden
        if (variables.has(name)) return variables.get(name);
        return reference([name]);
      },
      set(target, name, value) {
        variables.set(name, value);
        return true;
      },
      deleteProperty(target, name) {
        return variables.delete(name);
      },
    });
  }

  function definer(kind, index) {
    return function (name, body) {
      if (body === undefined && name !== null && typeof name === 'object') {
        body = name;
        name = body.name;
      }
      if (typeof name !== 'string' || name === '') {
        throw refusal(`${kind}() needs a name as its first argument: ${kind}('orders', {...})`);
      }
      if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        throw refusal(`${kind}('${name}', ...) needs an object as its second argument`);
      }
      definitions.push({ kind, name, body, file: index, stack: new Error().stack });
    };
  }

  // Cube: './x' names x.js from the model folder's root; a path relative to the requiring file is accepted
  // too. Nothing outside the folder, no Node module, no Cube extension.
  function normalize(parts) {
    const out = [];
    for (const part of parts) {
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (!out.length) return null;
        out.pop();
      } else {
        out.push(part);
      }
    }
    return out.join('/');
  }

  function withSuffix(path) {
    return path.endsWith('.js') ? path : `${path}.js`;
  }

  function resolve(index, spec) {
    if (typeof spec !== 'string' || !(spec.startsWith('./') || spec.startsWith('../'))) {
      throw refusal(
        `require(${JSON.stringify(spec)}): only model files of this folder can be required, by a relative ` +
          "path such as './helpers'; Node modules and Cube extensions are not available in the sandbox",
      );
    }
    const here = files[index].path.split('/').slice(0, -1);
    const relative = normalize(here.concat(spec.split('/')));
    if (relative === null) {
      throw refusal(`require(${JSON.stringify(spec)}) leaves the model folder`);
    }
    const candidates = [];
    if (spec.startsWith('./')) candidates.push(withSuffix(normalize(spec.split('/'))));
    candidates.push(withSuffix(relative));
    for (const candidate of candidates) {
      const found = files.findIndex((file) => file.path === candidate);
      if (found >= 0) return found;
    }
    throw refusal(`require(${JSON.stringify(spec)}): no model file ${candidates.join(' or ')} in this folder`);
  }

  function load(index) {
    const file = files[index];
    if (file.state !== 'new') {
      return file.module.exports; // done, or being loaded (a cycle): what it has exported so far
    }
    file.state = 'loading';
    const module = file.module;
    const api = [
      definer('cube', index),
      definer('view', index),
      () => {}, // context(): Cube's legacy dashboard contexts; nothing the API serves reads them
      (fn) => {
        if (typeof fn !== 'function') throw refusal('asyncModule() needs a function');
        asyncModules.push({ fn, file: index, stack: new Error().stack });
      },
      (spec) => load(resolve(index, spec)),
      (values) => Object.assign(module.exports, values),
      (value) => {
        module.exports = value;
      },
      module,
      module.exports,
      module,
      scope(),
    ];
    try {
      file.body.apply(undefined, api);
    } catch (error) {
      report(error, index);
    }
    file.state = 'done';
    return module.exports;
  }

  // Cube calls a member function with the symbols its parameter names name.
  function parameterNames(fn) {
    const source = Function.prototype.toString.call(fn);
    const arrow = /^\s*(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(source);
    if (arrow) return [arrow[1]];
    const list = /^[^(]*\(([^)]*)\)/.exec(source);
    if (!list || !list[1].trim()) return [];
    return list[1].split(',').map((part) => part.trim());
  }

  function argumentFor(name) {
    if (name === 'CUBE' || name === 'TABLE') return reference(['CUBE']);
    if (name === 'COMPILE_CONTEXT') return global.COMPILE_CONTEXT;
    if (Object.prototype.hasOwnProperty.call(contextSymbols, name)) return contextSymbols[name];
    if (Object.prototype.hasOwnProperty.call(CONTEXT_ALIASES, name)) return reference([CONTEXT_ALIASES[name]]);
    if (/^[A-Za-z_$][\w$]*$/.test(name)) return reference([name]);
    return undefined;
  }

  // A reference where a value is written (drillMembers: [id, users.city], extends: orders): its path.
  function referencePath(path) {
    if (path[0] === 'CUBE' || path[0] === 'TABLE') {
      return path.length === 1 ? '{CUBE}' : `{CUBE}.${path.slice(1).join('.')}`;
    }
    if (Object.prototype.hasOwnProperty.call(CONTEXT_ALIASES, path[0])) {
      return `{ ${[CONTEXT_ALIASES[path[0]]].concat(path.slice(1)).join('.')} }`;
    }
    if (path[0] === 'userAttributes') return `{ ${path.join('.')} }`;
    return path.join('.');
  }

  // The JSON value of a definition: functions called, references as text, undefined dropped.
  function plain(value, where, seen) {
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw refusal(`${where.path}: ${value} is not a value a model can hold`);
      return value;
    }
    if (value === undefined || typeof value === 'symbol') return undefined;
    if (typeof value === 'bigint') return String(value);
    if (isReference(value)) return referencePath(value[REFERENCE]);
    if (typeof value === 'function') {
      const args = parameterNames(value).map(argumentFor);
      return plain(value.apply(undefined, args), where, seen);
    }
    if (value instanceof Date) return value.toISOString();
    if (value instanceof RegExp) return String(value);
    if (seen.has(value)) throw refusal(`${where.path}: the definition refers to itself`);
    if (seen.size > 64) throw refusal(`${where.path}: nested more than 64 levels deep`);
    seen.add(value);
    try {
      if (Array.isArray(value)) {
        const items = [];
        value.forEach((item, index) => {
          const converted = plain(item, { path: `${where.path}[${index}]` }, seen);
          items.push(converted === undefined ? null : converted);
        });
        return items;
      }
      const out = {};
      for (const key of Object.keys(value)) {
        const converted = plain(value[key], { path: `${where.path}.${key}` }, seen);
        if (converted !== undefined) out[key] = converted;
      }
      return out;
    } finally {
      seen.delete(value);
    }
  }

  // One definition's JSON, member by member, so a member whose function throws is reported and the others
  // still compile (the compiler then reports what is missing, if anything refers to it).
  function serialize(definition) {
    const out = {};
    for (const key of Object.keys(definition.body)) {
      const value = definition.body[key];
      const entries = value !== null && typeof value === 'object' && !Array.isArray(value) && !isReference(value)
        ? Object.keys(value)
        : null;
      if (entries && ['measures', 'dimensions', 'segments', 'hierarchies', 'joins'].includes(key)) {
        const section = {};
        for (const name of entries) {
          try {
            const converted = plain(value[name], { path: `${key}.${name}` }, new Set());
            if (converted !== undefined) section[name] = converted;
          } catch (error) {
            report(error, definition.file, `${key}.${name}`);
          }
        }
        out[key] = section;
        continue;
      }
      try {
        const converted = plain(value, { path: key }, new Set());
        if (converted !== undefined) out[key] = converted;
      } catch (error) {
        report(error, definition.file, key);
      }
    }
    return out;
  }

  global.COMPILE_CONTEXT = undefined;
  Object.assign(global, contextSymbols);
  global.console = Object.freeze({ log() {}, info() {}, warn() {}, error() {}, debug() {} });
  Error.stackTraceLimit = 64;

  // --- the entry points js_sandbox.py calls -----------------------------------------------------------------

  global.__define = function (index, path, body) {
    files[index] = { path, body, state: 'new', module: { exports: {} } };
  };

  global.__setup = function (contextJson, megabytes) {
    memoryLimitMegabytes = megabytes;
    const context = JSON.parse(contextJson);
    if (context.securityContext !== undefined && context.security_context === undefined) {
      context.security_context = context.securityContext; // Cube's snake_case alias
    }
    global.COMPILE_CONTEXT = readOnly(context);
  };

  // The Python side drives the run one step at a time (a file, an async module, a definition), so it always
  // knows which file runs and can name it if it has to stop the process from outside.
  global.__load = function (index) {
    load(index);
  };

  global.__asyncModules = function () {
    return JSON.stringify(asyncModules.map((entry) => entry.file));
  };

  // asyncModule: the function runs after every file, one module at a time, as in Cube; the sandbox runs its
  // promise jobs until none is left, and a promise still pending then waits for something the sandbox does not
  // have (the network, a timer, a file).
  global.__startAsync = function (index) {
    const entry = asyncModules[index];
    entry.state = 'pending';
    try {
      Promise.resolve(entry.fn()).then(
        () => {
          entry.state = 'fulfilled';
        },
        (error) => {
          entry.state = 'rejected';
          report(error, entry.file);
        },
      );
    } catch (error) {
      entry.state = 'rejected';
      report(error, entry.file);
    }
  };

  global.__finishAsync = function (index) {
    const entry = asyncModules[index];
    if (entry.state === 'pending') {
      report(
        refusal(
          'asyncModule(): its promise is still pending once the model has run: it waits for something the ' +
            'sandbox does not provide (the network, a timer, a file); only what it computes without waiting ' +
            'is honoured',
        ),
        entry.file,
        '',
        entry.stack,
      );
    }
  };

  global.__definitions = function () {
    return JSON.stringify(definitions.map((definition) => definition.file));
  };

  global.__collect = function (index) {
    const definition = definitions[index];
    return JSON.stringify({
      kind: definition.kind,
      name: definition.name,
      file: definition.file,
      stack: definition.stack,
      body: serialize(definition),
    });
  };

  global.__problems = function () {
    return JSON.stringify(problems);
  };
})(globalThis);
