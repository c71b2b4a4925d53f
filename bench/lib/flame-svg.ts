// flameSvg draws folded stacks (cpuprofile.ts's fold) as a static SVG flame graph: the root at the
// bottom, each frame as wide as its samples, callees above callers, siblings sorted by name as in
// flamegraph.pl; a frame's tooltip gives its samples and share. A frame's colour tells where its
// code lives (Node's own, ours, a dependency's, V8's) and, within that, which module, so that two
// graphs side by side colour the same work alike. Written here because no npm package draws an SVG
// from folded stacks without a browser or a profiler toolchain of its own.

interface Frame {
  name: string;
  samples: number;
  children: Map<string, Frame>;
}

export interface SvgOptions {
  title: string;
  width?: number;
}

const ROW = 16;
const FONT = 11;
/** CHAR_PX: a character's width at FONT px, to cut labels to their box. */
const CHAR_PX = 6.2;
const MIN_PX = 0.5;

/** parseFolded reads folded lines ("a;b;c 12") into a tree of frames. */
export function parseFolded(lines: readonly string[]): Frame {
  const root: Frame = { name: 'all', samples: 0, children: new Map() };
  for (const line of lines) {
    const m = /^(.*) (\d+)$/.exec(line.trim());
    if (!m) continue;
    const n = Number(m[2]);
    root.samples += n;
    let at = root;
    for (const name of m[1]!.split(';')) {
      let next = at.children.get(name);
      if (next === undefined) at.children.set(name, (next = { name, samples: 0, children: new Map() }));
      next.samples += n;
      at = next;
    }
  }
  return root;
}

export function flameSvg(lines: readonly string[], o: SvgOptions): string {
  const root = parseFolded(lines);
  const width = o.width ?? 1200;
  const pad = 10;
  const inner = width - 2 * pad;
  const depth = depthOf(root);
  const height = (depth + 1) * ROW + 3 * ROW;
  const scale = root.samples === 0 ? 0 : inner / root.samples;
  const rects: string[] = [];
  const draw = (f: Frame, x: number, level: number): void => {
    const w = f.samples * scale;
    if (w < MIN_PX) return;
    const y = height - 2 * ROW - level * ROW;
    const share = ((100 * f.samples) / root.samples).toFixed(2);
    const chars = Math.floor((w - 4) / CHAR_PX);
    const label = chars < 3 ? '' : f.name.length <= chars ? f.name : `${f.name.slice(0, chars - 2)}..`;
    rects.push(
      `<g><title>${escape(f.name)} (${f.samples.toLocaleString('en-US')} samples, ${share} %)</title>` +
        `<rect x="${(pad + x).toFixed(2)}" y="${y}" width="${w.toFixed(2)}" height="${ROW - 1}" fill="${colour(f.name)}" rx="1"/>` +
        (label === '' ? '' : `<text x="${(pad + x + 2).toFixed(2)}" y="${y + ROW - 4}">${escape(label)}</text>`) +
        '</g>',
    );
    let cx = x;
    for (const c of [...f.children.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      draw(c, cx, level + 1);
      cx += c.samples * scale;
    }
  };
  draw(root, 0, 0);
  return [
    `<?xml version="1.0" standalone="no"?>`,
    `<svg version="1.1" width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg" font-family="Verdana, sans-serif" font-size="${FONT}">`,
    `<rect width="100%" height="100%" fill="#f8f8f4"/>`,
    `<text x="${width / 2}" y="${ROW + 2}" text-anchor="middle" font-size="${FONT + 3}">${escape(o.title)}</text>`,
    ...rects,
    '</svg>',
    '',
  ].join('\n');
}

function depthOf(f: Frame): number {
  let d = 0;
  for (const c of f.children.values()) d = Math.max(d, 1 + depthOf(c));
  return d;
}

/**
 * colour: the hue says where a frame's code lives (labels are "NAME PLACE:LINE", cpuprofile.ts's
 * frameLabel): Node's own orange, ours green, a dependency's blue, V8's (the collector, native
 * code) red; the module's hash shades it, the same in every graph.
 */
export function colour(label: string): string {
  const place = /\s(\S+):\d+$/.exec(label)?.[1] ?? '';
  const module = place.replace(/\/[^/]*$/, '');
  const hue = place.startsWith('node:') ? 30 : /^(src|dist|bench)\//.test(place) ? 110 : place !== '' ? 210 : 0;
  let h = 2166136261;
  for (let i = 0; i < module.length; i++) h = Math.imul(h ^ module.charCodeAt(i), 16777619);
  return `hsl(${hue + ((h >>> 0) % 24) - 12}, ${place === '' ? 60 : 70}%, ${55 + ((h >>> 8) % 20)}%)`;
}

function escape(s: string): string {
  return s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
}
