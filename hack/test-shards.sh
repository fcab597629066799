#!/usr/bin/env bash
# Runs one Ginkgo package as two shards at once, each a go test process of its own: shard a runs the spec files
# that FILES (a regular expression) matches, shard b every other one, so that no spec is left out. A suite whose
# specs mostly wait on Docker or an API server then keeps both of the machine's cores busy; each shard's
# BeforeSuite starts its own API server (and, end to end, its own agent on a node named for its shard).
#
#   hack/test-shards.sh PACKAGE FILES GO-TEST-FLAGS...
#
# Each shard writes to a file of its own while it runs and is printed whole when it ends, a failing shard after
# a passing one, so that the log reads one shard at a time and ends with the go test summary line that decides
# the result.
set -uo pipefail
pkg=$1 files=$2
shift 2
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
trap 'kill "$pid_a" "$pid_b" 2>/dev/null; exit 130' INT TERM

# One build first: two go test processes would otherwise compile the same packages side by side.
go test -c -o /dev/null "$@" "$pkg" || exit

start=$SECONDS
TEST_SHARD=a go test "$@" "$pkg" -ginkgo.focus-file "$files" >"$logs/a" 2>&1 &
pid_a=$!
TEST_SHARD=b go test "$@" "$pkg" -ginkgo.skip-file "$files" >"$logs/b" 2>&1 &
pid_b=$!

declare -A running=([$pid_a]=a [$pid_b]=b) rc
while ((${#running[@]})); do
  wait -n -p ended "${!running[@]}"
  status=$?
  shard=${running[$ended]}
  unset "running[$ended]"
  rc[$shard]=$status
  echo ">> shard $shard of $pkg ended with exit code $status after $((SECONDS - start)) s" >&2
done

for shard in a b; do [[ ${rc[$shard]} == 0 ]] && cat "$logs/$shard"; done
for shard in a b; do [[ ${rc[$shard]} != 0 ]] && cat "$logs/$shard"; done
[[ ${rc[a]} == 0 && ${rc[b]} == 0 ]]
