#!/usr/bin/env python3
"""Callers (DEPTH frames up) of samples whose leaf matches TARGET: parent.py FILE TARGET [N] [DEPTH]"""
import collections
import sys

from stacks import samples

path, target = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 30
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 1
total, hit, parents = 0, 0, collections.Counter()
for _, frames in samples(path):
    total += 1
    if target in frames[0]:
        hit += 1
        parents[' <- '.join(frames[1:1 + depth])] += 1
print(f'{target}: {hit * 100 / total:.2f}%')
for key, count in parents.most_common(n):
    print(f'{count * 100 / total:6.2f}% {key[:250]}')
