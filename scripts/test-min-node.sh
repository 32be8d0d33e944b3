#!/usr/bin/env bash
# Runs part of the test suite under the oldest Node that package.json allows (engines.node,
# ">=x.y.z"), so that promise is tested, not assumed. The Node binary comes from the npm
# registry, through npm itself: the package node-linux-<arch>@x.y.z carries the official
# binary of that release (npm checks the tarball's integrity). It is cached outside the
# checkout (META_NODE_CACHE, default ~/.cache/meta), so later runs need no network.
#
#   bash scripts/test-min-node.sh                 # the default subset below
#   bash scripts/test-min-node.sh test/storage    # any paths, as with `npm test -- <paths>`
#
# Expects a build (`npm run build`); `npm run test:min-node` builds first.
set -euo pipefail
cd "$(dirname "$0")/.."

min=$(node -p "/^>=(\d+\.\d+\.\d+)$/.exec(require('./package.json').engines.node)?.[1] ?? ''")
if [ -z "$min" ]; then
  echo "test-min-node: package.json engines.node must read \">=x.y.z\"" >&2
  exit 1
fi
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "test-min-node: no node-linux package for $(uname -m)" >&2; exit 1 ;;
esac
cache="${META_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/meta}/node-v$min-linux-$arch"
node_bin="$cache/bin/node"
if [ ! -x "$node_bin" ]; then
  echo "test-min-node: fetching Node $min (npm package node-linux-$arch@$min)" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent --pack-destination "$tmp" "node-linux-$arch@$min" >/dev/null)
  mkdir -p "$tmp/unpacked"
  tar -xzf "$tmp"/node-linux-"$arch"-*.tgz -C "$tmp/unpacked"
  mkdir -p "$(dirname "$cache")"
  rm -rf "$cache"
  mv "$tmp/unpacked/package" "$cache"
fi
actual=$("$node_bin" --version)
if [ "$actual" != "v$min" ]; then
  echo "test-min-node: $node_bin is $actual, expected v$min" >&2
  exit 1
fi

# The default subset: everything that runs in-process (protocol, storage, broker, client,
# package and architecture checks) and the CLI end to end through bin/run.js for send and
# tail, all under the old Node (run-tests.mjs and every process it spawns use it).
paths=("$@")
if [ ${#paths[@]} -eq 0 ]; then
  paths=(test/architecture.test.ts test/package.test.ts test/protocol test/storage test/broker test/client
    test/commands/send.int.test.ts test/commands/tail.int.test.ts)
fi
echo "test-min-node: $("$node_bin" --version) on ${paths[*]}" >&2
PATH="$cache/bin:$PATH" exec "$node_bin" scripts/run-tests.mjs "${paths[@]}"
