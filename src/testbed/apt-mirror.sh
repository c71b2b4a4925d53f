# debian_mirror APT_DIR SUITE: prints the URI of the machine's own Debian archive for SUITE (main),
# as apt is set up in APT_DIR (/etc/apt): the one-line sources.list and sources.list.d/*.list,
# then the deb822 sources.list.d/*.sources. A machine may use a mirror or a proxy of its own; the
# test bed's builds use whatever it uses and never name a host themselves. Sourced by the build
# scripts; exits non-zero, saying why, when no such entry exists.
debian_mirror() {
  local dir=$1 suite=$2 f uri
  for f in "$dir/sources.list" "$dir"/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [options] URI SUITE COMPONENT...
    uri=$(sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk -v s="$suite" '$1 == "deb" && $3 == s { for (i = 4; i <= NF; i++) if ($i == "main") { print $2; exit } }')
    if [ -n "$uri" ]; then printf '%s\n' "${uri%/}"; return 0; fi
  done
  for f in "$dir"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # Stanzas separated by blank lines; fields Types, URIs, Suites, Components (first URI taken).
    uri=$(awk -v s="$suite" '
      function done_stanza() {
        if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " s " ") && (" " comps " ") ~ / main / && uris != "") { split(uris, u, " "); print u[1]; found = 1; exit }
        types = ""; uris = ""; suites = ""; comps = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { done_stanza(); next }
      { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "", $0)
        if (key == "types") types = $0; else if (key == "uris") uris = $0; else if (key == "suites") suites = $0; else if (key == "components") comps = $0 }
      END { if (!found) done_stanza() }
    ' "$f")
    if [ -n "$uri" ]; then printf '%s\n' "${uri%/}"; return 0; fi
  done
  printf 'no "deb ... %s main" entry in %s/sources.list or %s/sources.list.d: cannot tell which Debian mirror this machine uses\n' "$suite" "$dir" "$dir" >&2
  return 1
}
