#!/usr/bin/env python3
# The longest functions (lines, test modules and files excluded) of controller/, apiserver-shim/ and crds/:
#   python3 hack/lib/largest_functions.py [REPO_ROOT]   (issue 12 tracks these)
import os,re,sys
root=sys.argv[1] if len(sys.argv) > 1 else "."
res=[]
for d in ['controller','apiserver-shim','crds']:
    for dp,dn,fn in os.walk(os.path.join(root,d)):
        if 'target' in dp: continue
        for f in fn:
            if not f.endswith('.rs'): continue
            p=os.path.join(dp,f); lines=open(p).read().split('\n')
            # A test module's own file (`mod tests;` under #[cfg(test)]) is all tests.
            in_test=f=='tests.rs' or os.sep+'tests' in os.path.relpath(dp,root)
            for i,l in enumerate(lines):
                if re.match(r'\s*#\[cfg\(test\)\]',l): in_test=True
                m=re.match(r'\s*(pub(\([^)]*\))?\s+)?(async\s+)?fn\s+(\w+)',l)
                if not m or in_test: continue
                depth=0; started=False
                for j in range(i,len(lines)):
                    s=lines[j]
                    if not started and s.rstrip().endswith(';') and '{' not in s: break
                    depth+=s.count('{')-s.count('}')
                    if '{' in s: started=True
                    if started and depth<=0:
                        res.append((j-i+1, os.path.relpath(p,root), m.group(4))); break
res.sort(reverse=True)
for n,p,name in res[:8]: print(f"{n:4d}  {p}::{name}")
