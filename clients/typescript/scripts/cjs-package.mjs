// cjs-package.mjs marks dist/cjs as CommonJS (the package itself is ESM).
import { writeFileSync } from "node:fs";
writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), '{"type": "commonjs"}\n');
