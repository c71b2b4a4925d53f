// Where a process's resident memory lies, from /proc/PID/smaps: what V8 reports of its heap does
// not say what the rest of the RSS is. glibc gives each thread that allocates its own arena, a
// region of its own aligned to and at most HEAP_MAX_SIZE (64 MiB on 64-bit), mapped read-write
// where in use and PROT_NONE for the rest; the main thread's arena is the brk heap. Anything else
// anonymous is V8's heap pages and code, and blocks that malloc mapped on their own (at least
// MALLOC_MMAP_THRESHOLD_, 64 KiB as deployed).
import { readFileSync } from 'node:fs';

/** ARENA_BYTES is glibc's HEAP_MAX_SIZE on 64-bit: a thread arena's reserved size and alignment. */
const ARENA_BYTES = 64 * 1024 * 1024;

/** ResidentByKind is a process's RSS (bytes) by the kind of mapping it lies in. */
export interface ResidentByKind {
  /** files: mapped files (the node binary, shared libraries). */
  files: number;
  /** brkHeap: glibc's main arena (smaps' [heap]). */
  brkHeap: number;
  /** threadArenas: glibc's arenas of other threads. */
  threadArenas: number;
  /** arenaCount: how many thread arenas exist. */
  arenaCount: number;
  /** otherAnonymous: V8's heap and code, malloc's blocks mapped on their own, stacks. */
  otherAnonymous: number;
}

interface Mapping {
  start: number;
  end: number;
  perms: string;
  path: string;
  rss: number;
}

/** residentByKind reads /proc/PID/smaps; null once the process is gone. */
export function residentByKind(pid: number): ResidentByKind | null {
  try {
    return classify(parseSmaps(readFileSync(`/proc/${pid}/smaps`, 'utf8')));
  } catch {
    return null;
  }
}

/** parseSmaps reads each mapping's range, permissions, path and Rss (bytes) from smaps text. */
export function parseSmaps(text: string): Mapping[] {
  const out: Mapping[] = [];
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      out.push({ start: parseInt(head[1]!, 16), end: parseInt(head[2]!, 16), perms: head[3]!, path: head[4]!, rss: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB$/.exec(line);
    const last = out[out.length - 1];
    if (rss && last) last.rss = Number(rss[1]) * 1024;
  }
  return out;
}

/**
 * classify sums RSS by kind. A thread arena is an anonymous mapping that starts on a 64 MiB
 * boundary and, with the PROT_NONE mapping right after it (if any), spans exactly 64 MiB.
 */
export function classify(mappings: readonly Mapping[]): ResidentByKind {
  const r: ResidentByKind = { files: 0, brkHeap: 0, threadArenas: 0, arenaCount: 0, otherAnonymous: 0 };
  for (const [i, m] of mappings.entries()) {
    if (m.path === '[heap]') r.brkHeap += m.rss;
    else if (m.path !== '' && !m.path.startsWith('[')) r.files += m.rss;
    else if (m.path === '' && isArena(m, mappings[i + 1])) {
      r.threadArenas += m.rss;
      r.arenaCount++;
    } else r.otherAnonymous += m.rss;
  }
  return r;
}

function isArena(m: Mapping, next: Mapping | undefined): boolean {
  if (m.perms !== 'rw-p' || m.start % ARENA_BYTES !== 0) return false;
  const end = next !== undefined && next.path === '' && next.perms === '---p' && next.start === m.end ? next.end : m.end;
  return end - m.start === ARENA_BYTES;
}
