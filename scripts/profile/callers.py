#!/usr/bin/env python3
"""Who calls TARGET: the first frame above it containing FILTER (default 'corral').
callers.py FILE TARGET [N] [FILTER]"""
import collections
import sys

from stacks import samples

path, target = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 30
wanted = sys.argv[4] if len(sys.argv) > 4 else 'corral'
total, hit, callers = 0, 0, collections.Counter()
for _, frames in samples(path):
    total += 1
    matches = [i for i, f in enumerate(frames) if target in f]
    if not matches:
        continue
    hit += 1
    above = frames[min(matches) + 1:]
    callers[next((f for f in above if wanted in f and target not in f), '(none)')] += 1
print(f'{target}: {hit * 100 / total:.2f}% of {total}')
for key, count in callers.most_common(n):
    print(f'{count * 100 / total:6.2f}% {key[:200]}')
