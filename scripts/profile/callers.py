#!/usr/bin/env python3
"""Who calls TARGET: the first frame above TARGET matching 'corral' (or FILTER). callers.py FILE TARGET [N] [FILTER]"""
import sys, re, collections
path, target = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 30
filt = sys.argv[4] if len(sys.argv) > 4 else 'corral'
def norm(s):
    s = re.sub(r'::h[0-9a-f]{16}$', '', s); return re.sub(r'\+0x[0-9a-f]+$', '', s)
total = 0; hit = 0; c = collections.Counter()
def flush(frames):
    global total, hit
    if not frames: return
    total += 1
    idx = [i for i, f in enumerate(frames) if target in f]
    if not idx: return
    hit += 1
    i = min(idx)
    caller = next((f for f in frames[i+1:] if filt in f and target not in f), '(none)')
    c[caller] += 1
frames = []
for line in open(path, errors='replace'):
    if not line.strip(): flush(frames); frames = []; continue
    if not line.startswith((' ', '\t')): flush(frames); frames = []; continue
    parts = line.strip().split(None, 1)
    frames.append(norm(parts[1]) if len(parts) > 1 else '?')
flush(frames)
print(f'{target}: {hit*100/total:.2f}% of {total}')
for k, v in c.most_common(n): print(f'{v*100/total:6.2f}% {k[:200]}')
