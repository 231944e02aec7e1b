#!/usr/bin/env bash
# Proves that the README's commands work on a new machine: makes a minimal Debian 12 root
# with debootstrap, clones this repository's committed HEAD into it, and runs the README's
# demo command there (set-up with apt-get, build, demo) under chroot, printing how long each
# step took. With --tests it then runs the README's test command too.
#
# The root shares only three things with this machine: the CUDA toolkit (bind-mounted
# read-only, as every machine of this kind has it), the ccache directory (so a rebuild
# of unchanged code is quick), and the machine's own trust for HTTPS (its extra CA
# certificates in /usr/local/share/ca-certificates, which the root's ca-certificates
# package takes in when set-up installs it, and PIP_CERT if set: PyPI is reached through
# them here). Everything else the build needs must be installed by
# scripts/setup.sh, or the check fails.
#
#   scripts/fresh_machine_check.sh [--tests] [--keep] [--root DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
root=/var/tmp/graphjit-fresh-root
run_tests=0
keep=0
while (($#)); do
  case "$1" in
    --tests) run_tests=1 ;;
    --keep) keep=1 ;;                 # leave the root in place afterwards
    --root) root=$2; shift ;;
    *) echo "usage: $0 [--tests] [--keep] [--root DIR]" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || { echo "fresh_machine_check: needs root (debootstrap, mount, chroot)" >&2; exit 2; }
cuda=$(readlink -f "$(dirname "$(readlink -f "$(command -v nvcc)")")/..")
ccache_dir=$(ccache -k cache_dir 2>/dev/null || echo "$HOME/.cache/ccache")

step_start=$(date +%s)
step() {  # prints the time the previous step took, then the next step's name
  local now; now=$(date +%s)
  [ -n "${step_name:-}" ] && echo "fresh_machine_check: ${step_name} took $((now - step_start)) s"
  step_name=$1
  step_start=$now
  echo "fresh_machine_check: == $1"
}

mounts=()
cleanup() {
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
  ((keep)) || rm -rf --one-file-system "$root"
}
trap cleanup EXIT
bind() {  # source target [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"
  mounts+=("$2")
  [ "${3:-}" = ro ] && mount -o remount,bind,ro "$2"
  return 0
}

step "debootstrap (Debian 12, minbase)"
if ! command -v debootstrap > /dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
fi
rm -rf --one-file-system "$root"
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian > "$root.debootstrap.log" 2>&1 ||
  { tail -20 "$root.debootstrap.log"; exit 1; }
rm -f "$root.debootstrap.log"
cat > "$root/etc/apt/sources.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
mkdir -p "$root/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true

step "clean clone of HEAD ($(git -C "$repo" rev-parse --short HEAD)) and mounts"
# The same path as here, so that ccache's entries (keyed by absolute paths) are found.
mkdir -p "$(dirname "$root$repo")"
git clone --quiet --no-local "$repo" "$root$repo"
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
bind /dev "$root/dev"
bind /dev/pts "$root/dev/pts"
bind "$cuda" "$root$cuda" ro
[ -e "$root/usr/local/cuda" ] || ln -s "$cuda" "$root/usr/local/cuda"
mkdir -p "$ccache_dir"
bind "$ccache_dir" "$root/root/.cache/ccache"

in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 CCACHE_DIR=/root/.cache/ccache ${PIP_CERT:+PIP_CERT=$PIP_CERT} \
    PATH=/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd '$repo' && $1"
}

step "scripts/demo.sh (set-up, build, demo)"
in_root scripts/demo.sh
if ((run_tests)); then
  step "scripts/test.sh"
  in_root scripts/test.sh
fi
step "done"
echo "fresh_machine_check: passed"
