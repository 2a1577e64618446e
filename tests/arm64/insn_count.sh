#!/bin/sh
# Guest instructions per output element of each kernel path under
# qemu-aarch64 (docs/arm64.md): kern_insn runs a path REPS times and 0 times
# under `-singlestep -d exec,nochain` (qemu 7.2's name for one instruction
# per translation block: one log line per executed instruction); the
# difference over REPS x outputs is the figure. Instructions, not time: no
# ARM hardware here, and qemu's speed says nothing about a phone's.
#   tests/arm64/insn_count.sh [BUILD_DIR]   (an aarch64 build: make test-arm64-build)
set -eu
B=${1:-build-arm64}
QEMU="qemu-aarch64 -L ${TMEM_CROSS_SYSROOT:-/usr/aarch64-linux-gnu} -cpu max"
N_IN=512 N_OUT=8 REPS=3 VEC_N=1024
log=$(mktemp)
trap 'rm -f "$log"' EXIT
count() { # kernel path n_in n_out n_tok reps
    $QEMU -singlestep -d exec,nochain -D "$log" "$B/kern_insn" "$@" >/dev/null
    grep -c '^Trace' "$log"
}
per_elem() { # kernel path n_in n_out n_tok outputs
    a=$(count "$1" "$2" "$3" "$4" "$5" $REPS)
    b=$(count "$1" "$2" "$3" "$4" "$5" 0)
    echo $(( (a - b) / (REPS * $6) ))
}
printf '%-12s %-8s %10s %10s %10s\n' kernel shape scalar neon dotprod
for k in f32 f16 bf16 q8_0 q4_K q6_K; do
    for tok in 1 4; do
        outs=$((N_OUT * tok))
        s=$(per_elem $k scalar $N_IN $N_OUT $tok $outs)
        n=$(per_elem $k neon $N_IN $N_OUT $tok $outs)
        case $k in q*) d=$(per_elem $k dotprod $N_IN $N_OUT $tok $outs) ;; *) d=- ;; esac
        printf '%-12s %-8s %10s %10s %10s\n' "matmul $k" "${N_IN}x${tok}" "$s" "$n" "$d"
    done
done
for k in dot silu_mul exp_sub_sum; do
    outs=$VEC_N # per vector element
    s=$(per_elem $k scalar $VEC_N 1 1 $outs)
    n=$(per_elem $k neon $VEC_N 1 1 $outs)
    printf '%-12s %-8s %10s %10s %10s\n' "$k" "n=$VEC_N" "$s" "$n" -
done
