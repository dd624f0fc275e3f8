#!/usr/bin/env python3
"""Counts import cycles between the modules of each crate: groups of files that import each
other, directly or around a loop (strongly connected groups of `crate::` references, test modules
and comments left out). Run from the repository root: python3 scripts/import-cycles.py"""
import os,re,sys,collections
root='crates'
def modules(crate):
    src=f'{root}/{crate}/src'
    mods={}
    for d,_,fs in os.walk(src):
        for f in fs:
            if not f.endswith('.rs'): continue
            p=os.path.join(d,f); rel=os.path.relpath(p,src)[:-3]
            parts=rel.split('/')
            if parts[-1] in ('mod','lib','main'): parts=parts[:-1]
            mods['::'.join(parts)]=p
    return mods
total=0
for crate in sorted(os.listdir(root)):
    if not os.path.isdir(f'{root}/{crate}/src'): continue
    mods=modules(crate)
    g=collections.defaultdict(set)
    for m,p in mods.items():
        txt=open(p).read()
        # a test module (`#[cfg(test)]`, or `#[cfg(all(test, ...))]` for a build's own tests)
        k=re.search(r'#\[cfg\((?:all\()?test\b[^\]]*\]\nmod ',txt)
        if k: txt=txt[:k.start()]
        txt='\n'.join(l for l in txt.split('\n') if not l.strip().startswith('//'))
        # strip tests module
        for ref in re.findall(r'crate::((?:[a-z_0-9]+::)*[a-z_0-9A-Z]+)',txt):
            parts=ref.split('::')
            # longest module prefix
            for k in range(len(parts),0,-1):
                cand='::'.join(parts[:k])
                if cand in mods:
                    if cand!=m and not m.startswith(cand+'::') and not cand.startswith(m+'::'): g[m].add(cand)
                    break
        # use super:: and use crate::{a, b}
        for grp in re.findall(r'use crate::\{([^}]*)\}',txt):
            for item in re.split(r'[,\s]+',grp):
                item=item.strip().split('::')[0]
                if item in mods and item!=m and not m.startswith(item+'::'): g[m].add(item)
    # tarjan
    idx={};low={};st=[];on=set();sccs=[];c=[0]
    sys.setrecursionlimit(10000)
    def sc(v):
        idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
        for w in g[v]:
            if w not in idx: sc(w);low[v]=min(low[v],low[w])
            elif w in on: low[v]=min(low[v],idx[w])
        if low[v]==idx[v]:
            comp=[]
            while True:
                w=st.pop();on.discard(w);comp.append(w)
                if w==v:break
            if len(comp)>1: sccs.append(comp)
    for v in list(mods):
        if v not in idx: sc(v)
    pairs=sum(1 for a in g for b in g[a] if a in g[b] and a<b)
    if sccs:
        print(crate, 'sccs',len(sccs),'mutual pairs',pairs)
        for s in sccs: print('   ',len(s),sorted(s)[:12])
    total+=len(sccs)
print('total SCCs',total)
