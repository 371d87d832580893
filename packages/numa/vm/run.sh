#!/usr/bin/env bash
# pnpm test:numa:vm: boots a Debian VM with two NUMA nodes under QEMU and runs the multi-node suite
# (src/numa.multi-node.test.ts) inside it, against a real kernel's mbind, move_pages and sysfs.
#
#   host                                   guest (Debian bookworm, its own kernel, no network)
#   ─────────────────────────────────────  ──────────────────────────────────────────────────
#   debootstrap → rootfs.img, vmlinuz,     node 0: CPU 0, 1 GiB    node 1: CPU 1, 1 GiB
#   initrd (cached, built once)            pxb host bridge on node 1 ─► pci-testdev
#   qemu-system-x86_64 ── 9p, read-only ─► /repo      (this checkout, built)
#                       ── 9p, read-only ─► /opt/node  (the host's Node.js binary)
#                       ── 9p ────────────► /results   (exit-code written by the guest)
#                       ◄── serial console  guest.sh: numactl --hardware; vitest run multi-node
#
# Everything comes from Debian packages: qemu-system-x86, debootstrap, and in the image
# linux-image-amd64 (booted with its own vmlinuz and initrd), libnuma1, numactl. The image is built
# once per recipe and cached; later runs only boot it (its disk is a throw-away snapshot).
#
# Environment:
#   ALLOT_NUMA_VM_CACHE    cache folder        (default ${XDG_CACHE_HOME:-~/.cache}/allot-numa-vm)
#   ALLOT_NUMA_VM_ACCEL    tcg | kvm           (default tcg: software emulation, works anywhere; kvm
#                          is faster where /dev/kvm works, but nested KVM can hang or abort)
#   ALLOT_NUMA_VM_TIMEOUT  seconds the VM may run before it is killed (default 900)
#   ALLOT_NUMA_VM_MIRROR   Debian mirror for debootstrap (default http://deb.debian.org/debian)
#   ALLOT_NUMA_VM_REBUILD  1: build the image again even when cached
#   ALLOT_NUMA_VM_IMAGE_ONLY  1: install the tools and build the image when it is not cached, then
#                          stop without booting (CI builds it this way while the tests run)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
suite=bookworm
mirror=${ALLOT_NUMA_VM_MIRROR:-http://deb.debian.org/debian}
cache=${ALLOT_NUMA_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/allot-numa-vm}
timeout_s=${ALLOT_NUMA_VM_TIMEOUT:-900}
accel=${ALLOT_NUMA_VM_ACCEL:-tcg}
# Packages of the image; the kernel and initrd come from linux-image-amd64.
packages=linux-image-amd64,libnuma1,numactl,kmod,procps,libstdc++6
# Memory per node: enough for the 256 MiB bandwidth buffers and the pressure test, small enough that
# filling a node under TCG takes seconds.
node_memory=1G
# The emulated device behind the expander bridge on node 1 (QEMU's pci-testdev), as vendor:device.
pci_device=1b36:0005
pci_node=1

log() { printf '[numa-vm] %s\n' "$*" >&2; }
die() {
  log "error: $*"
  exit 1
}
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
seconds() { date +%s; }
started=$(seconds)

[ "$(uname -s)" = Linux ] || die 'needs Linux (QEMU with 9p shares)'
[ "$(uname -m)" = x86_64 ] || die "needs an x86-64 host; this is $(uname -m)"

# --- tools ------------------------------------------------------------------------------------
missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
command -v mkfs.ext4 >/dev/null || [ -x /usr/sbin/mkfs.ext4 ] || missing+=(e2fsprogs)
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null || die "missing ${missing[*]}, and no apt-get to install them"
  log "installing ${missing[*]} (apt-get)"
  as_root apt-get update -q >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
export PATH=$PATH:/usr/sbin:/sbin

node_path=$(readlink -f "$(command -v node)") || die 'no node on PATH'
node_dir=$(dirname "$node_path")
node_name=$(basename "$node_path")
if ldd "$node_path" 2>/dev/null | grep -q 'not found'; then
  die "$node_path needs libraries the host lacks; the guest would lack them too"
fi

# --- image ------------------------------------------------------------------------------------
# The recipe's hash names the image: a new package list or init script builds a new one.
recipe=$(printf '%s\n' "$suite" "$packages" "$(cat "$here/guest-init.sh")" "$(sed -n '/^build_image()/,/^}/p' "$here/run.sh")" |
  sha256sum | cut -c1-12)
image=$cache/$suite-$recipe

build_image() {
  local work=$cache/.build-$$
  as_root rm -rf "$work"
  mkdir -p "$work"
  log "building the image in $image (debootstrap $suite from $mirror; a few minutes, once)"
  as_root debootstrap --variant=minbase --include="$packages" "$suite" "$work/rootfs" "$mirror" \
    >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2
    die "debootstrap failed; the log is $work/debootstrap.log"
  }
  as_root install -m 0755 "$here/guest-init.sh" "$work/rootfs/sbin/allot-vm-init"
  as_root rm -rf "$work/rootfs/var/cache/apt/archives" "$work/rootfs/var/lib/apt/lists"
  as_root sh -c "echo allot-numa-vm >'$work/rootfs/etc/hostname'"
  as_root cp "$work"/rootfs/boot/vmlinuz-* "$work/vmlinuz"
  as_root cp "$work"/rootfs/boot/initrd.img-* "$work/initrd.img"
  local size_mib
  size_mib=$(($(as_root du -sm "$work/rootfs" | cut -f1) + 256))
  as_root mkfs.ext4 -q -L allot-root -d "$work/rootfs" "$work/rootfs.img" "${size_mib}M"
  as_root rm -rf "$work/rootfs"
  as_root chown -R "$(id -u):$(id -g)" "$work"
  rm -rf "$image"
  mv "$work" "$image"
  local old # images of earlier recipes
  for old in "$cache/$suite"-*; do [ "$old" = "$image" ] || rm -rf "$old"; done
}

if [ "${ALLOT_NUMA_VM_REBUILD:-0}" = 1 ] || [ ! -f "$image/rootfs.img" ]; then
  build_image
  log "image built in $(($(seconds) - started)) s"
else
  log "using the cached image $image"
fi
if [ "${ALLOT_NUMA_VM_IMAGE_ONLY:-0}" = 1 ]; then
  log "the image is ready; not booting it (ALLOT_NUMA_VM_IMAGE_ONLY=1)"
  exit 0
fi

# --- boot -------------------------------------------------------------------------------------
case $accel in
kvm) cpu=host ;;
tcg) cpu=max ;;
*) die "ALLOT_NUMA_VM_ACCEL is '$accel'; use tcg or kvm" ;;
esac

results=$(mktemp -d "${TMPDIR:-/tmp}/allot-numa-vm.XXXXXX")
console=$results/console.log
trap 'rm -rf "$results"' EXIT
log "booting: 2 NUMA nodes x $node_memory, accel $accel, timeout ${timeout_s} s; console below"

set +e
timeout -k 10 "$timeout_s" qemu-system-x86_64 \
  -machine pc -accel "$accel" -cpu "$cpu" \
  -smp 2,sockets=2,cores=1,threads=1 -m 2G \
  -object memory-backend-ram,id=mem0,size=$node_memory \
  -object memory-backend-ram,id=mem1,size=$node_memory \
  -numa node,nodeid=0,cpus=0,memdev=mem0 \
  -numa node,nodeid=1,cpus=1,memdev=mem1 \
  -numa dist,src=0,dst=1,val=21 \
  -device pxb,id=bridge1,bus_nr=16,numa_node=$pci_node,bus=pci.0 \
  -device pci-testdev,bus=bridge1,addr=0x1 \
  -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
  -append "root=/dev/vda rw console=ttyS0 quiet mitigations=off panic=-1 init=/sbin/allot-vm-init ALLOT_NUMA_VM_PCI=$pci_device@$pci_node ALLOT_NUMA_VM_NODE_NAME=$node_name" \
  -drive "file=$image/rootfs.img,if=none,id=root,format=raw,snapshot=on" \
  -device virtio-blk-pci,drive=root,bus=pci.0 \
  -fsdev "local,id=repo,path=$repo,security_model=none,readonly=on" \
  -device virtio-9p-pci,fsdev=repo,mount_tag=repo,bus=pci.0 \
  -fsdev "local,id=node,path=$node_dir,security_model=none,readonly=on" \
  -device virtio-9p-pci,fsdev=node,mount_tag=node,bus=pci.0 \
  -fsdev "local,id=results,path=$results,security_model=none" \
  -device virtio-9p-pci,fsdev=results,mount_tag=results,bus=pci.0 \
  -nic none -nodefaults -display none -serial stdio -no-reboot </dev/null 2>&1 | tee "$console"
qemu_status=${PIPESTATUS[0]}
set -e

elapsed=$(($(seconds) - started))
if [ "$qemu_status" = 124 ] || [ "$qemu_status" = 137 ]; then
  die "the VM ran past ${timeout_s} s and was stopped (ALLOT_NUMA_VM_TIMEOUT raises it)"
fi
if [ ! -s "$results/exit-code" ]; then
  die "the VM stopped without a result (QEMU exit status $qemu_status); its console is above"
fi
code=$(cat "$results/exit-code")
if [ "$code" != 0 ]; then
  die "the multi-node suite failed in the VM (exit status $code) after ${elapsed} s"
fi
log "the multi-node suite passed in the VM (${elapsed} s in all)"
