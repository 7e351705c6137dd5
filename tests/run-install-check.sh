#!/usr/bin/env bash
# Installs the build into a temporary root (`meson install --destdir`) and checks what a user gets there:
# the four plugins in GStreamer's plugin folder, and an application (tests/install/consumer.cpp) built only
# from the installed headers, libraries and pkg-config files, which runs the installed plugins and reads
# their metas through the public API.
#   tests/run-install-check.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
meson install -C "$build" --no-rebuild --destdir "$root" > "$root/install.log" || { cat "$root/install.log"; exit 1; }

# GStreamer's own plugin folder, under the temporary root.
plugins=$root$(pkg-config --variable=pluginsdir gstreamer-1.0)
for p in transfer sar hsi sift; do
  [ -f "$plugins/libgstcudasensing$p.so" ] || { echo "FAIL: libgstcudasensing$p.so is not in $plugins"; exit 1; }
done
echo "ok   the plugins are in GStreamer's plugin folder"

# The installed pkg-config files, their prefix moved to the temporary root.
mkdir "$root/pc"
for pc in "$root"/usr/lib*/*/pkgconfig/gstreamer-cuda-sensing*.pc "$root"/usr/lib*/pkgconfig/gstreamer-cuda-sensing*.pc
do
  [ -f "$pc" ] && sed "s|^prefix=|prefix=$root|" "$pc" > "$root/pc/$(basename "$pc")"
done
packages="gstreamer-cuda-sensing-1.0 gstreamer-cuda-sensing-sar-1.0 gstreamer-cuda-sensing-hsi-1.0
          gstreamer-cuda-sensing-sift-1.0 gstreamer-app-1.0 opencv4"
flags=$(PKG_CONFIG_PATH=$root/pc pkg-config --cflags --libs $packages)
g++ -std=c++17 -Wall -o "$root/consumer" "$here/install/consumer.cpp" $flags
echo "ok   an application builds from the installed headers and pkg-config files"

libdir=$(PKG_CONFIG_PATH=$root/pc pkg-config --variable=libdir gstreamer-cuda-sensing-1.0)
mkdir "$root/work"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} GST_PLUGIN_PATH=$plugins \
  GST_REGISTRY=$root/registry.bin "$root/consumer" "$root/work"
