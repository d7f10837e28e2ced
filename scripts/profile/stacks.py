"""Samples of `perf script -F comm,tid,ip,sym` output, for the other scripts here.

Each sample is (thread name, frames), frames leaf first, with Rust hashes and offsets removed.
"""
import re


def symbol(raw):
    raw = re.sub(r'::h[0-9a-f]{16}$', '', raw)
    return re.sub(r'\+0x[0-9a-f]+$', '', raw)


def samples(path):
    comm, frames = None, []
    for line in open(path, errors='replace'):
        if line.strip() and line.startswith((' ', '\t')):
            parts = line.strip().split(None, 1)
            frames.append(symbol(parts[1]) if len(parts) > 1 else '?')
            continue
        if frames:
            yield comm, frames
        comm, frames = (line.split()[0] if line.strip() else None), []
    if frames:
        yield comm, frames
