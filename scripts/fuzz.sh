#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a bounded time (CI, or a quick local
# check), after replaying the saved regression inputs.
#
#   scripts/fuzz.sh                    # every target, FUZZ_SECONDS each (default 20)
#   FUZZ_SECONDS=600 scripts/fuzz.sh vars_resolve
#
# Environment:
#   FUZZ_SECONDS     time per target, in seconds (default 20)
#   FUZZ_TOOLCHAIN   `nightly` or `pinned` (default: nightly when installed, else
#                    pinned; see below)
#   FUZZ_JOBS        parallel fuzzing processes per target (default 1)
#   FUZZ_SANITIZER   cargo-fuzz sanitizer: address (default) or none (what CI uses)
#   FUZZ_BUILD_ONLY  1: install cargo-fuzz and build the targets, run nothing
#                    (scripts/test.sh builds them this way while the end-to-end
#                    tests run, so the fuzz stage itself only fuzzes)
#
# Toolchain: cargo-fuzz needs nightly features (-Zsanitizer=address). Without a
# nightly (no rustup downloads on these machines), the script uses the toolchain
# pinned in rust-toolchain.toml with RUSTC_BOOTSTRAP=1, which lets a stable
# compiler accept the -Z flags; same sanitizer, same coverage instrumentation.
#
# The fuzz crate builds against stephost-batch and stephost-contract only (no
# WebAssembly runtime, no plugins to compile): the plugins' descriptions come from
# the snapshot fuzz/catalog.json, which scripts/fuzz_catalog.sh writes from a built
# binary (scripts/test.sh checks it is current with --check).
#
# A crash fails the script (after every target has run) and prints how to
# reproduce and minimize it; minimized inputs go to fuzz/regressions/<target>/,
# which every run replays first.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root/fuzz"
seconds=${FUZZ_SECONDS:-20}
jobs=${FUZZ_JOBS:-1}
sanitizer=(--sanitizer "${FUZZ_SANITIZER:-address}")
parallel=()
if [[ "$jobs" -gt 1 ]]; then
  # libFuzzer writes each worker's output to fuzz-<n>.log in the current folder.
  parallel=(-jobs="$jobs" -workers="$jobs")
fi

toolchain=${FUZZ_TOOLCHAIN:-}
if [[ -z "$toolchain" ]]; then
  if rustc +nightly --version >/dev/null 2>&1; then
    toolchain=nightly
  else
    toolchain=pinned
  fi
fi
case "$toolchain" in
  nightly) cargo=(cargo +nightly) ;;
  pinned)
    # rust-toolchain.toml in the repository root picks the toolchain.
    export RUSTC_BOOTSTRAP=1
    cargo=(cargo)
    ;;
  *) echo "FUZZ_TOOLCHAIN must be nightly or pinned, not '$toolchain'" >&2; exit 2 ;;
esac
echo "fuzz: toolchain $toolchain ($("${cargo[@]}" --version)), sanitizer ${FUZZ_SANITIZER:-address}, ${seconds}s per target" >&2

if ! "${cargo[@]}" fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz" >&2
  "${cargo[@]}" install cargo-fuzz --locked
fi

if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  mapfile -t targets < <("${cargo[@]}" fuzz list)
fi

# One build for every target.
"${cargo[@]}" fuzz build "${sanitizer[@]}"
if [[ "${FUZZ_BUILD_ONLY:-0}" == 1 ]]; then
  echo "fuzz: built ${#targets[@]} targets" >&2
  exit 0
fi

failed=()
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target" "seeds/$target" "regressions/$target"
  # Saved crash inputs first: each must now pass.
  if compgen -G "regressions/$target/*" >/dev/null; then
    echo "fuzz: $target: replaying regressions/$target" >&2
    if ! "${cargo[@]}" fuzz run "${sanitizer[@]}" "$target" regressions/"$target"/* -- -runs=1 >"/tmp/fuzz-$target-regressions.log" 2>&1; then
      echo "fuzz: $target: a saved regression input fails again; see /tmp/fuzz-$target-regressions.log" >&2
      failed+=("$target (regression)")
      continue
    fi
  fi
  echo "fuzz: $target: ${seconds}s" >&2
  log="/tmp/fuzz-$target.log"
  if "${cargo[@]}" fuzz run "${sanitizer[@]}" "$target" "corpus/$target" "seeds/$target" -- \
      -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -dict=batch.dict \
      "${parallel[@]}" -print_final_stats=1 >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^Done [0-9]+ runs" "$log" | tail -1 | sed "s/^/fuzz: $target: /" >&2 || true
  else
    echo "fuzz: $target: FAILED; the end of $log:" >&2
    tail -40 "$log" >&2
    failed+=("$target")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  cat >&2 <<MSG
fuzz: failing targets: ${failed[*]}
Reproduce:  (cd fuzz && ${cargo[*]} fuzz run <target> artifacts/<target>/<crash-file>)
Minimize:   (cd fuzz && ${cargo[*]} fuzz tmin <target> artifacts/<target>/<crash-file>)
Then save the minimized input as fuzz/regressions/<target>/<name> and fix the host.
MSG
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds}s without a crash" >&2
