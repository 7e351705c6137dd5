#!/usr/bin/env bash
# Runs the pipelines/ scripts that need neither a camera nor a GPU decoder,
# each into its own folder, and fails when one of them fails: the scripts
# are what users run first, and a change to an element can break them
# without breaking any unit test.
#   tests/run-pipelines.sh BUILD_DIR
# Scripts that read the shared real data are skipped (with a line saying
# so) where it is absent.
set -uo pipefail
build=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
data=${CS_SHARED_DATA:-$root/../shared/data}
out=$(mktemp -d /tmp/cs-pipelines-XXXXXX)
trap 'rm -rf "$out"' EXIT
status=0
for script in demo sar-pulse-compression sar-image-formation sar-video sift-video sift-match hsi-classify hsi-jasper \
              python-appsink; do
  case $script in
    hsi-*) if [ ! -d "$data/hsi" ]; then echo "skipped $script: no $data/hsi"; continue; fi ;;
  esac
  if [ -f "$root/pipelines/$script.py" ]; then
    run=("${CS_PYTHON:-/usr/bin/python3}" "$root/pipelines/$script.py")
  else
    run=(bash "$root/pipelines/$script.sh")
  fi
  if timeout 300 "${run[@]}" "$build" "$out/$script" > "$out/$script.log" 2>&1; then
    echo "ok      $script"
  else
    echo "FAILED  $script (exit $?):"; tail -15 "$out/$script.log" | sed 's/^/        /'
    status=1
  fi
done
exit $status
