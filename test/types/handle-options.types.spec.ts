import { join } from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..', '..');

/**
 * The handles' types, compiled by the workspace's TypeScript (5.x) as `tsc` compiles the workspace:
 * `handle-options.types.ts` passes `when`, `sink` and a client's `jobId` without a cast, and each of
 * its `@ts-expect-error` lines (a misspelt option, a wrong condition, a receipt read as a `Job`) must
 * meet its error — an unused one is itself an error (TS2578).
 */
describe('the deferred handles’ types', () => {
  it('take the library’s options, and refuse misspelt ones', () => {
    expect(ts.version).toMatch(/^5\./);
    const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile);
    const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
    const file = join(root, 'test/types/handle-options.types.ts');
    const program = ts.createProgram([file], { ...options, noEmit: true });
    const source = program.getSourceFile(file)!;
    // This file's problems only: the library's own sources are `pnpm typecheck`'s.
    const problems = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) => {
      const where = d.file ? `${d.file.fileName.slice(root.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : '';
      return `${where} TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(problems).toEqual([]);
  });
});
