# msum.py DIR: mat.sh's results per round, each figure ÷ VictoriaMetrics' in the same round, and the medians of those ratios
import sys,re,glob,os,statistics as S
d=sys.argv[1]; res={}
for f in glob.glob(d+'/*-r*.log'):
    name,r=os.path.basename(f)[:-4].rsplit('-r',1); cur={}
    for l in open(f):
        m=re.search(r'write: (\d+) points/s',l)
        if m: cur['ingest']=int(m.group(1))
        m=re.search(r'read: (\w+)\s.*p50 ([0-9.]+)ms',l)
        if m: cur[m.group(1)]=float(m.group(2))
        m=re.search(r'([0-9.]+)s per 1M',l)
        if m: cur['cpu']=float(m.group(1))
        m=re.search(r'RSS (\d+) MB \(peak (\d+)',l)
        if m: cur['rss']=int(m.group(2))
        m=re.search(r'(\d+)M after shutdown',l)
        if m: cur['dir']=int(m.group(1))
    res.setdefault(name,{})[int(r)]=cur
keys=['ingest','cpu','series_count','series_select','agg_mean_1m','rss','dir']
names=sorted(res,key=lambda n:(n!='vm',n))
for n in names:
    print(n)
    for r in sorted(res[n]):
        c=res[n][r]; v=res['vm'].get(r,{})
        print('  r%d '%r+'  '.join('%s=%s(%.2f)'%(k,c.get(k),c[k]/v[k] if k in c and k in v and v[k] else 0) for k in keys))
    print('  median ratio to vm: '+'  '.join('%s=%.2f'%(k,S.median([res[n][r][k]/res['vm'][r][k] for r in res[n] if k in res[n][r] and r in res['vm'] and res['vm'][r].get(k)])) for k in keys if any(k in res[n][r] for r in res[n])))
