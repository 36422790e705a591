# Shared helpers for hack/vm/*.sh (sourced, not run).
# Everything slow prints a progress line with the seconds elapsed since the calling script started, on
# stderr, so that stdout stays free for the one result a script prints (a path, a command line).
VM_CACHE=${SRIOVOP_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sriovop/vm}
VM_START_NS=${VM_START_NS:-$(date +%s%N)}
VM_SCRIPT=${VM_SCRIPT:-$(basename "$0" .sh)}

vm_elapsed() { echo "$(( ($(date +%s%N) - VM_START_NS) / 1000000 ))"; }
step() { local ms; ms=$(vm_elapsed); printf '[vm/%s %3d.%03ds] %s\n' "$VM_SCRIPT" $((ms / 1000)) $((ms % 1000)) "$*" >&2; }
die() { printf 'vm/%s: error: %s\n' "$VM_SCRIPT" "$*" >&2; exit 1; }

# Serialises cache writers (two test runs preparing the same kernel at once) on one lock file.
vm_lock() { mkdir -p "$VM_CACHE"; exec 9>"$VM_CACHE/.lock"; flock 9; }
