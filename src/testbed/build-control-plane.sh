#!/usr/bin/env bash
# build-control-plane.sh VERSION DEST: builds kube-apiserver, kube-controller-manager and etcd of
# Kubernetes VERSION (e.g. v1.37.2) from Go modules into DEST, with the machine's own `go` and its
# own module proxy settings.
#
# k8s.io/kubernetes is served as a module but requires its staging modules (k8s.io/api,
# k8s.io/apiserver, ...) at v0.0.0, which exist only inside its repository: a module of our own
# requires it and replaces each of them by its published v0.MINOR.PATCH. etcd is built from the
# etcd server module that this Kubernetes release depends on.
set -euo pipefail
version=${1:?usage: build-control-plane.sh VERSION DEST}
dest=${2:?usage: build-control-plane.sh VERSION DEST}
log() { printf '[build-control-plane %s] %s\n' "$version" "$*" >&2; }

# Go 1.21 or later fetches whatever newer toolchain a go.mod asks for through the module proxy.
# Without one (Debian bookworm's golang-go is 1.19), the toolchain module itself is fetched with
# the old go, as Go's own toolchain switch does, and unpacked beside the binaries.
bootstrap=1.26.8
go_ok() { command -v go >/dev/null && go env GOVERSION 2>/dev/null | grep -qE '^go1\.(2[1-9]|[3-9][0-9])'; }
if ! go_ok; then
  toolchain=${dest%/*}/go-toolchain-$bootstrap
  if [ ! -x "$toolchain/bin/go" ]; then
    if ! command -v go >/dev/null; then
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        log "no go on PATH: installing Debian's golang-go to fetch Go $bootstrap with"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
      else
        log "no go on PATH: building the control plane needs Go 1.21 or later (or any go, to fetch one) and the Go module proxy;"
        log "elsewhere, set KUBEBUILDER_ASSETS to a folder with kube-apiserver, etcd and kube-controller-manager"
        exit 1
      fi
    fi
    case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
    log "$(go version) is older than 1.21: fetching Go $bootstrap through the module proxy"
    dir=$(cd /tmp && GOFLAGS= go mod download -json "golang.org/toolchain@v0.0.1-go$bootstrap.linux-$arch" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -x "$dir/bin/go" ] || [ -f "$dir/bin/go" ] || { log "the toolchain module has no bin/go"; exit 1; }
    mkdir -p "${dest%/*}" && rm -rf "$toolchain.tmp" && cp -r "$dir" "$toolchain.tmp"
    chmod -R u+w "$toolchain.tmp" && chmod +x "$toolchain.tmp"/bin/* "$toolchain.tmp"/pkg/tool/*/*
    rm -rf "$toolchain" && mv -T "$toolchain.tmp" "$toolchain"
  fi
  export PATH=$toolchain/bin:$PATH GOROOT=$toolchain
fi
minor=${version#v1.}; minor=${minor%%.*}
patch=${version##*.}
staging=v0.$minor.$patch

work=$(mktemp -d "${TMPDIR:-/tmp}/kube-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/mod" && cd "$work/mod"
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOWORK=off
# The build's Go cache lives beside the binaries (several GB), outside any repository.
export GOCACHE=${GOCACHE:-${dest%/*}/go-cache}

log "go $(go env GOVERSION); resolving k8s.io/kubernetes@$version"
answer=$(go mod download -json "k8s.io/kubernetes@$version" 2>&1) || true
modfile=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p' <<<"$answer")
[ -n "$modfile" ] && [ -f "$modfile" ] || { log "go mod download k8s.io/kubernetes@$version failed:"; printf '%s\n' "$answer" >&2; exit 1; }
# served MODULE VERSION: the module's zip can be had (a mirror may serve only some versions).
served() { local out; out=$(go mod download -json "$1@$2" 2>/dev/null) || true; [[ $out == *'"Dir"'* ]]; }
# staging_version MODULE: v0.MINOR.PATCH where served; else the newest served patch below it of the
# same minor (the staging modules change little between patches), said in the log; else as asked.
staging_version() {
  if served "$1" "$staging"; then echo "$staging"; return; fi
  local v
  for v in $(go list -m -versions "$1" 2>/dev/null | tr ' ' '\n' | grep -E "^v0\.$minor\.[0-9]+$" | sort -t. -k3,3nr); do
    if [ "${v##*.}" -lt "$patch" ] && served "$1" "$v"; then
      log "$1 $staging is not served here: using $v"
      echo "$v"
      return
    fi
  done
  echo "$staging"
}
{
  echo "module finalizer-sweeper.local/control-plane"
  echo
  grep -m1 '^go ' "$modfile"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  echo "replace ("
  for m in $(grep -oE '^[[:space:]]*k8s\.io/[a-z0-9-]+ v0\.0\.0$' "$modfile" | awk '{print $1}'); do
    printf '\t%s => %s %s\n' "$m" "$m" "$(staging_version "$m")"
  done
  echo ")"
} > ../go.mod.new  # not go.mod yet: the look-ups above must not run inside a half-written module
mv ../go.mod.new go.mod
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
mkdir etcd
cat > etcd/main.go <<'GO'
// Command etcd: the etcd server of the release this Kubernetes version depends on.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
go mod tidy

ldflags="-s -w"
for p in component-base/version client-go/pkg/version; do
  ldflags+=" -X k8s.io/$p.gitVersion=$version -X k8s.io/$p.gitMajor=1 -X k8s.io/$p.gitMinor=$minor"
done
mkdir out
for cmd in kube-apiserver kube-controller-manager; do
  log "building $cmd (10 minutes or more on 2 cores with an empty Go cache)"
  go build -trimpath -ldflags "$ldflags" -o "out/$cmd" "k8s.io/kubernetes/cmd/$cmd"
done
log "building etcd"
go build -trimpath -ldflags "-s -w" -o out/etcd ./etcd

# Publish atomically so a concurrent or interrupted run never sees half a folder.
mkdir -p "${dest%/*}"
rm -rf "$dest.tmp" "$dest" && mv out "$dest.tmp" && mv -T "$dest.tmp" "$dest"
log "installed into $dest"
