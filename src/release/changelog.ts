// CHANGELOG.md, in Keep a Changelog's format: a release needs an entry for its version,
// `## [x.y.z] - YYYY-MM-DD`, whose text becomes the release's notes.

/** changelogEntry is the text of `version`'s entry (heading included, up to the next release's heading), or null. */
export function changelogEntry(changelog: string, version: string): string | null {
  const lines = changelog.split('\n');
  const heading = new RegExp(`^## \\[${version.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\](\\s|$)`);
  const start = lines.findIndex((l) => heading.test(l));
  if (start < 0) return null;
  const end = lines.findIndex((l, i) => i > start && /^## \[/.test(l));
  // Link references at the bottom ([x.y.z]: URL) belong to no entry.
  const body = lines.slice(start, end < 0 ? undefined : end).filter((l) => !/^\[[^\]]+\]:\s/.test(l));
  return `${body.join('\n').trimEnd()}\n`;
}
