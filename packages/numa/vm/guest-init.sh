#!/bin/sh
# PID 1 of the test VM (baked into the image as /sbin/allot-vm-init; changing this file rebuilds it).
# Mounts the shares from the host and hands over to guest.sh from the checkout, so editing the
# test run needs no new image. Whatever happens, it powers the VM off: the host reads the outcome
# from /results/exit-code, or, when that is missing, reports the VM's console log.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm

fail() {
  echo "allot-vm-init: $*" >/dev/console
  echo 'ALLOT_NUMA_VM_EXIT=125'
  echo 125 >/results/exit-code 2>/dev/null
  sync
  echo o >/proc/sysrq-trigger
  sleep 30
}

modprobe 9pnet_virtio && modprobe 9p && modprobe overlay || fail 'cannot load the 9p and overlay modules'
mkdir -p /repo /opt/node /results /mnt/repo /mnt/scratch
share() { # tag, mount point, extra options
  mount -t 9p -o "trans=virtio,version=9p2000.L,msize=1048576,cache=loose$3" "$1" "$2" ||
    fail "cannot mount the 9p share '$1' on $2"
}
share results /results ''
share repo /mnt/repo ',ro'
share node /opt/node ',ro'
# The checkout is shared read-only; tools that write beside it (vite's config bundle, caches) write
# into memory above it, and the host's copy is never touched.
mount -t tmpfs tmpfs /mnt/scratch && mkdir -p /mnt/scratch/upper /mnt/scratch/work &&
  mount -t overlay overlay -o lowerdir=/mnt/repo,upperdir=/mnt/scratch/upper,workdir=/mnt/scratch/work /repo ||
  fail 'cannot lay a writable overlay over the checkout'

[ -r /repo/packages/numa/vm/guest.sh ] || fail 'no /repo/packages/numa/vm/guest.sh in the shared checkout'
/bin/sh /repo/packages/numa/vm/guest.sh
code=$?
echo "$code" >/results/exit-code
echo "ALLOT_NUMA_VM_EXIT=$code"
sync
echo o >/proc/sysrq-trigger
sleep 30
