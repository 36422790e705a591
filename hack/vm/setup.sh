#!/usr/bin/env bash
# One-stop preparation of the host side of the e2e guest: QEMU with igb, the Debian kernel, the
# initramfs. Prints the kernel directory. Warm runs take a fraction of a second.
#
# Usage: hack/vm/setup.sh
set -euo pipefail
VM_SCRIPT=${VM_SCRIPT:-setup}
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
export VM_START_NS
"$HERE/install-qemu.sh"
KDIR=$("$HERE/fetch-kernel.sh")
"$HERE/build-initramfs.sh" "$KDIR" > /dev/null
step "ready"
echo "$KDIR"
