// The package as a user gets it: `npm pack`, `npm install <tarball>` into a new
// project in a temporary directory outside the repository, the README example
// type-checked under what `tsc --init` writes (with its Node.js note applied),
// as an ES module (.mts) and as CommonJS (.cts), then both run against the
// live server at RECALLD_ADDR. Needs the npm registry (or npm's cache) for the
// dependencies; `npm test` builds dist/ first, and this test refuses a stale one.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

const addr = process.env.RECALLD_ADDR ?? "";
const noServer = addr === "" ? "RECALLD_ADDR is unset: start a server and export RECALLD_ADDR=host:port to run" : false;

/** clients/node: the nearest directory above this file with the package's package.json. */
function packageDir(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).name === "@recalld/client") return dir;
    if (dirname(dir) === dir) throw new Error("the @recalld/client package.json is not above this test");
  }
}

const pkg = packageDir();
const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as {
  version: string;
  devDependencies: Record<string, string>;
};

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
}

/** Runs a command with a time bound; its output is in the error when it fails. */
async function sh(
  cmd: string,
  args: string[],
  cwd: string,
  timeoutMs: number,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, { cwd, timeout: timeoutMs, env, maxBuffer: 16 << 20 });
    return stdout;
  } catch (e) {
    const { stdout = "", stderr = "" } = e as { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) failed: ${String(e)}\n${stdout}\n${stderr}`);
  }
}

/** The README's "Ten lines" example: the TypeScript block that imports the package. */
function readmeExample(): string {
  const blocks = [...readFileSync(join(pkg, "README.md"), "utf8").matchAll(/```ts\n([\s\S]*?)```/g)];
  const example = blocks.map((m) => m[1]!).find((b) => b.includes('from "@recalld/client"'));
  assert.ok(example, "README.md has a ts block importing @recalld/client");
  return example;
}

/**
 * The example as a CommonJS module: `import x = require(...)` for the import
 * (what verbatimModuleSyntax allows in a .cts) and the body in an async
 * function, since CommonJS has no top-level await.
 */
function asCommonJs(example: string): string {
  const importLine = /^import \{([^}]+)\} from "@recalld\/client";\n/m.exec(example);
  assert.ok(importLine, "the example starts with one named import of @recalld/client");
  const names = importLine[1]!.split(",").map((n) => n.trim());
  assert.ok(
    names.every((n) => !n.startsWith("type ")),
    "value imports only",
  );
  const body = example.replace(importLine[0], "").trim();
  return [
    'import recalld = require("@recalld/client");',
    `const { ${names.join(", ")} } = recalld;`,
    "",
    "async function main(): Promise<void> {",
    ...body.split("\n").map((line) => `  ${line}`),
    "}",
    "",
    "main().catch((e: unknown) => {",
    "  console.error(e);",
    "  process.exitCode = 1;",
    "});",
    "",
  ].join("\n");
}

describe("the packed package in a new project", { timeout: 600_000 }, () => {
  let work = "";
  let project = "";
  let tarball = "";

  before(async () => {
    // tsc rewrites every output of a build, so each output is newer than every source it came from.
    const newestSource = Math.max(...files(join(pkg, "src")).map((f) => statSync(f).mtimeMs));
    for (const out of ["dist/esm", "dist/cjs"]) {
      assert.ok(existsSync(join(pkg, out)), `${out} is missing: run npm run build`);
      const oldest = Math.min(...files(join(pkg, out)).map((f) => statSync(f).mtimeMs));
      assert.ok(oldest >= newestSource, `${out} is older than src/: run npm run build`);
    }
    work = mkdtempSync(join(tmpdir(), "recalld-node-pack-"));
    const repo = resolve(pkg, "../..");
    assert.ok(relative(repo, work).startsWith(".."), `${work} is outside the repository ${repo}`);
    project = join(work, "project");
    mkdirSync(project);
  });

  after(() => {
    if (work !== "") rmSync(work, { recursive: true, force: true });
  });

  it("packs dist/esm and dist/cjs, and nothing else but the manifest and README", { timeout: 120_000 }, async () => {
    // The build is fresh (checked above), so the prepare script need not run again here.
    const out = await sh("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", work], pkg, 120_000);
    const [packed] = JSON.parse(out) as { filename: string; files: { path: string }[] }[];
    assert.ok(packed);
    tarball = join(work, packed.filename);
    const paths = packed.files.map((f) => f.path).sort();
    for (const p of [
      "package.json",
      "dist/esm/index.js",
      "dist/esm/index.d.ts",
      "dist/esm/gen/recalld/v1/memory_pb.js",
      "dist/cjs/index.js",
      "dist/cjs/index.d.ts",
      "dist/cjs/package.json",
      "dist/cjs/gen/recalld/v1/memory_pb.js",
    ]) {
      assert.ok(paths.includes(p), `${p} is in the package`);
    }
    const stray = paths.filter((p) => !/^(dist\/(esm|cjs)\/|package\.json$|README\.md$)/.test(p));
    assert.deepEqual(stray, [], "nothing but the builds, the manifest and the README");
  });

  it("installs from the tarball; import and require load the same API", { timeout: 300_000 }, async () => {
    assert.ok(tarball !== "", "the pack test ran first");
    writeFileSync(join(project, "package.json"), `${JSON.stringify({ name: "recalld-pack-check", private: true })}\n`);
    const ts = manifest.devDependencies.typescript!;
    const types = manifest.devDependencies["@types/node"]!;
    await sh(
      "npm",
      [
        "install",
        tarball,
        `typescript@${ts}`,
        `@types/node@${types}`,
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
      ],
      project,
      240_000,
    );
    const installed = JSON.parse(readFileSync(join(project, "node_modules/@recalld/client/package.json"), "utf8")) as {
      version: string;
    };
    assert.equal(installed.version, manifest.version);

    const listExports = "Object.keys(m).sort().join(',')";
    const esm = await sh(
      process.execPath,
      ["--input-type=module", "-e", `import * as m from "@recalld/client"; console.log(${listExports});`],
      project,
      30_000,
    );
    const cjs = await sh(
      process.execPath,
      [
        "-e",
        `const m = require("@recalld/client"); console.log(${listExports}); console.log(require.resolve("@recalld/client"));`,
      ],
      project,
      30_000,
    );
    const [cjsExports, cjsPath] = cjs.trim().split("\n");
    assert.ok(cjsPath?.endsWith(join("dist", "cjs", "index.js")), `require resolves ${cjsPath}`);
    const esmNames = esm.trim().split(",");
    // CommonJS adds __esModule; otherwise both builds export the same names.
    assert.deepEqual(
      cjsExports?.split(",").filter((n) => n !== "__esModule"),
      esmNames,
    );
    for (const name of ["RecalldClient", "RecalldError", "MemorySchema", "toJson", "Health"]) {
      assert.ok(esmNames.includes(name), `exports ${name}`);
    }
  });

  it("type-checks the README example under tsc --init, as ESM and as CommonJS", { timeout: 180_000 }, async () => {
    assert.ok(existsSync(join(project, "node_modules/.bin/tsc")), "the install test ran first");
    await sh(join(project, "node_modules/.bin/tsc"), ["--init"], project, 60_000);
    const config = readFileSync(join(project, "tsconfig.json"), "utf8");
    // What the example is held to; if a TypeScript upgrade changes the defaults, this says so.
    for (const option of [
      /"module": "nodenext"/,
      /"strict": true/,
      /"exactOptionalPropertyTypes": true/,
      /"noUncheckedIndexedAccess": true/,
      /"verbatimModuleSyntax": true/,
      /"types": \[\]/,
    ]) {
      assert.match(config, option);
    }
    // The note `tsc --init` writes for Node.js projects: "lib": ["esnext"], "types": ["node"].
    writeFileSync(
      join(project, "tsconfig.json"),
      config.replace(/"types": \[\],/, '"types": ["node"], "lib": ["esnext"],'),
    );
    const example = readmeExample();
    writeFileSync(join(project, "readme.mts"), example);
    writeFileSync(join(project, "readme.cts"), asCommonJs(example));
    await sh(join(project, "node_modules/.bin/tsc"), ["-p", "."], project, 120_000);
    assert.ok(existsSync(join(project, "readme.mjs")) && existsSync(join(project, "readme.cjs")));
  });

  for (const file of ["readme.mjs", "readme.cjs"]) {
    it(`runs the README example (${file}) against the live server`, { skip: noServer, timeout: 60_000 }, async () => {
      assert.ok(existsSync(join(project, file)), "the type-check test ran first");
      const env: NodeJS.ProcessEnv = { ...process.env, RECALLD_ADDR: addr };
      delete env.RECALLD_API_KEY;
      const out = await sh(process.execPath, [file], project, 60_000, env);
      const lines = out.trim().split("\n");
      assert.equal(lines[0], "SERVING", out);
      // toJsonString's output parses; int64 fields arrive as strings.
      const json = lines.find((l) => l.startsWith("{"));
      assert.ok(json, out);
      assert.equal(typeof JSON.parse(json), "object");
      assert.match(out, /INVALID_ARGUMENT INVALID_FIELD/, "the error of the failing Get, decoded");
    });
  }
});
