#!/usr/bin/env bash
# Build Fathom.app with PyInstaller and wrap it in a .dmg (macOS only).
#
#   packaging/macos/build_dmg.sh
#
# Produces dist/Fathom-<version>.dmg (the app plus an Applications link to drag it
# onto), then mounts the image and runs the app's self-test from it.
# SKIP_BUILD=1 reuses an existing dist/Fathom.app.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' app/__init__.py)"
dmg="dist/Fathom-$version.dmg"

if [[ "${SKIP_BUILD:-0}" != "1" ]]; then
    .venv/bin/pyinstaller build.spec --noconfirm
fi
[[ -d dist/Fathom.app ]] || { echo "dist/Fathom.app is missing" >&2; exit 2; }

stage="$(mktemp -d)"
mount="$(mktemp -d)"
cleanup() { hdiutil detach "$mount" -quiet 2>/dev/null || true; rm -rf "$stage"; }
trap cleanup EXIT

cp -R dist/Fathom.app "$stage/"
ln -s /Applications "$stage/Applications"
rm -f "$dmg"
hdiutil create -volname "Fathom $version" -srcfolder "$stage" -fs HFS+ -format UDZO -ov "$dmg"

# Smoke test: the app as a user gets it, straight from the mounted image.
hdiutil attach "$dmg" -nobrowse -readonly -mountpoint "$mount" -quiet
"$mount/Fathom.app/Contents/MacOS/fathom" --self-test
echo "$dmg"
