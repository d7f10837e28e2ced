#!/usr/bin/env python3
# Lists functions of more than 120 lines outside tests and generated code (issue 23: none without
# a reason in its doc):  python3 scripts/long-functions.py [REPO_ROOT]
import re,pathlib,sys
root=pathlib.Path(sys.argv[1] if len(sys.argv)>1 else '.')/'crates'
res=[]
for f in root.rglob('src/**/*.rs'):
    if 'generated' in str(f) or f.name=='tests.rs' or '/tests/' in str(f): continue
    lines=f.read_text().splitlines(); i=0
    while i<len(lines):
        l=lines[i]
        if re.match(r'\s*#\[cfg\(test\)\]',l): break
        m=re.match(r'^(\s*)(pub(\([^)]*\))? )?(async )?(const )?(unsafe )?fn (\w+)',l)
        if m and not l.rstrip().endswith(';'):
            ind=len(m.group(1)); j=i+1
            while j<len(lines) and not (lines[j].startswith(' '*ind+'}') and len(lines[j])-len(lines[j].lstrip())==ind): j+=1
            if j-i+1>120: res.append((j-i+1,str(f.relative_to(root)),m.group(7)))
            i=j
        i+=1
for r in sorted(res,reverse=True): print(*r)
