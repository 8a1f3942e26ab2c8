#!/usr/bin/env python3
"""smearsum.py REPORT.json...: per smear load test report (tools/bench/smearab.sh), smear
off acked and smear on acked and delivered rows/s (delivered / off), the visibility p99,
and per server the samples with admission closed in the measured window and the first
closure time."""
import json,sys
for f in sys.argv[1:]:
    d=json.load(open(f))
    off,on=d['runs'][0],d['runs'][1]
    vis=on['visibility']
    closed=[]
    for s in on['time_series']:
        c=[p['t'] for p in s['points'] if p.get('admission_closed') and 0<=p['t']<=on['seconds']]
        closed.append((s['id'],len(c),round(min(c)) if c else None))
    p99=vis.get('p99_seconds', vis.get('p99'))
    print(f.split('/')[-1], 'off %.0f'%off['acked_rows_per_sec'], 'on acked %.0f deliv %.0f'%(on['acked_rows_per_sec'],on['delivered_rows_per_sec']),
          'ratio %.2f'%(on['delivered_rows_per_sec']/off['acked_rows_per_sec']), 'vis', {k:v for k,v in vis.items() if 'p99' in k or 'failed' in k}, 'closed(server,secs,first)', closed, 'err', on['errors'])
