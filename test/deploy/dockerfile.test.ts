// deploy/Dockerfile builds without BuildKit: with the classic builder (DOCKER_BUILDKIT=0),
// buildah and kaniko. podman build, which the image test uses (test/integration/image.test.ts),
// is buildah and accepts some BuildKit syntax (RUN --mount, heredocs), so a green image test
// alone would not show it: this reads the recipe for what only BuildKit understands.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

const DOCKERFILE = join(import.meta.dirname, '..', '..', 'deploy', 'Dockerfile');

/**
 * CLASSIC_FLAGS are the instruction flags the classic builder parses (moby's
 * builder/dockerfile/dispatchers.go): any other flag (RUN --mount, --network or --security,
 * COPY --link, --chmod, --parents or --exclude, ADD --checksum or --keep-git-dir) needs BuildKit.
 */
const CLASSIC_FLAGS: Record<string, string[]> = {
  FROM: ['--platform'],
  COPY: ['--from', '--chown'],
  ADD: ['--chown'],
};

/** instructions joins continued lines and drops comments and blank lines: one entry per instruction. */
function instructions(text: string): string[] {
  return text
    .replace(/\\\r?\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** buildKitOnly lists what in a Dockerfile only BuildKit understands, each with why. */
function buildKitOnly(text: string): string[] {
  const found: string[] = [];
  // Parser directives are comments at the very top; syntax= and check= are BuildKit's.
  for (const line of text.split('\n')) {
    const directive = /^#\s*(\w+)\s*=/.exec(line);
    if (directive === null) break;
    if (['syntax', 'check'].includes(directive[1]?.toLowerCase() ?? '')) found.push(`parser directive: ${line.trim()}`);
  }
  for (const instruction of instructions(text)) {
    const [keyword = '', ...rest] = instruction.split(/\s+/);
    const name = keyword.toUpperCase();
    for (const word of rest) {
      if (!word.startsWith('--')) break;
      const flag = word.replace(/=.*$/, '');
      if (!(CLASSIC_FLAGS[name] ?? []).includes(flag)) found.push(`${name} ${flag}: ${instruction}`);
    }
    if (/<<-?\s*["']?[A-Za-z_]/.test(instruction) && ['RUN', 'COPY', 'ADD'].includes(name)) found.push(`a heredoc: ${instruction}`);
  }
  return found;
}

test('buildKitOnly finds what the classic builder rejects, and passes what it accepts', () => {
  const cases: Array<[string, number]> = [
    ['# syntax=docker/dockerfile:1\nFROM x\n', 1],
    ['# check=skip=all\nFROM x\n', 1],
    ['# escape=`\nFROM x\n', 0],
    ['FROM x\n# syntax=docker/dockerfile:1 (not a directive below the first instruction)\n', 0],
    ['FROM x\nRUN --mount=type=cache,target=/root/.npm npm ci\n', 1],
    ['FROM x\nRUN \\\n  --mount=type=secret,id=npmrc npm ci\n', 1],
    ['FROM x\nRUN --network=none true\n', 1],
    ['FROM x\nCOPY --link a b\n', 1],
    ['FROM x\nCOPY --chmod=0644 a b\n', 1],
    ['FROM x\nADD --checksum=sha256:00 https://example.com/a b\n', 1],
    ['FROM x\nRUN <<EOF\necho hi\nEOF\n', 1],
    ['FROM x\nCOPY <<"EOF" /a\nhi\nEOF\n', 1],
    ['FROM --platform=linux/amd64 x AS build\nCOPY --from=build --chown=1:1 /a /b\nADD --chown=1:1 a b\nRUN echo a && echo "$B" > /tmp/c\n', 0],
  ];
  for (const [text, want] of cases) assert.equal(buildKitOnly(text).length, want, text);
});

test('deploy/Dockerfile uses nothing that only BuildKit understands', async () => {
  assert.deepEqual(buildKitOnly(await readFile(DOCKERFILE, 'utf8')), []);
});
