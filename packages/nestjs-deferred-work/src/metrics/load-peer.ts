/**
 * Imports an optional peer dependency (the app's copy), whether it is an ES module or CommonJS, and
 * checks it has what the exporter uses; otherwise fails the bootstrap saying how to fix it.
 */
export async function loadPeer<T>(name: string, option: string, uses: readonly string[]): Promise<T> {
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(name)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(
      `DeferredWorkMetricsModule: option "${option}" needs the package ${name}, which could not be loaded (${error instanceof Error ? error.message : String(error)}). ` +
        `Install it in the app (npm install ${name}), or leave "${option}" out.`,
    );
  }
  const mod = (uses.every((key) => key in loaded) ? loaded : (loaded.default as Record<string, unknown> | undefined)) ?? {};
  const missing = uses.filter((key) => !(key in mod));
  if (missing.length > 0) {
    throw new Error(`DeferredWorkMetricsModule: option "${option}": the installed ${name} has no ${missing.join(', ')}. Install a supported version (see the package's peerDependencies).`);
  }
  return mod as T;
}
