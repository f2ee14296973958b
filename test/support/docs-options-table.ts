import { readFileSync } from 'node:fs';

/** A docs page's options table (the one whose header starts `| option |`): each option's default cell, by option name. */
export function optionsTable(path: string): Map<string, string> {
  const page = readFileSync(path, 'utf8');
  const start = page.indexOf('| option |');
  const table = page.slice(start, page.indexOf('\n\n', start));
  return new Map(
    table
      .split('\n')
      .slice(2)
      .map((row) => row.split('|').map((cell) => cell.trim()))
      .map((cells) => [cells[1].replace(/`/g, ''), cells[2]] as const),
  );
}
