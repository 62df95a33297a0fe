#!/usr/bin/env bash
# Turn the PyInstaller folder (dist/fathom/) into a Debian package:
#   /opt/fathom/                  the program and everything it needs
#   /usr/bin/fathom               the command (a symlink into /opt/fathom)
#   /usr/share/applications/      the menu entry
#   /usr/share/icons/hicolor/     the icon (256x256 PNG and scalable SVG)
#
#   packaging/linux/build_deb.sh [DIST_DIR] [OUT_DIR]
#
# DIST_DIR defaults to dist/fathom, OUT_DIR to dist; prints the .deb's path.
# Needs dpkg-deb (Debian/Ubuntu). DEB_COMPRESSION=zstd|xz|gzip|none (default zstd: seconds, not minutes;
# use xz for dpkg older than 1.21.18, e.g. Debian 11).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dist="$(cd "${1:-$root/dist/fathom}" && pwd)"
out="$(mkdir -p "${2:-$root/dist}" && cd "${2:-$root/dist}" && pwd)"
compression="${DEB_COMPRESSION:-zstd}"

if [[ ! -x "$dist/fathom" ]]; then
    echo "No PyInstaller build at $dist: run '.venv/bin/pyinstaller build.spec --noconfirm' first." >&2
    exit 2
fi

version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$root/app/__init__.py")"
arch="$(dpkg --print-architecture)"
package="fathom_${version}_${arch}.deb"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
umask 022

mkdir -p "$stage/opt" "$stage/usr/bin" "$stage/usr/share/applications" \
    "$stage/usr/share/icons/hicolor/256x256/apps" "$stage/usr/share/icons/hicolor/scalable/apps" \
    "$stage/usr/share/doc/fathom" "$stage/DEBIAN"
cp -a "$dist" "$stage/opt/fathom"
chmod -R u=rwX,go=rX "$stage/opt/fathom"
ln -s /opt/fathom/fathom "$stage/usr/bin/fathom"
install -m 0644 "$here/fathom.desktop" "$stage/usr/share/applications/fathom.desktop"
# The window's own icon (resources/icons) is the menu's icon too.
install -m 0644 "$root/resources/icons/fathom-256.png" "$stage/usr/share/icons/hicolor/256x256/apps/fathom.png"
install -m 0644 "$root/resources/icons/fathom.svg" "$stage/usr/share/icons/hicolor/scalable/apps/fathom.svg"
cat > "$stage/usr/share/doc/fathom/copyright" <<COPYRIGHT
Fathom $version: deep research over your own documents, offline.
License: Apache-2.0. The bundled third-party components keep their own licences
(see the *.dist-info folders under /opt/fathom/_internal).
COPYRIGHT

# The newest glibc symbol version any bundled binary asks for is the floor for libc6.
glibc="$(find "$stage/opt/fathom" -type f \( -name '*.so*' -o -perm -u+x \) -print0 \
    | xargs -0 objdump -T 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1 || true)"
glibc="${glibc:-2.28}"

installed_kb="$(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
# The system libraries Qt's window needs (PyInstaller leaves out glibc, the system's
# OpenGL/EGL stack and libxcb, and carries the rest only when the build machine had
# them): Qt links OpenGL/EGL, its X11 plugin the xcb/xkb/X11 ones, Gui fontconfig,
# freetype and glib, DBus libdbus, the Wayland plugin libwayland-client. The X11 list
# is app/ui/qt_libraries.py's X11_PACKAGES, also in README; tests/packaging checks all three.
qt_x11="libegl1, libgl1, libfontconfig1, libfreetype6, libglib2.0-0, libdbus-1-3, libx11-6, libx11-xcb1, \
libxcb1, libxcb-cursor0, libxcb-icccm4, libxcb-image0, libxcb-keysyms1, libxcb-randr0, libxcb-render0, \
libxcb-render-util0, libxcb-shape0, libxcb-shm0, libxcb-sync1, libxcb-util1, libxcb-xfixes0, libxcb-xkb1, \
libxkbcommon0, libxkbcommon-x11-0"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: fathom
Version: $version
Architecture: $arch
Maintainer: Fathom developers <fathom@localhost>
Installed-Size: $installed_kb
Depends: libc6 (>= $glibc), libdrm2, $qt_x11, libwayland-client0
Recommends: libwayland-cursor0, libwayland-egl1
Section: utils
Priority: optional
Homepage: https://localhost/fathom
Description: deep research over your own documents, offline
 Fathom converts your documents (PDF, Word, PowerPoint, Excel, HTML,
 Markdown) into a local search index and answers hard questions with an
 iterative research loop run by a local model, citing the passages it used.
 Nothing leaves the machine unless a remote model endpoint is configured.
CONTROL

dpkg-deb -Z"$compression" --root-owner-group --build "$stage" "$out/$package" >/dev/null
echo "$out/$package"
