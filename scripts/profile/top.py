#!/usr/bin/env python3
"""Inclusive and self shares per symbol: top.py FILE [N] [SUBSTRING: only samples containing it]"""
import collections
import sys

from stacks import samples

path = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
only = sys.argv[3] if len(sys.argv) > 3 else None
incl, self_, comms, total = collections.Counter(), collections.Counter(), collections.Counter(), 0
for comm, frames in samples(path):
    if only and not any(only in f for f in frames):
        continue
    total += 1
    comms[comm] += 1
    self_[frames[0]] += 1
    incl.update(set(frames))
print('samples', total)
for title, counter, shown in (('threads', comms, 15), ('self', self_, n), ('inclusive', incl, n)):
    print('==', title)
    for key, count in counter.most_common(shown):
        print(f'{count * 100 / total:6.2f}% {str(key)[:150]}')
