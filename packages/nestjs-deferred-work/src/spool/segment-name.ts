/** `segment-<first seq, 16 digits>`: names sort as their seqs do. */
export function segmentBaseName(firstSeq: number): string {
  return `segment-${String(firstSeq).padStart(16, '0')}`;
}

/** The first seq of a segment file's name (`segment-<seq>.log`), or `undefined` for another file. */
export function parseSegmentName(file: string): number | undefined {
  const match = /^segment-(\d+)\.log$/.exec(file);
  return match ? Number(match[1]) : undefined;
}
