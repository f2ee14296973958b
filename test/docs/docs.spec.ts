import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    files = new Map();
    snippets().forEach((snippet, index) => {
      // A snippet that starts with `// name.ts` is written under that name, so others can import it;
      // one that starts with `// src/name.ts` (a file of an app a guide builds) under a folder of
      // its page, so that two guides' `src/app.module.ts` do not meet.
      const named = /^\/\/ ([\w.-]+\.ts)\n/.exec(snippet.code)?.[1];
      const inApp = /^\/\/ ((?:[\w.-]+\/)+[\w.-]+\.ts)\n/.exec(snippet.code)?.[1];
      const page = snippet.from.split(':')[0].replace(/[^\w.-]+/g, '_');
      const path = inApp ? join(snippetsDir, page, inApp) : join(snippetsDir, named ?? `snippet-${index}.ts`);
      mkdirSync(join(path, '..'), { recursive: true });
      writeFileSync(path, snippet.code);
      files.set(path, snippet.from);
    });
    const optionsFile = join(root, 'packages/nestjs-deferred-work/src/nest/options/module-options.interface.ts');
    program = ts.createProgram([...files.keys(), optionsFile], { ...compilerOptions(), noEmit: true, noUnusedLocals: false });
  });
  afterAll(() => rmSync(snippetsDir, { recursive: true, force: true }));

  it('has TypeScript snippets to check', () => {
    expect(files.size).toBeGreaterThanOrEqual(8);
  });

  it('every TypeScript snippet in README.md and docs/ compiles against the library', () => {
    const problems: string[] = [];
    for (const [path, from] of files) {
      const source = program.getSourceFile(path)!;
      for (const d of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
        const { line } = d.file ? d.file.getLineAndCharacterOfPosition(d.start ?? 0) : { line: 0 };
        problems.push(`${from} (+${line}): ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
      }
    }
    expect(problems).toEqual([]);
  });

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
