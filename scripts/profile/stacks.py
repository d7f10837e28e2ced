"""Samples of `perf script -F comm,tid[,time],ip,sym` output, for the other scripts here.

`samples` yields (thread name, frames) and `timed_samples` (time in seconds, frames), frames
leaf first, with Rust hashes and offsets removed.
"""
import re


def symbol(raw):
    raw = re.sub(r'::h[0-9a-f]{16}$', '', raw)
    return re.sub(r'\+0x[0-9a-f]+$', '', raw)


def records(path):
    """(header line, frames) of each sample."""
    header, frames = None, []
    for line in open(path, errors='replace'):
        if line.strip() and line.startswith((' ', '\t')):
            parts = line.strip().split(None, 1)
            frames.append(symbol(parts[1]) if len(parts) > 1 else '?')
            continue
        if frames:
            yield header, frames
        header, frames = (line if line.strip() else None), []
    if frames:
        yield header, frames


def samples(path):
    for header, frames in records(path):
        yield (header.split()[0] if header else None), frames


def timed_samples(path):
    """Samples whose header carries a time (`perf script -F ...,time,...`)."""
    for header, frames in records(path):
        m = re.search(r' ([\d.]+): *$', header or '')
        if m:
            yield float(m.group(1)), frames
