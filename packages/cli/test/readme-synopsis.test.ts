/**
 * README.md against the program: every command `ccheckers --help` lists has a synopsis in the
 * README, and the options (and arguments) of its synopses are those of its `--help`, each taking a
 * value in both or in neither. A synopsis is the code span that opens a paragraph and starts with
 * `ccheckers COMMAND` (e.g. "`ccheckers show POSITION [--db FILE|DIR] [--numbers]` draws ...");
 * one with the word `...` in it is an excerpt, not a synopsis (`FILE...` is a list of files). A
 * command may have several (check, check --consistency): their options together are compared.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../src/main.js';

const README = new URL('../../../README.md', import.meta.url);

/** What a synopsis or a help text says of a command: its options (whether each takes a value)
 *  and its arguments. */
interface Usage {
  options: Map<string, boolean>;
  args: number;
}

/** The text `ccheckers ...args --help` prints. */
async function helpOf(args: string[]): Promise<string> {
  let text = '';
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return true;
  });
  try {
    expect(await main(['node', 'ccheckers', ...args, '--help'])).toBe(0);
  } finally {
    write.mockRestore();
  }
  return text;
}

/** The commands of the top-level help (its "Commands:" section, `help` aside). */
function commandsOf(help: string): string[] {
  const section = help.split(/^Commands:$/m)[1] ?? '';
  return [...section.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]!).filter((c) => c !== 'help');
}

/** A command's options and arguments from its help: "Usage: ccheckers show [options] <position>",
 *  then option lines "  --db <path>  ..." (continuation lines are indented further). */
function helpUsage(help: string): Usage {
  const usage = /^Usage: \S+ \S+(.*)$/m.exec(help)?.[1] ?? '';
  const args = [...usage.matchAll(/[<[]([^>\]]+)[>\]]/g)].filter((m) => m[1] !== 'options').length;
  const options = new Map<string, boolean>();
  for (const m of help.matchAll(/^ {2}(?:-[a-zA-Z], )?--([a-z0-9][a-z0-9-]*)( [<[])?/gm)) {
    if (m[1] !== 'help' && m[1] !== 'version') options.set(m[1]!, m[2] !== undefined);
  }
  return { options, args };
}

/** The synopses of the README by command: the code span that opens a paragraph (outside code
 *  blocks) and starts with `ccheckers COMMAND`, unless it holds the word `...` (an excerpt). */
function readmeSynopses(markdown: string): Map<string, string[]> {
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  const found = new Map<string, string[]>();
  for (const paragraph of prose.split(/\n\s*\n/)) {
    const m = /^`ccheckers ([a-z][a-z-]*)\b([^`]*)`/.exec(paragraph.trim().replace(/\s*\n\s*/g, ' '));
    if (!m || m[2]!.split(' ').includes('...')) continue;
    found.set(m[1]!, [...(found.get(m[1]!) ?? []), m[2]!]);
  }
  return found;
}

/** A synopsis's options and arguments: `--name VALUE`, `[--name]`, `--name` followed by another
 *  option; a bare word not after an option is an argument. Brackets only group. */
function synopsisUsage(synopsis: string): Usage {
  const tokens = synopsis.match(/\[|\]|[^\s[\]]+/g) ?? [];
  const options = new Map<string, boolean>();
  let args = 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === '[' || token === ']') continue;
    const option = /^--([a-z0-9][a-z0-9-]*)$/.exec(token);
    if (!option) {
      args++;
      continue;
    }
    const next = tokens[i + 1];
    const takesValue = next !== undefined && next !== '[' && next !== ']' && !next.startsWith('--');
    if (takesValue) i++;
    const said = options.get(option[1]!);
    if (said !== undefined && said !== takesValue) throw new Error(`--${option[1]} is written both with and without a value`);
    options.set(option[1]!, takesValue);
  }
  return { options, args };
}

/** How a README's usage differs from a help's, one line each (empty: they agree). */
function differences(command: string, readme: Usage, help: Usage): string[] {
  const out: string[] = [];
  for (const [name, value] of help.options) {
    if (!readme.options.has(name)) out.push(`${command}: --${name} is in --help, not in the README's synopsis`);
    else if (readme.options.get(name) !== value) out.push(`${command}: --${name} takes ${value ? 'a value' : 'no value'} in --help, ${value ? 'none' : 'one'} in the README`);
  }
  for (const name of readme.options.keys()) {
    if (!help.options.has(name)) out.push(`${command}: --${name} is in the README's synopsis, not in --help`);
  }
  if (readme.args !== help.args) out.push(`${command}: ${help.args} argument(s) in --help, ${readme.args} in the README's synopsis`);
  return out;
}

describe('README.md synopses', () => {
  afterEach(() => vi.restoreAllMocks());

  it('parse as intended (a removed option, a value, an argument, an excerpt)', () => {
    const synopses = readmeSynopses(
      ['Intro.', '', '`ccheckers show POSITION [--db FILE|DIR] [--numbers]` draws it.', '', '`ccheckers bench ... --html FILE` also writes a page.', '', '```', '`ccheckers info --bogus`', '```'].join('\n'),
    );
    expect([...synopses.keys()]).toEqual(['show']);
    const readme = synopsisUsage(synopses.get('show')![0]!);
    expect(readme).toEqual({ options: new Map([['db', true], ['numbers', false]]), args: 1 });
    const help = helpUsage('Usage: ccheckers show [options] <position>\n\nOptions:\n  --numbers        cell numbers\n  --rules <mode>   clean |\n                   published\n  --db <path>      a database\n  -h, --help       display help\n');
    expect(differences('show', readme, help)).toEqual(["show: --rules is in --help, not in the README's synopsis"]);
    expect(differences('show', synopsisUsage('[--db] POSITION [--numbers] [--rules R]'), help)).toEqual(['show: --db takes a value in --help, none in the README']);
    expect(differences('show', synopsisUsage('POSITION --db FILE [--rules R]'), help)).toEqual(["show: --numbers is in --help, not in the README's synopsis"]);
    expect(differences('show', synopsisUsage('[--db FILE] [--numbers] [--rules R] [--colour C]'), help)).toEqual(["show: --colour is in the README's synopsis, not in --help", "show: 1 argument(s) in --help, 0 in the README's synopsis"]);
  });

  it("of every command name the options of its --help, and no others", async () => {
    const synopses = readmeSynopses(readFileSync(README, 'utf8'));
    const commands = commandsOf(await helpOf([]));
    expect(commands.length).toBeGreaterThan(10);
    const problems: string[] = [];
    for (const command of commands) {
      const written = synopses.get(command);
      if (!written) {
        problems.push(`${command}: no synopsis in the README`);
        continue;
      }
      const readme = written.map(synopsisUsage).reduce((all, u) => ({ options: new Map([...all.options, ...u.options]), args: Math.max(all.args, u.args) }));
      problems.push(...differences(command, readme, helpUsage(await helpOf([command]))));
    }
    for (const command of synopses.keys()) if (!commands.includes(command)) problems.push(`${command}: a synopsis in the README, no such command`);
    expect(problems).toEqual([]);
  });
});
