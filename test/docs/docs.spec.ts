import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { MODULE_DEFAULTS } from '../../packages/nestjs-deferred-work/src/nest/options/module.defaults';
import { PROCESSOR_DEFAULTS, TOTAL_QUEUE_BYTES_DEFAULT } from '../../packages/nestjs-deferred-work/src/pipeline/defaults';

const root = join(import.meta.dirname, '..', '..');
const snippetsDir = join(root, 'test', 'docs', '.snippets');

function markdownFiles(): string[] {
  const found = [join(root, 'README.md'), join(root, 'packages/nestjs-deferred-work/README.md')];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk(join(root, 'docs'));
  return found;
}

/** Every ```ts block of the README and docs/, with where it came from. */
function snippets(): Array<{ from: string; code: string }> {
  const out: Array<{ from: string; code: string }> = [];
  for (const file of markdownFiles()) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/^```ts\n([\s\S]*?)^```/gm)) {
      const line = text.slice(0, match.index).split('\n').length;
      out.push({ from: `${relative(root, file)}:${line}`, code: match[1] });
    }
  }
  return out;
}

/**
 * Writes every snippet under `dir`: one that starts with `// name.ts` under that name, so others can
 * import it; one that starts with `// src/name.ts` (a file of an app a guide builds) under a folder of
 * its page, so that two guides' `src/app.module.ts` do not meet. Returns file -> where it came from.
 */
function writeSnippets(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  snippets().forEach((snippet, index) => {
    // A snippet named `x.mts` is an ES module whatever the app's type (a Lambda handler's top-level await).
    const named = /^\/\/ ([\w.-]+\.m?ts)\n/.exec(snippet.code)?.[1];
    const inApp = /^\/\/ ((?:[\w.-]+\/)+[\w.-]+\.ts)\n/.exec(snippet.code)?.[1];
    const page = snippet.from.split(':')[0].replace(/[^\w.-]+/g, '_');
    const path = inApp ? join(dir, page, inApp) : join(dir, named ?? `snippet-${index}.ts`);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, snippet.code);
    files.set(path, snippet.from);
  });
  return files;
}

/** Each diagnostic of the program's snippet files, as `page:line (+line in the snippet): message`. */
function problemsOf(program: ts.Program, files: Map<string, string>): string[] {
  const problems: string[] = [];
  for (const [path, from] of files) {
    const source = program.getSourceFile(path)!;
    for (const d of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const { line } = d.file ? d.file.getLineAndCharacterOfPosition(d.start ?? 0) : { line: 0 };
      problems.push(`${from} (+${line}): ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    }
  }
  return problems;
}

/**
 * The tsconfig `nest new` writes (@nestjs/cli 11 and 12): `module`/`moduleResolution` `nodenext`, in a
 * package with `"type": "module"` (the ES-module app, @nestjs/cli 12's default) or without it (the
 * CommonJS app, @nestjs/cli 11 and 12's `cjs`).
 */
const NEST_NEW_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  resolvePackageJsonExports: true,
  esModuleInterop: true,
  isolatedModules: true,
  emitDecoratorMetadata: true,
  experimentalDecorators: true,
  target: ts.ScriptTarget.ES2023,
  strict: true,
  strictPropertyInitialization: false,
  skipLibCheck: true,
  types: ['node', 'jest'],
  noEmit: true,
};

/** A compiler host that parses each declaration file once for both app programs. */
const sharedHost = (() => {
  const host = ts.createCompilerHost(NEST_NEW_OPTIONS);
  const parsed = new Map<string, ts.SourceFile | undefined>();
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, ...rest) => {
    if (!fileName.includes('/node_modules/') && !fileName.includes('/typescript/lib/')) return getSourceFile(fileName, languageVersion, ...rest);
    if (!parsed.has(fileName)) parsed.set(fileName, getSourceFile(fileName, languageVersion, ...rest));
    return parsed.get(fileName);
  };
  return host;
})();

function compilerOptions(): ts.CompilerOptions {
  const configPath = join(root, 'tsconfig.json');
  const config = ts.readConfigFile(configPath, ts.sys.readFile);
  return ts.parseJsonConfigFileContent(config.config, ts.sys, root).options;
}

describe('docs', () => {
  let program: ts.Program;
  let files: Map<string, string>;

  beforeAll(() => {
    rmSync(snippetsDir, { recursive: true, force: true });
    mkdirSync(snippetsDir, { recursive: true });
    files = writeSnippets(join(snippetsDir, 'source'));
    const optionsFile = join(root, 'packages/nestjs-deferred-work/src/nest/options/module-options.interface.ts');
    program = ts.createProgram([...files.keys(), optionsFile], { ...compilerOptions(), noEmit: true, noUnusedLocals: false });
  });
  afterAll(() => rmSync(snippetsDir, { recursive: true, force: true }));

  it('has TypeScript snippets to check', () => {
    expect(files.size).toBeGreaterThanOrEqual(8);
  });

  it('every TypeScript snippet in README.md and docs/ compiles against the library', () => {
    expect(problemsOf(program, files)).toEqual([]);
  });

  // As a user's app compiles them: against the built package (its `exports`, `import` or `require`
  // types), relative imports with their `.js` suffix. `pnpm test` builds the package first.
  it.each([
    ['an ES-module app', 'module'],
    ['a CommonJS app', 'commonjs'],
  ])('every TypeScript snippet compiles in %s that `nest new` writes (nodenext, "type": "%s")', (_, type) => {
    const pkg = join(root, 'packages/nestjs-deferred-work');
    if (!existsSync(join(pkg, 'dist', 'index.d.ts')) || !existsSync(join(pkg, 'dist', 'index.d.cts'))) {
      throw new Error('packages/nestjs-deferred-work has no built types: run "pnpm build" first (pnpm test builds before it runs the tests).');
    }
    const app = join(snippetsDir, type);
    mkdirSync(join(app, 'node_modules'), { recursive: true });
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: `snippets-${type}`, private: true, type }));
    symlinkSync(pkg, join(app, 'node_modules', 'nestjs-deferred-work'), 'dir');
    const appFiles = writeSnippets(app);
    const appProgram = ts.createProgram([...appFiles.keys()], NEST_NEW_OPTIONS, sharedHost);
    expect(problemsOf(appProgram, appFiles)).toEqual([]);
  }, 120_000);

  it("the README's app snippets are the very files the consumer test compiles in fresh Nest apps", () => {
    const readme = snippets().filter((s) => s.from.startsWith('README.md'));
    for (const file of ['audit.sink.ts', 'app.module.ts']) {
      const fixture = readFileSync(join(root, 'test/consumer/fixture/src', file), 'utf8');
      expect(readme.map((s) => s.code)).toContain(fixture);
    }
  });

  it('every relative link in README.md and docs/ points at a file that exists', () => {
    const broken: string[] = [];
    for (const file of markdownFiles()) {
      const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
        const path = join(file, '..', target.split('#')[0]);
        if (!existsSync(path)) broken.push(`${relative(root, file)} → ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the options table lists every module option with the default the code applies and documents', () => {
    const checker = program.getTypeChecker();
    const source = program.getSourceFile(join(root, 'packages/nestjs-deferred-work/src/nest/options/module-options.interface.ts'))!;
    const documented = new Map<string, string>(); // option -> "Default `x`" from JSDoc
    const exported = checker.getExportsOfModule(checker.getSymbolAtLocation(source)!);
    for (const name of ['DeferredWorkModuleOptions', 'DeferredWorkModuleExtras']) {
      const symbol = exported.find((s) => s.name === name)!;
      for (const prop of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))) {
        const doc = ts.displayPartsToString(prop.getDocumentationComment(checker));
        documented.set(prop.name, /Default:? (`[^`]*`|[^.]*)/.exec(doc)?.[1] ?? '');
      }
    }
    const page = readFileSync(join(root, 'docs/03-module-options.md'), 'utf8');
    const table = page.slice(page.indexOf('| option |'), page.indexOf('\n\n', page.indexOf('| option |')));
    const rows = new Map(
      table
        .split('\n')
        .slice(2)
        .map((row) => row.split('|').map((cell) => cell.trim()))
        .map((cells) => [cells[1].replace(/`/g, ''), cells[2]] as const),
    );
    expect([...rows.keys()].sort()).toEqual([...documented.keys()].sort());
    const runtime: Record<string, unknown> = { ...PROCESSOR_DEFAULTS, ...MODULE_DEFAULTS, maxTotalQueueBytes: TOTAL_QUEUE_BYTES_DEFAULT, isGlobal: true, registerInterceptor: 'auto' };
    // No cap (`Infinity` in the code) reads "none" in the table and the JSDoc.
    const shown = (value: unknown) => (value === Number.POSITIVE_INFINITY ? 'none' : `\`${String(value)}\``);
    for (const [option, value] of Object.entries(runtime)) {
      expect([option, rows.get(option)]).toEqual([option, shown(value)]);
      expect([option, documented.get(option)]).toEqual([option, shown(value)]);
    }
  });
});
