#!/bin/sh
# Runs inside the test VM (see run.sh): shows the topology the kernel found, then runs the
# multi-node suite from the read-only checkout with the host's Node.js. Its exit status is the VM's.
set -u
export HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin:/opt/node
export ALLOT_NUMA_MULTI=1 CI=1 NO_COLOR=1 FORCE_COLOR=0 TERM=dumb
# Handed over on the kernel command line by run.sh: the PCI device it placed on node 1.
export ALLOT_NUMA_VM_PCI="${ALLOT_NUMA_VM_PCI:-}"
ulimit -l unlimited
# debootstrap's minbase leaves no /etc/hosts; vite resolves localhost even without serving.
[ -s /etc/hosts ] || printf '127.0.0.1 localhost\n::1 localhost\n' >/etc/hosts

echo "== guest (up $(cut -d" " -f1 /proc/uptime) s)"
uname -r
node_bin=/opt/node/${ALLOT_NUMA_VM_NODE_NAME:-node}
"$node_bin" --version
echo '== numactl --hardware'
numactl --hardware
echo '== PCI devices and their NUMA node'
for dev in /sys/bus/pci/devices/*; do
  echo "$(basename "$dev") $(cat "$dev/vendor"):$(cat "$dev/device") numa_node=$(cat "$dev/numa_node")"
done

echo "== pnpm test:numa (vitest run multi-node; up $(cut -d" " -f1 /proc/uptime) s)"
cd /repo/packages/numa || exit 126
# Through a pipe, so vitest writes plain lines (no cursor codes) to the serial console.
run_suite() {
  {
    "$node_bin" /repo/node_modules/vitest/vitest.mjs run multi-node --reporter=verbose 2>&1
    echo $? >/tmp/vitest-status
  } | cat
}
run_suite
status=$(cat /tmp/vitest-status)
# Node itself killed by a signal (status 128 + n: SIGSEGV, SIGILL, SIGBUS) is the emulated CPU's
# fault, not a test's: under TCG's `-cpu max`, V8 now and then crashes as the runner starts. The
# tests run in child processes, so a test's own crash fails the run with status 1 and is never
# retried; only the runner's death is, once, and the console says so.
if [ "$status" -gt 128 ]; then
  echo "== the test runner died by signal $((status - 128)) under emulation; running the suite once more"
  run_suite
  status=$(cat /tmp/vitest-status)
fi
exit "$status"
