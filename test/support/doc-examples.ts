// The examples the docs give, read from the doc files themselves, so that the tests run what a
// reader copies and a changed example is tested as changed.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO } from './deploy.ts';

/**
 * docBlock is the first fenced block of a language after `after` (a line's text, such as a bold
 * label), within the section of a doc file that starts at the heading line `heading` and ends at
 * the next heading of the same level or above.
 */
export async function docBlock(file: string, heading: string, after: string, language: 'yaml' | 'sh'): Promise<string> {
  const doc = await readFile(join(REPO, file), 'utf8');
  const level = /^#+/.exec(heading)?.[0] ?? '#';
  const start = doc.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `${file}: the section ${heading}`);
  const rest = doc.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`\\n#{1,${level.length}} `));
  const section = end < 0 ? rest : rest.slice(0, end);
  const at = section.indexOf(after);
  assert.ok(at >= 0, `${file}, ${heading}: ${after}`);
  const block = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(section.slice(at))?.[1];
  assert.ok(block, `${file}, ${heading}, ${after}: a ${language} block`);
  return block;
}

/** SETTINGS is docs/operations.md's section of the settings examples. */
export const SETTINGS = { file: 'docs/operations.md', heading: '### Your settings, from your own kustomization' } as const;

/** settingsExample is one route's example of SETTINGS, by its bold label. */
export function settingsExample(label: string, language: 'yaml' | 'sh'): Promise<string> {
  return docBlock(SETTINGS.file, SETTINGS.heading, `**${label}**`, language);
}

/** commandLines are a shell block's commands, without blank lines and comments. */
export function commandLines(block: string): string[] {
  return block.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
}
