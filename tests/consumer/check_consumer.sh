# check_consumer.sh - sourced (bash) by tests/scripts/consumer_test.sh and
# tests/install/user_install_test.sh, which build tests/consumer/consumer.c
# against an installed libmatexcomm.
#
# check_consumer BINARY LIBDIR LAUNCHER...: BINARY must resolve libmatexcomm
# inside LIBDIR (ldd), and `LAUNCHER... -np 2 BINARY` must print "OK rank"
# from both ranks. Anything else prints what happened and exits with 1.
check_consumer() {
  local binary=$1 libdir=$2 resolved output oks
  shift 2
  resolved=$(ldd "$binary" | awk '/libmatexcomm/ {print $3}')
  [[ $resolved == "$libdir"/* ]] ||
    { echo "FAIL: $binary resolves libmatexcomm to '$resolved', not to the installed copy in $libdir"; exit 1; }
  output=$("$@" -np 2 "$binary" 2>&1) || { echo "$output"; echo "FAIL: $binary failed under $*"; exit 1; }
  oks=$(grep -c '^OK rank' <<<"$output" || true)
  [[ $oks -eq 2 ]] || { echo "$output"; echo "FAIL: expected OK from 2 ranks, got $oks"; exit 1; }
  echo "$binary: OK on 2 ranks, libmatexcomm from $resolved"
}
