// Copies the pinned browser builds from frontend/node_modules (installed by `npm ci` from the lock file)
// into static/vendor/, each with a one-line banner naming its package and version (tests/embed_assets
// checks the banners against package.json). Run by `make vendor`; the product never needs node to run.
import { readFileSync, writeFileSync, mkdirSync, readdirSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const target = join(here, "..", "static", "vendor");
const pins = JSON.parse(readFileSync(join(here, "package.json"), "utf8")).dependencies;

// package -> its minified UMD build (globals: vega, vegaLite, vega.expressionInterpreter, vegaEmbed)
const builds = {
  vega: "build/vega.min.js",
  "vega-lite": "build/vega-lite.min.js",
  "vega-interpreter": "build/vega-interpreter.min.js",
  "vega-embed": "build/vega-embed.min.js",
  // The API reference at /api/docs (global: SwaggerUIBundle)
  "swagger-ui-dist": "swagger-ui-bundle.js",
  // The panel's dashboard editor: the grid its widgets are dragged and resized on (global: GridStack)
  gridstack: "dist/gridstack-all.js",
};
// package -> its stylesheet, copied as static/vendor/<package>.min.css
const styles = {
  "swagger-ui-dist": "swagger-ui.css",
  gridstack: "dist/gridstack.min.css",
};

mkdirSync(target, { recursive: true });
const wanted = new Set(Object.keys(builds).map((name) => `${name}.min.js`));
for (const file of readdirSync(target)) {
  if (file.endsWith(".js") && !wanted.has(file)) unlinkSync(join(target, file));
}
const notices = [];
for (const [name, build] of Object.entries(builds)) {
  const meta = JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8"));
  if (meta.version !== pins[name]) {
    throw new Error(`${name}: installed ${meta.version}, package.json pins ${pins[name]} (run npm ci)`);
  }
  let code = readFileSync(join(here, "node_modules", name, build), "utf8");
  // The source map is not shipped; drop the comment that points at it.
  code = code.replace(/\n?\/\/# sourceMappingURL=\S+\s*$/, "\n");
  const banner = `/*! ${name}@${meta.version} (${meta.license}) from the npm registry, pinned in frontend/package.json; refreshed by make vendor */\n`;
  writeFileSync(join(target, `${name}.min.js`), banner + code);
  console.log(`static/vendor/${name}.min.js  ${name}@${meta.version}`);
  const license = readdirSync(join(here, "node_modules", name)).find((file) => /^licen[cs]e/i.test(file));
  const text = license
    ? readFileSync(join(here, "node_modules", name, license), "utf8").trim()
    : `License: ${meta.license} (the package ships no LICENSE file; see ${meta.repository?.url || meta.homepage || "its repository"})`;
  notices.push(`${name}@${meta.version}\n\n${text}\n`);
}
for (const [name, sheet] of Object.entries(styles)) {
  const meta = JSON.parse(readFileSync(join(here, "node_modules", name, "package.json"), "utf8"));
  let css = readFileSync(join(here, "node_modules", name, sheet), "utf8");
  css = css.replace(/\n?\/\*# sourceMappingURL=\S+\s*\*\/\s*$/, "\n");
  const banner = `/*! ${name}@${meta.version} (${meta.license}) from the npm registry, pinned in frontend/package.json; refreshed by make vendor */\n`;
  writeFileSync(join(target, `${name}.min.css`), banner + css);
  console.log(`static/vendor/${name}.min.css  ${name}@${meta.version}`);
}
writeFileSync(join(target, "THIRD_PARTY_LICENSES.txt"), notices.join("\n" + "-".repeat(72) + "\n\n"));
