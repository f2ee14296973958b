import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * The messages the library throws and logs, read from its source with the TypeScript parser, as
 * patterns: each `${…}` of a template (that is not a string constant of the same file) is a hole,
 * written `\0`. A message built with `a ? 'x' : 'y'` gives one pattern per branch.
 */
export interface LibraryMessage {
  /** `src/…/file.ts:line`. */
  readonly at: string;
  /** How the message reaches the user: the error class, or `log` for a logged warning. */
  readonly via: string;
  readonly pattern: string;
}

export const HOLE = '\0';

/** Error classes whose messages are written for the user: every one must be in the troubleshooting page. */
const USER_ERRORS = new Set([
  'DeferredWorkConfigError',
  'SinkConfigError',
  'SinkWriteError',
  'DeferredItemRejectedError',
  'SqlTableError',
  'OutboxTransactionError',
  'Error',
  'TypeError',
  'RangeError',
]);
/** Classes whose message is built in their own constructor (read from its `super(…)` call). */
const SELF_WORDED = ['DeferredContextError', 'DeferredResponseNotFoundError', 'SpoolLockedError', 'SpoolFullError', 'RedriveInProgressError', 'DeadLetterStoreMissingError'];
/** Files that build a warning as `{ key, message }` for their caller to log. */
const LOGGED_MESSAGE_FILES = ['pipeline/sink-admission.ts'];
/**
 * Functions that build a message and return it for their caller to log or throw (`apps[0].log(drainMessage(…))`,
 * `logger.warn(warning)`, `throw new Error(problem)`): each string they return is a message. By file, then function name.
 */
const RETURNED_MESSAGES: Readonly<Record<string, readonly string[]>> = {
  'nest/stop-signals.ts': ['drainMessage'], // the stop-signal warning
  'serverless/platform.ts': ['platformWarning'], // the bootstrap warning on Lambda, Vercel, Cloud Run
  'serverless/invocation.ts': ['reportLine'], // an invocation's work not all delivered
  'sinks/bullmq/bullmq-job-options.ts': ['bullMqOptionsProblem'], // a job option BullMQ refuses: the item is rejected when deferred
};
/** The kit's functions that build a `SinkWriteError` from the message given first (`redisNotConnected(message, cause?)`). */
const ERROR_BUILDERS = new Set(['redisNotConnected']);
/** Calls that log a message for the user: `logger.warn(msg)`, `warnings.warn(key, msg)`, `context.warn(msg)`, … */
const LOG_METHODS = new Set(['warn', 'error']);

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) out.push(path);
  }
  return out;
}

/**
 * The value a local constant names (`const prefix = \`HttpSink "${name}"\``): the nearest declaration
 * in an enclosing block or the file (a parameter, or a name declared nowhere above, is a hole).
 */
function constantOf(name: ts.Identifier): ts.Expression | undefined {
  for (let scope: ts.Node | undefined = name.parent; scope; scope = scope.parent) {
    if (!ts.isBlock(scope) && !ts.isSourceFile(scope) && !ts.isModuleBlock(scope)) continue;
    for (const statement of scope.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      for (const declaration of statement.declarationList.declarations) {
        if (!ts.isIdentifier(declaration.name) || declaration.name.text !== name.text) continue;
        return declaration.initializer;
      }
    }
  }
  return undefined;
}

/** Every pattern an expression can evaluate to (holes for what is not known from the source). */
function patterns(node: ts.Expression, depth = 0): string[] {
  if (depth > 4) return [HOLE];
  if (ts.isParenthesizedExpression(node)) return patterns(node.expression, depth);
  if (ts.isStringLiteralLike(node)) return [node.text];
  if (ts.isTemplateExpression(node)) {
    let out = [node.head.text];
    for (const span of node.templateSpans) {
      const inner = patterns(span.expression, depth + 1);
      out = out.flatMap((before) => inner.map((value) => before + value + span.literal.text));
    }
    return out;
  }
  if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const left = patterns(node.left, depth);
    const right = patterns(node.right, depth);
    return left.flatMap((l) => right.map((r) => l + r));
  }
  if (ts.isConditionalExpression(node)) return [...patterns(node.whenTrue, depth), ...patterns(node.whenFalse, depth)];
  if (ts.isIdentifier(node)) {
    const value = constantOf(node);
    if (value) return patterns(value, depth + 1);
  }
  return [HOLE];
}

/** The message patterns of one `new X(args)` of a user-facing error class. */
function thrownPatterns(name: string, args: readonly ts.Expression[]): string[] {
  const arg = (i: number) => (args[i] ? patterns(args[i]) : ['']);
  const join3 = (head: string, a: string[], mid: string, b: string[], dot: string, c: string[]) =>
    a.flatMap((x) => b.flatMap((y) => c.map((z) => `${head}${x}${mid}${y}${dot}${z}`)));
  if (name === 'DeferredWorkConfigError') return join3('DeferredWorkModule: invalid option "', arg(0), '": ', arg(1), '. ', arg(2));
  if (name === 'DeferredItemRejectedError') return join3('DeferredWork rejected ', arg(0), ': ', arg(1), '. ', arg(2));
  return arg(0);
}

/** Whether a call is `something.warn(…)` / `something.error(…)` with a message, and which argument holds it. */
function loggedMessage(node: ts.CallExpression): ts.Expression | undefined {
  const callee = node.expression;
  const method = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isIdentifier(callee) ? callee.text : undefined;
  if (method === undefined || !LOG_METHODS.has(method)) return undefined;
  // `warnings.warn(key, message)` (rate-limited by key): the message is the second argument.
  const message = node.arguments.length >= 2 && isKeyed(callee) ? node.arguments[1] : node.arguments[0];
  if (!message || ts.isIdentifier(message) || ts.isArrowFunction(message)) return undefined;
  return message;
}

function isKeyed(callee: ts.Expression): boolean {
  return ts.isPropertyAccessExpression(callee) && /warnings|limited|hooks/.test(callee.expression.getText());
}

/** Every user-facing message of the library's source under `srcDir`. */
export function libraryMessages(srcDir: string): LibraryMessage[] {
  const out: LibraryMessage[] = [];
  for (const path of sourceFiles(srcDir)) {
    const text = readFileSync(path, 'utf8');
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    const returned = Object.entries(RETURNED_MESSAGES).find(([f]) => path.endsWith(f))?.[1] ?? [];
    const at = (node: ts.Node) => `${relative(join(srcDir, '..'), path)}:${file.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const add = (node: ts.Node, via: string, found: string[]) => {
      for (const pattern of found) if (pattern.replaceAll(HOLE, '').trim().length > 0) out.push({ at: at(node), via, pattern });
    };
    const visit = (node: ts.Node) => {
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && USER_ERRORS.has(node.expression.text)) {
        add(node, node.expression.text, thrownPatterns(node.expression.text, node.arguments ?? []));
      } else if (ts.isClassDeclaration(node) && node.name && SELF_WORDED.includes(node.name.text)) {
        const visitSuper = (inner: ts.Node) => {
          if (ts.isCallExpression(inner) && inner.expression.kind === ts.SyntaxKind.SuperKeyword && inner.arguments[0]) {
            add(inner, node.name!.text, patterns(inner.arguments[0]));
          }
          ts.forEachChild(inner, visitSuper);
        };
        visitSuper(node);
        return;
      } else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'optionError') {
        // optionError(prefix, option, problem, fix, value?): `prefix: option "option" problem[, got value]. fix`
        const [prefix, option, problem, fix] = node.arguments.slice(0, 4).map((a) => patterns(a));
        const got = node.arguments.length > 4 ? `, got ${HOLE}` : '';
        const built = prefix.flatMap((p) => option.flatMap((o) => problem.flatMap((q) => fix.map((f) => `${p}: option "${o}" ${q}${got}.${f ? ` ${f}` : ''}`))));
        add(node, 'SinkConfigError', built);
      } else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && ERROR_BUILDERS.has(node.expression.text) && node.arguments[0]) {
        add(node, 'SinkWriteError', patterns(node.arguments[0]));
      } else if (ts.isCallExpression(node)) {
        const message = loggedMessage(node);
        if (message) add(node, 'log', patterns(message));
      } else if (ts.isFunctionDeclaration(node) && node.name && returned.includes(node.name.text) && node.body) {
        // Its own return statements, not those of the functions it declares.
        const visitReturns = (inner: ts.Node) => {
          if (ts.isReturnStatement(inner) && inner.expression) add(inner, 'log', patterns(inner.expression));
          if (!ts.isFunctionLike(inner)) ts.forEachChild(inner, visitReturns);
        };
        ts.forEachChild(node.body, visitReturns);
      } else if (ts.isPropertyAssignment(node) && node.name.getText() === 'message' && LOGGED_MESSAGE_FILES.some((f) => path.endsWith(f))) {
        // Warnings built in one place and logged in another (`{ key, message }` handed to the logger).
        add(node, 'log', patterns(node.initializer));
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return out;
}

/** A heading of the troubleshooting page as a pattern: `<placeholder>` and `…` are holes. */
export function headingPattern(heading: string): string {
  return heading.replace(/<[A-Za-z][^<>]*>|…/g, HOLE);
}

/**
 * Whether a heading pattern names a message pattern: some string fits both, the heading standing
 * anywhere in the message (a hole on either side matches any text, the other side's words included).
 */
export function names(heading: string, message: string): boolean {
  const h = `${HOLE}${heading}${HOLE}`;
  const m = message;
  const n = h.length;
  const k = m.length;
  // fits[i][j]: h from i and m from j can be made equal.
  let next = new Array<boolean>(k + 1).fill(false);
  // Row i = n: only holes left in m fit.
  next[k] = true;
  for (let j = k - 1; j >= 0; j--) next[j] = m[j] === HOLE && next[j + 1];
  for (let i = n - 1; i >= 0; i--) {
    const row = new Array<boolean>(k + 1).fill(false);
    for (let j = k; j >= 0; j--) {
      if (h[i] === HOLE) row[j] = next[j] || (j < k && row[j + 1]);
      else if (j < k && m[j] === HOLE) row[j] = row[j + 1] || next[j];
      else row[j] = j < k && h[i] === m[j] && next[j + 1];
    }
    next = row;
  }
  return next[0];
}

/** The longest run of words in a pattern, between holes. */
export function longestWords(pattern: string): string {
  return pattern.split(HOLE).reduce((a, b) => (b.trim().length > a.trim().length ? b : a), '');
}
