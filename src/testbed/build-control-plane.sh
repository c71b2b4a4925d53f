#!/usr/bin/env bash
# build-control-plane.sh DEST: builds kube-apiserver and kube-controller-manager 1.20.2 from
# Debian's `kubernetes` source package with Debian's Go, and links Debian's etcd beside them.
#
# Why from source: these machines reach only Debian's and npm's registries, so setup-envtest
# cannot download binaries. Debian ships the full Kubernetes 1.20.2 tree (with vendor/) as a
# source package. The quirks handled below are recorded in the README ("The local control plane").
set -euo pipefail

dest=${1:?usage: build-control-plane.sh DEST}
version=v1.20.2
log() { printf '[build-control-plane] %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ] && ! command -v go >/dev/null; then
  log "needs root to apt-get install golang-go etcd-server rsync golang-github-modern-go-reflect2-dev"
  exit 1
fi

need_pkgs=()
command -v go >/dev/null || need_pkgs+=(golang-go)
[ -x /usr/bin/etcd ] || need_pkgs+=(etcd-server)
command -v rsync >/dev/null || need_pkgs+=(rsync)
[ -d /usr/share/gocode/src/github.com/modern-go/reflect2 ] || need_pkgs+=(golang-github-modern-go-reflect2-dev)
command -v openssl >/dev/null || need_pkgs+=(openssl)
command -v make >/dev/null || need_pkgs+=(make)

# deb-src for the same mirror and suite as the machine's own bookworm entry (apt-mirror.sh).
if ! grep -rqs '^Types: *deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
  . "$(dirname "$0")/apt-mirror.sh"
  mirror=$(debian_mirror /etc/apt bookworm)
  log "adding a deb-src entry for bookworm main from $mirror"
  cat > /etc/apt/sources.list.d/finalizer-sweeper-src.sources <<SRC
Types: deb-src
URIs: $mirror
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  updated=0
fi

if [ ${#need_pkgs[@]} -gt 0 ] || [ "${updated:-1}" = 0 ]; then
  apt-get update -qq
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# A cache carried to a machine without etcd-server needs only the package and the link.
if [ -x "$dest/kube-apiserver" ] && [ -x "$dest/kube-controller-manager" ]; then
  ln -sfn /usr/bin/etcd "$dest/etcd"
  log "kube binaries already in $dest; etcd linked"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kube-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
log "fetching Debian's kubernetes source package into $work"
apt-get source --download-only kubernetes >/dev/null 2>&1 || apt-get source --download-only kubernetes
orig=$(ls kubernetes_*.orig.tar.gz | head -n 1)
mkdir tree && tar -xzf "$orig" -C tree --strip-components=1

# Go 1.19 cannot build this tree in module mode; upstream 1.20 built in GOPATH mode.
mkdir -p gopath/src/k8s.io
ln -s "$work/tree" gopath/src/k8s.io/kubernetes
export GOPATH=$work/gopath GO111MODULE=off CGO_ENABLED=0 GOFLAGS=
export GOCACHE=${GOCACHE:-${dest%/*}/go-cache}

# reflect2 v1.0.1 crashes kube-apiserver under Go >= 1.18 on the first custom-resource write.
r2=$work/tree/vendor/github.com/modern-go/reflect2
rm -f "$r2"/*.go "$r2"/*.s
cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go /usr/share/gocode/src/github.com/modern-go/reflect2/*.s "$r2"/

cd "$GOPATH/src/k8s.io/kubernetes"
log "generating OpenAPI definitions (not in the tarball)"
make gen_openapi >/dev/null

pkg=k8s.io/kubernetes/vendor/k8s.io
ldflags="-s -w"
for p in component-base/version client-go/pkg/version; do
  ldflags+=" -X $pkg/$p.gitVersion=$version -X $pkg/$p.gitMajor=1 -X $pkg/$p.gitMinor=20"
done
mkdir -p "$work/out"
for cmd in kube-apiserver kube-controller-manager; do
  log "building $cmd (a few minutes on 2 cores with an empty Go cache)"
  go build -ldflags "$ldflags" -o "$work/out/$cmd" "./cmd/$cmd"
done
ln -s /usr/bin/etcd "$work/out/etcd"

# Publish atomically so a concurrent or interrupted run never sees half a folder.
mkdir -p "${dest%/*}"
rm -rf "$dest.tmp" "$dest" && mv "$work/out" "$dest.tmp" && mv -T "$dest.tmp" "$dest"
log "installed into $dest"
