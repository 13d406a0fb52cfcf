// Type-checks Grafana dashboard JSON files against @grafana/schema's Dashboard type.
// Usage: node check.mjs DASHBOARD.json...   Exit status: 0 when all conform, else non-zero (tsc: 2).
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node check.mjs DASHBOARD.json...");
  process.exit(2);
}
const out = join(here, "generated");
rmSync(out, { recursive: true, force: true });
mkdirSync(out);
files.forEach((file, i) => {
  // Parsing first turns invalid JSON into a clear error instead of a confusing TypeScript one.
  const json = JSON.stringify(JSON.parse(readFileSync(file, "utf8")), null, 2);
  const source = `// generated from ${file}\nimport type { Dashboard } from "@grafana/schema";\n\n` +
    `export const dashboard: Dashboard = ${json};\n`;
  writeFileSync(join(out, `${i}-${basename(file, ".json")}.ts`), source);
});
const tsc = join(here, "node_modules", "typescript", "bin", "tsc");
const result = spawnSync(process.execPath, [tsc, "-p", join(here, "tsconfig.json")], { stdio: "inherit" });
process.exit(result.status ?? 1);
