#!/usr/bin/env bash
# Unpack the real photos of two Debian packages (mate-backgrounds, opencv-doc's examples/data) into
# DEST without installing them (opencv-doc is 274 MB installed; we keep ~30 MB of photos).
# Photos are an extra: without apt-get this warns and exits 0, and turboinfer uses the PyPI photos.
set -euo pipefail
DEST=${1:?usage: debian_photos.sh DEST}
if [ -f "$DEST/.done" ]; then exit 0; fi
if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
  echo "warning: apt-get/dpkg-deb not found; skipping Debian photos (PyPI photos still work)" >&2
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get download mate-backgrounds opencv-doc >/dev/null 2>&1; then
  apt-get update -qq >/dev/null 2>&1 || true
  apt-get download mate-backgrounds opencv-doc >/dev/null 2>&1 || {
    echo "warning: could not download mate-backgrounds/opencv-doc; skipping Debian photos" >&2
    exit 0
  }
fi
mkdir -p "$DEST"
dpkg-deb --fsys-tarfile mate-backgrounds_*.deb | tar -x -C "$DEST" --wildcards './usr/share/backgrounds/mate/nature/*.jpg' './usr/share/doc/mate-backgrounds/copyright'
dpkg-deb --fsys-tarfile opencv-doc_*.deb | tar -x -C "$DEST" --wildcards './usr/share/doc/opencv-doc/examples/data/*.jpg' './usr/share/doc/opencv-doc/copyright'
touch "$DEST/.done"
echo "Debian photos unpacked into $DEST"
