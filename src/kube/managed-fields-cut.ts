// Where a watch line can be cut so that its managed fields are not parsed. The API server writes
// ObjectMeta's fields in the Go struct's order, managedFields last, and the watch event's object
// (PartialObjectMetadata: kind, apiVersion, metadata) last in the event, so a pod's line ends
//   ...,"finalizers":[...],"managedFields":[ ...about half the line... ]}}}
// and everything a decision reads (name, uid, resourceVersion, deletionTimestamp, labels,
// annotations, ownerReferences, finalizers) comes before the cut.
//
// Why a hostile object cannot forge the cut. Label and annotation keys and values, finalizers,
// names and managers are strings, and inside a JSON string a quote is always escaped (\" or
// \u0022): an unescaped `,"` can only be a comma outside any string followed by a string's
// opening quote. The caller proves that the first `,"managedFields":[` is outside any string by
// parsing everything before it closed with `}}}`: a string open at the cut would stay unclosed
// (none of `}}}` is a quote) and the parse would fail. That parse succeeding also proves that
// exactly three objects were open there. This function proves the rest: the array that starts
// there ends (brackets counted outside strings) exactly before the line's last `}}}`. So the line
// is the parsed part, then one key, managedFields, with its array, then the three objects'
// closing braces: nothing else is left out, and whatever else the line holds decides as it would
// in the whole. Anything else (another order, whitespace, a key spelt with escapes, a line cut
// short) is parsed whole. The one difference: malformed JSON inside the left-out array goes
// unnoticed, which changes nothing read.

const KEY = Buffer.from(',"managedFields":[');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_SQUARE = 0x5b;
const CLOSE_SQUARE = 0x5d;
const OPEN_CURLY = 0x7b;
const CLOSE_CURLY = 0x7d;

/**
 * managedFieldsCut returns where to cut line (the offset of the comma before "managedFields"), so
 * that the part before it closed with `}}}` is the line without its managed fields, or -1 when
 * that cannot be shown. The caller must still parse that part: only its parse proves that the
 * cut lies outside strings, three objects deep (see above).
 */
export function managedFieldsCut(line: Buffer): number {
  const at = line.indexOf(KEY);
  if (at === -1) return -1;
  let end = line.length;
  while (end > 0 && isSpace(line[end - 1]!)) end--;
  if (end < at + KEY.length + 4 || line[end - 1] !== CLOSE_CURLY || line[end - 2] !== CLOSE_CURLY || line[end - 3] !== CLOSE_CURLY) return -1;
  return closingBracket(line, at + KEY.length - 1, end - 3) === end - 4 ? at : -1;
}

/**
 * closingBracket returns the offset of the `]` that closes the `[` at open, counting brackets and
 * braces outside strings, or -1 if none does before limit. UTF-8 never puts an ASCII byte inside
 * a multi-byte character, so bytes can be read as JSON's punctuation.
 */
function closingBracket(line: Buffer, open: number, limit: number): number {
  let depth = 0;
  for (let i = open; i < limit; i++) {
    const c = line[i]!;
    if (c === QUOTE) {
      // A string: skip to its closing quote, an escape's next byte never ending it.
      for (i++; i < limit && line[i] !== QUOTE; i++) if (line[i] === BACKSLASH) i++;
    } else if (c === OPEN_SQUARE || c === OPEN_CURLY) depth++;
    else if (c === CLOSE_SQUARE || c === CLOSE_CURLY) {
      if (--depth === 0) return c === CLOSE_SQUARE ? i : -1;
    }
  }
  return -1;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
}
