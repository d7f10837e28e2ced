"""Prefixes every line of standard input with the wall-clock time (seconds since the epoch), to
line a benchmark's progress up with `perf record -k CLOCK_REALTIME` samples (see phases.py):

    perf record -k CLOCK_REALTIME -F 250 --call-graph dwarf,16384 -o perf.data -- \\
      target/release/corral-bench machinery --clients 64 --rounds 4 --duration-secs 3 \\
      --apply-objects 100 2>&1 >/dev/null | python3 scripts/profile/stamp.py > progress.txt
"""
import sys
import time

for line in sys.stdin:
    sys.stdout.write(f"{time.time():.6f} {line}")
    sys.stdout.flush()
