#!/usr/bin/env python3
"""Immediate callers (DEPTH frames up) of leaf frames matching TARGET. parent.py FILE TARGET [N] [DEPTH]"""
import sys, re, collections
path, target = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 30
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 1
def norm(s):
    s = re.sub(r'::h[0-9a-f]{16}$', '', s); return re.sub(r'\+0x[0-9a-f]+$', '', s)
total = 0; c = collections.Counter(); hit = 0
def flush(frames):
    global total, hit
    if not frames: return
    total += 1
    if target not in frames[0]: return
    hit += 1
    c[' <- '.join(frames[1:1+depth])] += 1
frames = []
for line in open(path, errors='replace'):
    if not line.strip(): flush(frames); frames = []; continue
    if not line.startswith((' ', '\t')): flush(frames); frames = []; continue
    parts = line.strip().split(None, 1)
    frames.append(norm(parts[1]) if len(parts) > 1 else '?')
flush(frames)
print(f'{target}: {hit*100/total:.2f}%')
for k, v in c.most_common(n): print(f'{v*100/total:6.2f}% {k[:250]}')
