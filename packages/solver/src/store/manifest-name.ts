/** The file that makes a folder a ccheckers store (manifest.ts), in a module of its own so that
 *  the output checks (output-file.ts, below the store code) can name it without an import cycle. */
export const MANIFEST = 'manifest.json';
