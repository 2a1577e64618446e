#!/bin/sh
# Run every libFuzzer target briefly: fuzz/run.sh BUILD_FUZZ_DIR SECONDS
# Each target explores from a scratch copy of its seed corpus (new inputs do
# not land in the repository); a crash, leak or sanitizer finding stops it
# and leaves the reproducer at BUILD_FUZZ_DIR/artifacts/<name>-crash-*.
# Add a reproducer to fuzz/<name>/corpus/ once fixed: `make test` replays it.
set -u
dir=$1 seconds=${2:-10}
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir/artifacts"
failed="" ran=0
for entry in "$src"/*/fuzz_*.c; do
  name=$(basename "$(dirname "$entry")")
  bin=$dir/fuzz_$name
  if [ ! -x "$bin" ]; then echo "fuzz: $bin not built"; failed="$failed $name"; continue; fi
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/tmem-fuzz-$name-XXXXXX")
  echo "== fuzz_$name for ${seconds}s"
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$dir/artifacts/$name-" "$scratch" "$src/$name/corpus" >"$dir/$name.log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$dir/$name.log" | tail -2
  else
    tail -30 "$dir/$name.log"
    failed="$failed $name"
  fi
  rm -rf "$scratch"
  ran=$((ran + 1))
done
if [ -n "$failed" ]; then echo "fuzz: FAILED:$failed (logs in $dir, reproducers in $dir/artifacts)"; exit 1; fi
echo "fuzz: $ran targets ran ${seconds}s each, no finding"
