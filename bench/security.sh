#!/usr/bin/env bash
# The cost of TLS and of access control on `meta bench produce` and `meta bench consume`
# (docs/security.md#cost), paired in one run on this machine:
#
#   TLS:   one broker (no access control), its plain port against its TLS port (--tls --ca);
#   authz: that broker against a second one with a users file, the client logged in (--user)
#          as a user with put/get/group on '*' (every put and get checked);
#   (SCENARIOS=all adds control: that broker against a third one without access control,
#   the spread between two brokers of the same kind; and anon: against a fourth one with a
#   users file and anonymous rights put/get/group on '*', the client not logging in;
#   SCENARIOS=direct runs only those two brokers, started together, against each other.)
#
# Each pair runs the two sides back to back, the order swapped every other pair (ABBA), and
# prints msg/s of each side, their ratio and the load average. Needs a built checkout.
#
#   bench/security.sh [pairs=3] [seconds=5]
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-3}
SECONDS_PER_RUN=${2:-5}
META=./bin/run.js
DIR=$(mktemp -d /tmp/meta-bench-security-XXXXXX)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT

# A CA and a server certificate for 127.0.0.1 (ECDSA P-256).
(
  cd "$DIR"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out ca.key 2>/dev/null
  openssl req -x509 -new -key ca.key -out ca.pem -days 2 -subj '/CN=bench CA' 2>/dev/null
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out server.key 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
  openssl req -new -key server.key -out server.csr -subj '/CN=127.0.0.1' 2>/dev/null
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext 2>/dev/null
)
PASSWORD=bench-password-1
echo "$PASSWORD" | $META user add bench --users "$DIR/users.json" 2>/dev/null
for right in put get group; do $META user grant bench "$right" '*' --users "$DIR/users.json" 2>/dev/null; done

# Start a broker (in this shell: its pid is kept for the cleanup); `ports NAME` then echoes
# its plain port and TLS port.
serve() {
  local name=$1
  shift
  $META serve --port 0 -d "$DIR/$name" --log-format json "$@" >/dev/null 2>"$DIR/$name.log" &
  PIDS+=($!)
  for _ in $(seq 1 150); do
    if grep -q 'listening on' "$DIR/$name.log" 2>/dev/null; then return; fi
    sleep 0.2
  done
  echo "broker $name did not start: $(cat "$DIR/$name.log")" >&2
  exit 1
}
ports() {
  local line
  line=$(grep 'listening on' "$DIR/$1.log")
  echo "$(grep -o 'listening on [^" ]*' <<<"$line" | grep -o '[0-9]*$') $(grep -o '"tls":"meta+tls://[^"]*' <<<"$line" | grep -o '[0-9]*$')"
}
serve open --tls-port 0 --tls-cert "$DIR/server.pem" --tls-key "$DIR/server.key"
serve users --users "$DIR/users.json"
read -r PLAIN TLS <<<"$(ports open)"
read -r AUTH _ <<<"$(ports users)"
if [ "${SCENARIOS:-}" = all ] || [ "${SCENARIOS:-}" = direct ]; then
  printf '[security]\nanonymous = put *, get *, group *\n' >"$DIR/anon.ini"
  serve control
  serve anon -c "$DIR/anon.ini" --users "$DIR/users.json"
  read -r CONTROL _ <<<"$(ports control)"
  read -r ANON _ <<<"$(ports anon)"
fi

rate() { # mode args… → msg/s
  local mode=$1
  shift
  local count=()
  [ "$mode" = consume ] && count=(-n 300000) || count=(--duration "${SECONDS_PER_RUN}s")
  $META bench "$mode" -q --json "${count[@]}" "$@" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).msgsPerSec))'
}

pair() { # label mode argsA -- argsB
  local label=$1 mode=$2
  shift 2
  local a=() b=()
  while [ "$1" != -- ]; do a+=("$1"); shift; done
  shift
  b=("$@")
  for i in $(seq 1 "$PAIRS"); do
    local ra rb
    if [ $((i % 2)) = 1 ]; then ra=$(rate "$mode" "${a[@]}"); rb=$(rate "$mode" "${b[@]}"); else rb=$(rate "$mode" "${b[@]}"); ra=$(rate "$mode" "${a[@]}"); fi
    local load
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    node -e "console.log(['$label', '$mode', 'pair $i', $ra, $rb, ($rb / $ra).toFixed(2) + 'x', 'load $load'].join('\t'))"
  done
}

echo -e "scenario\tmode\tpair\tbefore msg/s\tafter msg/s\tratio\tload"
export META_PASSWORD=$PASSWORD
if [ "${SCENARIOS:-}" = direct ]; then
  pair anon/control produce -b "127.0.0.1:$CONTROL" -- -b "127.0.0.1:$ANON"
  pair anon/control consume -b "127.0.0.1:$CONTROL" -- -b "127.0.0.1:$ANON"
  exit 0
fi
if [ "${SCENARIOS:-}" = all ]; then
  pair control produce -b "127.0.0.1:$PLAIN" -- -b "127.0.0.1:$CONTROL"
  pair anon produce -b "127.0.0.1:$PLAIN" -- -b "127.0.0.1:$ANON"
  pair authz produce -b "127.0.0.1:$PLAIN" -- -b "127.0.0.1:$AUTH" --user bench
  exit 0
fi
pair tls produce -b "127.0.0.1:$PLAIN" -- -b "127.0.0.1:$TLS" --tls --ca "$DIR/ca.pem"
pair tls consume -b "127.0.0.1:$PLAIN" -- -b "127.0.0.1:$TLS" --tls --ca "$DIR/ca.pem"
pair authz produce -b "127.0.0.1:$PLAIN" -- -b "127.0.0.1:$AUTH" --user bench
pair authz consume -b "127.0.0.1:$PLAIN" -- -b "127.0.0.1:$AUTH" --user bench
