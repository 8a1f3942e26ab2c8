#!/usr/bin/env python3
"""gsum.py DUMP [N]: the N (25) largest groups of a goroutine dump (debug=1),
each as the count, the frame it waits in and the first three tsdb frames.
With --holders: the goroutines running in tsdb/partition code, not waiting
for a mutex (who holds the lock the others wait for)."""
import collections
import re
import sys


def blocks(path):
    for b in open(path).read().split('\n\n'):
        lines = b.strip().split('\n')
        if not lines or not re.match(r'^\d+ @', lines[0]):
            continue
        frames = [re.sub(r'^#\s+0x[0-9a-f]+\s+', '', l).split('+0x')[0].split()[0]
                  for l in lines[1:] if l.startswith('#')]
        yield int(lines[0].split()[0]), frames


def short(f):
    return f.replace('github.com/tsdb/tsdb/', '').replace('github.com/cockroachdb/', '')


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    if '--holders' in sys.argv:
        for n, fr in blocks(args[0]):
            if any('tsdb/partition' in x for x in fr) and not fr[0].startswith('internal/sync.runtime_Semacquire'):
                print(n, ' <- '.join(short(x) for x in fr[:16]))
        return
    c = collections.Counter()
    for n, fr in blocks(args[0]):
        top = fr[0].split('/')[-1] if fr else '?'
        ts = [short(x) for x in fr if 'tsdb/tsdb' in x]
        c[top + ' <- ' + ' <- '.join(ts[:3])] += n
    for k, v in c.most_common(int(args[1]) if len(args) > 1 else 25):
        print('%5d %s' % (v, k[:260]))


main()
