#!/usr/bin/env bash
# Replays every committed fuzz input through its target (make fuzz-replay):
#
#   fuzz/replay.sh BIN_DIR [FUZZ_DIR]
#
# BIN_DIR holds the built targets (a libFuzzer binary given files runs each once). FUZZ_DIR
# (default: this script's directory) holds Cargo.toml, whose [[bin]] names are the targets, and
# the inputs in regressions/<target>/ and corpus/<target>/. Fails when a target has no input, when
# an input directory is empty or names no target, when a target fails on an input, or when it
# reports fewer executed inputs than it was given; prints the count per directory and in total.
set -euo pipefail

bin_dir=${1:?usage: fuzz/replay.sh BIN_DIR [FUZZ_DIR]}
fuzz_dir=${2:-$(dirname "$0")}
log_dir=${FUZZ_REPLAY_LOGS:-build}
mkdir -p "$log_dir"

fail() { echo "fuzz-replay: $*" >&2; exit 1; }

# The [[bin]] sections' names, in file order; a name followed by " features" when the section has
# `required-features` (built only with a feature of the fuzz crate, not here).
mapfile -t sections < <(awk '/^\[\[bin\]\]/ { if (name != "") print name; in_bin = 1; name = ""; next }
    /^\[/ { if (name != "") print name; in_bin = 0; name = ""; next }
    in_bin && /^name *=/ { gsub(/^name *= *"|" *$/, ""); name = $0 }
    in_bin && /^required-features *=/ { name = name " features" }
    END { if (name != "") print name }' "$fuzz_dir/Cargo.toml")
[ ${#sections[@]} -gt 0 ] || fail "$fuzz_dir/Cargo.toml declares no [[bin]] fuzz target."
targets=() skipped=()
for section in "${sections[@]}"; do
    case "$section" in
        *" features") skipped+=("${section% features}") ;;
        *) targets+=("$section") ;;
    esac
done

for dir in "$fuzz_dir"/regressions/* "$fuzz_dir"/corpus/*; do
    [ -d "$dir" ] || continue
    name=$(basename "$dir")
    [[ " ${targets[*]} ${skipped[*]-} " == *" $name "* ]] || fail "$dir names no fuzz target of $fuzz_dir/Cargo.toml; rename or remove it."
done
# A target that needs a feature is not built here; its inputs are replayed where its code is
# built anyway (provider_events and http_response: `cargo test`, src/providers/fuzzing.rs and
# src/http_client/fuzzing.rs).
for target in "${skipped[@]+"${skipped[@]}"}"; do
    echo "fuzz-replay: $target needs a feature of the fuzz crate; its inputs are replayed by cargo test"
done

total=0
for target in "${targets[@]}"; do
    count=0
    for dir in "$fuzz_dir/regressions/$target" "$fuzz_dir/corpus/$target"; do
        [ -d "$dir" ] || continue
        inputs=("$dir"/*)
        [ -e "${inputs[0]}" ] || fail "$dir is empty; commit its inputs or remove the directory."
        log="$log_dir/fuzz-replay-$target-$(basename "$(dirname "$dir")").log"
        timeout 600 "$bin_dir/$target" "${inputs[@]}" >"$log" 2>&1 \
            || { tail -30 "$log"; fail "$target failed on an input of $dir (log: $log)."; }
        # libFuzzer prints "Executed <file> in N ms" for each file it ran.
        executed=$(grep -c '^Executed ' "$log" || true)
        [ "$executed" -eq ${#inputs[@]} ] \
            || fail "$target reported $executed executed inputs of ${#inputs[@]} in $dir (log: $log)."
        echo "fuzz-replay: $dir: ${#inputs[@]} inputs ok"
        count=$((count + ${#inputs[@]}))
    done
    [ $count -gt 0 ] || fail "fuzz target $target has no committed input in $fuzz_dir/regressions/$target or $fuzz_dir/corpus/$target."
    total=$((total + count))
done
echo "fuzz-replay: ${#targets[@]} targets, $total inputs replayed"
