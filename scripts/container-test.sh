#!/bin/sh
# Build the action's image without Docker and run its entrypoint against the loopback GitHub test server.
# Needs root and Debian's buildah, podman and debootstrap (see ../shared/reference/container-build.md).
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
IMAGE=localhost/diagbot:test
BASE=docker.io/library/debian:bookworm-slim
mkdir -p build

for tool in buildah podman debootstrap; do
  command -v "$tool" >/dev/null || { apt-get update -qq && apt-get install -y -qq buildah podman debootstrap >/dev/null; break; }
done

# 1. The base image, from Debian's packages, tagged with the name the Dockerfile uses (no registry needed).
if ! podman image exists "$BASE"; then
  mirror=$(grep -h -E '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
    | grep -v security | head -n1 | sed -E 's/^URIs: *//; s/^deb +(\[[^]]*\] +)?//; s/ .*//')
  rm -rf build/rootfs
  debootstrap --variant=minbase bookworm build/rootfs "${mirror:-http://deb.debian.org/debian}" >build/debootstrap.log
  tar -C build/rootfs -c . | podman import -q - "$BASE" >/dev/null
  rm -rf build/rootfs
fi

# 2. Build. The host's CA bundle and a pip.conf pointing at it are mounted for this build only (TLS proxy).
printf '[global]\ncert = /run/host-ca.crt\n' >build/pip.conf
start=$(date +%s)
buildah bud -q --isolation chroot --pull=never --layers=false \
  -v /etc/ssl/certs/ca-certificates.crt:/run/host-ca.crt:ro -v "$PWD/build/pip.conf:/etc/pip.conf:ro" \
  -t "$IMAGE" . >/dev/null
built=$(( $(date +%s) - start ))
size() { podman image inspect --format '{{.Size}}' "$1"; }
added=$(( ($(size "$IMAGE") - $(size "$BASE")) / 1000000 ))
echo "container-test: built $IMAGE in ${built}s; it adds ${added} MB on top of $BASE"

# 3. Run the image's entrypoint the way the runner does, for a push and then a pull_request event.
"$PY" scripts/container_e2e.py "$IMAGE"
