// duplicateKeys finds the keys that appear twice in one object of a JSON text: JSON.parse keeps
// the last silently, while strict parsers (and many log pipelines) reject the line. For tests.

/** duplicateKeys returns "path.key" for each key repeated within one object; [] when none is. */
export function duplicateKeys(text: string): string[] {
  const found: string[] = [];
  const stack: Array<{ keys: Set<string> | null; path: string; lastKey: string }> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const str = JSON.parse(text.slice(i, j + 1)) as string;
      const top = stack.at(-1);
      if (expectKey && top?.keys) {
        if (top.keys.has(str)) found.push(`${top.path}${str}`);
        top.keys.add(str);
        top.lastKey = str;
        expectKey = false;
      }
      i = j;
    } else if (c === '{' || c === '[') {
      const parent = stack.at(-1);
      const path = parent ? `${parent.path}${parent.keys ? parent.lastKey : '[]'}.` : '';
      stack.push({ keys: c === '{' ? new Set() : null, path, lastKey: '' });
      expectKey = c === '{';
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ',') {
      expectKey = stack.at(-1)?.keys != null;
    }
  }
  return found;
}
