#!/usr/bin/env python3
"""Callees beneath the outermost frame matching TARGET: under.py FILE TARGET [N] [DEPTH]"""
import collections
import sys

from stacks import samples

path, target = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 40
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 1
total, hit, callees = 0, 0, collections.Counter()
for _, frames in samples(path):
    total += 1
    matches = [i for i, f in enumerate(frames) if target in f]
    if not matches:
        continue
    hit += 1
    i = max(matches)
    callees[' <- '.join(reversed(frames[max(0, i - depth):i])) if i > 0 else '(self)'] += 1
print(f'{target}: {hit * 100 / total:.2f}% of {total}')
for key, count in callees.most_common(n):
    print(f'{count * 100 / total:6.2f}% {key[:220]}')
