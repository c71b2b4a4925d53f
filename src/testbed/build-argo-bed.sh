#!/usr/bin/env bash
# build-argo-bed.sh ARGO_VERSION KWOK_VERSION DEST: builds Argo's workflow-controller and kwok from
# their Go modules into DEST, with Argo's minimal CRDs from the same module in DEST/crds/. The
# machine's own `go` (1.21 or later, or the toolchain build-control-plane.sh fetched into the cache
# folder) and its own module proxy settings; no host is named here.
#
# Argo's cmd/workflow-controller/main.go hard-codes `http.ListenAndServe(":6060", nil)` (healthz
# and pprof, every interface, no flag), and every server on the test bed listens on loopback only.
# Argo's source is not copied into this repository: the build writes a throwaway module of its own
# that requires Argo's at that version, whose main package is Argo's main.go generated from the
# module cache's copy with only that address changed, to the value of ARGO_PPROF_ADDRESS (default
# 127.0.0.1:6060). (`go build -overlay` cannot do it: Go refuses to replace files beneath
# GOMODCACHE.) Argo's go.mod has no replace directives, so the module graph, and every
# dependency's version, is the one `go install .../cmd/workflow-controller@VERSION` builds. The
# build fails if the pattern is not there exactly once: an Argo version that moves it cannot slip
# through with its every-interface listener.
set -euo pipefail
argo=${1:?usage: build-argo-bed.sh ARGO_VERSION KWOK_VERSION DEST}
kwok=${2:?usage: build-argo-bed.sh ARGO_VERSION KWOK_VERSION DEST}
dest=${3:?usage: build-argo-bed.sh ARGO_VERSION KWOK_VERSION DEST}
log() { printf '[build-argo-bed %s %s] %s\n' "$argo" "$kwok" "$*" >&2; }

go_ok() { command -v go >/dev/null && go env GOVERSION 2>/dev/null | grep -qE '^go1\.(2[1-9]|[3-9][0-9])'; }
if ! go_ok; then
  for t in "${dest%/*}"/go-toolchain-*/bin/go; do
    [ -x "$t" ] && export PATH=${t%/go}:$PATH GOROOT=${t%/bin/go}
  done
  go_ok || { log "building Argo and kwok needs Go 1.21 or later on PATH (run src/testbed/ensure-binaries.ts first: it fetches one where the machine's go is older) and the Go module proxy"; exit 1; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/argo-bed-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
# GOFLAGS keeps the machine's own flags; -mod=mod lets `go install pkg@version` resolve freely.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod" CGO_ENABLED=0 GOWORK=off GOBIN=$work/out
# The build's Go cache is the control plane's (several GB, outside any repository): their
# dependencies overlap, and -trimpath as there keeps its keys shared.
export GOCACHE=${GOCACHE:-${dest%/*}/go-cache}
mkdir "$work/out"

# module_dir MODULE VERSION: where the module cache holds it (downloading it if need be).
module_dir() {
  local answer dir
  answer=$(cd "$work" && go mod download -json "$1@$2" 2>&1) || true
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"$answer")
  [ -n "$dir" ] && [ -d "$dir" ] || { log "go mod download $1@$2 failed:"; printf '%s\n' "$answer" >&2; return 1; }
  echo "$dir"
}

argo_module=github.com/argoproj/argo-workflows/v4
log "go $(go env GOVERSION); resolving $argo_module@$argo"
argo_dir=$(module_dir "$argo_module" "$argo")
main=$argo_dir/cmd/workflow-controller/main.go
pattern='http.ListenAndServe(":6060", nil)'
count=$(grep -cF "$pattern" "$main" || true)
[ "$count" = 1 ] || { log "$main has $count lines with $pattern, not 1: the loopback-only rewrite no longer fits this Argo version"; exit 1; }
grep -qE '^\s*"os"$' "$main" || { log "$main does not import os, which the rewritten address lookup needs"; exit 1; }
mkdir "$work/mod"
sed 's|http.ListenAndServe(":6060", nil)|http.ListenAndServe(func() string { if a := os.Getenv("ARGO_PPROF_ADDRESS"); a != "" { return a }; return "127.0.0.1:6060" }(), nil)|' "$main" > "$work/mod/main.go"
grep -qF 'os.Getenv("ARGO_PPROF_ADDRESS")' "$work/mod/main.go" || { log "the generated main.go lacks the loopback address"; exit 1; }
{
  echo "module finalizer-sweeper.local/workflow-controller"
  echo
  grep -m1 '^go ' "$argo_dir/go.mod"
  echo
  echo "require $argo_module $argo"
} > "$work/mod/go.mod"
(cd "$work/mod" && go mod tidy)

log "building workflow-controller (about 10 minutes on 2 cores with an empty Go cache)"
(cd "$work/mod" && go build -trimpath -ldflags "-s -w -X $argo_module.version=$argo" -o "$work/out/workflow-controller" .)
mkdir "$work/out/crds"
cp "$argo_dir"/manifests/base/crds/minimal/argoproj.io_*.yaml "$work/out/crds/"
chmod u+w "$work/out/crds"/*.yaml
crds=$(ls "$work/out/crds" | wc -l)
[ "$crds" -ge 8 ] || { log "only $crds CRDs in $argo_dir/manifests/base/crds/minimal"; exit 1; }

log "building kwok $kwok (about 3 minutes)"
(cd "$work" && go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok")

# Publish atomically so a concurrent or interrupted run never sees half a folder.
mkdir -p "${dest%/*}"
rm -rf "$dest.tmp" "$dest" && mv "$work/out" "$dest.tmp" && mv -T "$dest.tmp" "$dest"
log "installed into $dest: workflow-controller, kwok, $crds CRDs"
