#!/usr/bin/env python3
"""Every public function that returns tmem_status and has a pointer
out-parameter must say in its doc comment what the outputs hold on failure
(issue 12). Prints each offender; exit 1 if any, 0 with "PASS" if none."""
import glob
import re
import sys

FAILURE_NOTE = re.compile(r'[Oo]n (other )?failure|[Ff]ails only|outputs on failure')


def opaque_handles(sources):
    """tmem_ types declared without a body: handles passed in, not outputs."""
    names = set()
    for src in sources:
        names.update(re.findall(r'typedef struct (tmem_\w+) \1;', src))
    return names


def out_params(params, handles):
    outs = []
    for p in params.split(','):
        p = ' '.join(p.split())
        if '*' not in p or '(' in p:
            continue
        if p.startswith('const ') and p.count('*') == 1:
            continue
        name = re.findall(r'\w+', p)[-1]
        base = p.split()[0]
        if p.count('*') == 1 and (base in handles or base in ('FILE', 'void')):
            continue
        outs.append(name)
    return outs


def main(include_dir):
    headers = sorted(glob.glob(include_dir + '/typedmem/*.h'))
    sources = {h: open(h, encoding='utf-8').read() for h in headers}
    handles = opaque_handles(sources.values())
    decl = re.compile(r'/\*\*((?:(?!\*/).)*?)\*/\s*((?:TMEM_API[^;]*?;\s*)+)', re.S)
    status_fn = re.compile(r'TMEM_API (?:TMEM_NODISCARD )?tmem_status\s+(tmem_\w+)\s*\(([^;]*)\)')
    bad = 0
    for h, src in sources.items():
        for m in decl.finditer(src):
            doc = m.group(1)
            for d in status_fn.finditer(m.group(2)):
                outs = out_params(d.group(2), handles)
                if outs and not FAILURE_NOTE.search(doc):
                    line = src[:m.start(2)].count('\n') + 1
                    print(f'{h}:{line}: {d.group(1)}: no "on failure" for {", ".join(outs)}')
                    bad += 1
    if bad:
        return 1
    print('PASS: every out-parameter function states its outputs on failure')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
