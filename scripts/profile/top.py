#!/usr/bin/env python3
"""Inclusive/self percentages per symbol from `perf script -F comm,tid,ip,sym` output.
usage: top.py FILE [N] [filter-substring-for-inclusive]"""
import sys, re, collections
path = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 60
filt = sys.argv[3] if len(sys.argv) > 3 else None
incl = collections.Counter(); selfc = collections.Counter(); comms = collections.Counter()
total = 0
def norm(s):
    s = re.sub(r'::h[0-9a-f]{16}$', '', s)
    s = re.sub(r'\+0x[0-9a-f]+$', '', s)
    return s
def flush(comm, frames):
    global total
    if not frames: return
    if filt and not any(filt in f for f in frames): return
    total += 1
    comms[comm] += 1
    selfc[frames[0]] += 1
    for f in set(frames): incl[f] += 1
comm = None; frames = []
for line in open(path, errors='replace'):
    if not line.strip():
        flush(comm, frames); comm = None; frames = []; continue
    if not line.startswith((' ', '\t')):
        flush(comm, frames); frames = []
        comm = line.split()[0]
        continue
    parts = line.strip().split(None, 1)
    sym = norm(parts[1]) if len(parts) > 1 else '?'
    frames.append(sym)
flush(comm, frames)
print('samples', total)
print('== threads'); [print(f'{c*100/total:6.2f}% {k}') for k, c in comms.most_common(15)]
print('== self'); [print(f'{c*100/total:6.2f}% {k[:150]}') for k, c in selfc.most_common(n)]
print('== inclusive'); [print(f'{c*100/total:6.2f}% {k[:150]}') for k, c in incl.most_common(n)]
