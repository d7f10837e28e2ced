"""Compares two kinds of benchmark phase by where their samples go, per operation.

    perf script --no-inline -F comm,tid,time,ip,sym -i perf.data > perf.txt
    python3 scripts/profile/phases.py perf.txt progress.txt [FILTER]

progress.txt is the machinery benchmark's stderr stamped by stamp.py. Each "create CR" line ends
a phase of `duration` seconds (3, as `--duration-secs 3`; the warm-up before it is left out);
samples inside a phase count for its kind: S (CRD without schema) or V (structural schema).
Prints, per symbol, samples per 1000 operations in each kind (inclusive) and the difference,
largest first: where a validated create's extra cost goes. FILTER keeps symbols containing it.
"""
import collections
import re
import sys

from stacks import timed_samples

DURATION = 3.0


def phases(path):
    found = []
    for line in open(path):
        m = re.match(r'([\d.]+) create CR, (CRD without|structural).*?(\d+) ops/s', line)
        if m:
            end = float(m.group(1))
            kind = 'S' if m.group(2) == 'CRD without' else 'V'
            found.append((end - DURATION, end, kind, int(m.group(3)) * DURATION))
    return found


def main():
    perf, progress = sys.argv[1], sys.argv[2]
    wanted = sys.argv[3] if len(sys.argv) > 3 else ''
    spans = phases(progress)
    ops = collections.Counter()
    for _, _, kind, count in spans:
        ops[kind] += count
    inclusive = {'S': collections.Counter(), 'V': collections.Counter()}
    totals = collections.Counter()
    for at, frames in timed_samples(perf):
        kind = next((k for start, end, k, _ in spans if start <= at <= end), None)
        if kind is None:
            continue
        totals[kind] += 1
        for name in set(frames):
            inclusive[kind][name] += 1
    if not ops['S'] or not ops['V']:
        sys.exit('no create phases of both kinds in ' + progress)
    per = {k: 1000 / ops[k] for k in ops}
    print('samples per 1000 creates: schemaless %.1f, validated %.1f' %
          (totals['S'] * per['S'], totals['V'] * per['V']))
    rows = []
    for name in set(inclusive['S']) | set(inclusive['V']):
        s = inclusive['S'][name] * per['S']
        v = inclusive['V'][name] * per['V']
        rows.append((v - s, s, v, name))
    rows.sort(reverse=True)
    print('  V-S      S      V  symbol')
    for diff, s, v, name in rows:
        if wanted in name and abs(diff) > 0.4:
            print('%6.2f %6.2f %6.2f  %s' % (diff, s, v, name[:150]))


main()
