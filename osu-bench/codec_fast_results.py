#!/usr/bin/env python3
# After osu-bench/codec-fast.sh: merges its mpizip.json (both coders) and anchor.json into one results
# file and prints the markdown table of osu-bench/results/README.md (bf16/fp32/e5m2 x uniform/normal x
# 1, 16, 64 MiB and 1 GiB: ratios, compress and decompress us of ans / fast / the anchor, fast GB/s).
# Then the fast mode's targets (issue 36, bf16 uniform), each met or missed with its figure.
#   osu-bench/codec_fast_results.py OUT_DIR COMMIT RESULT_JSON [DATE]
# DATE defaults to the date the benchmark wrote into mpizip.json.
import json, sys, os
d, commit, outp = sys.argv[1], sys.argv[2], sys.argv[3]
m = json.load(open(os.path.join(d, 'mpizip.json')))
try:
    a = json.load(open(os.path.join(d, 'anchor.json')))
except Exception as e:
    a = {'rows': []}
arows = a['rows'] if isinstance(a, dict) else a
res = {
  'gpu': m.get('gpu'), 'commit': commit, 'date': sys.argv[4] if len(sys.argv) > 4 else m.get('date'),
  'commands': {
    'mpizip': 'osu-bench/codec --types=bf16,fp32,e5m2 --data=uniform,normal --min=1M --max=1G --mode=ans,fast --json=mpizip.json',
    'anchor': 'anchor_bench --types bf16,fp32,e5m2 --dists uniform,normal --sizes 1,16,64,1024 --json anchor.json',
    'script': 'osu-bench/codec-fast.sh BIN OUT',
  },
  'note': 'v18 (kernels/NOTES-codec-gpu.md): the fast mode (mode fast, format version 3) beside the ANS coder (mode ans) and the anchor, one call, same data.',
  'mpizip': m['rows'], 'anchor': arows,
}
try:  # the device-to-device copy of the same call, the memory ceiling (osu-bench/copy_bw)
    lines = [l.split() for l in open(os.path.join(d, 'copy_bw.txt')) if l.strip() and not l.startswith('#')]
    res['copy_1GiB_MBps'] = float(lines[-1][1])
except Exception:
    pass
json.dump(res, open(outp, 'w'), indent=1)
# table
def find(rows, t, dd, b, mode=None):
    for r in rows:
        if r.get('type') == t and r.get('data') == dd and int(r.get('bytes')) == b and (mode is None or r.get('mode') == mode):
            return r
print('| type | data | size | ans ratio | fast ratio | anchor ratio | compress us ans / fast / anchor | decompress us ans / fast / anchor | fast GB/s c / d | anchor time / ans time c / d |')
print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
for t in ['bf16', 'fp32', 'e5m2']:
    for dd in ['uniform', 'normal']:
        for mb in [1, 16, 64, 1024]:
            b = mb << 20
            A = find(m['rows'], t, dd, b, 'ans'); F = find(m['rows'], t, dd, b, 'fast'); N = find(arows, t, dd, b)
            if not F: continue
            f = lambda r, k: ('%.1f' % r[k]) if r and k in r else '-'
            fr = lambda r: ('%.4f' % r['ratio']) if r else '-'
            sz = '1 GiB' if mb == 1024 else '%d MiB' % mb
            q = lambda k: ('%.2f' % (N[k] / A[k])) if A and N and k in A and k in N else '-'
            print('| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s / %s / %s | %.0f / %.0f | %s / %s |' % (t, dd, sz, fr(A), fr(F), fr(N),
                f(A,'compress_us'), f(F,'compress_us'), f(N,'compress_us'), f(A,'decompress_us'), f(F,'decompress_us'), f(N,'decompress_us'),
                b / F['compress_us'] / 1000, b / F['decompress_us'] / 1000, q('compress_us'), q('decompress_us')))
# The fast mode's targets, bf16 uniform.
print()
fr_rows = [r for r in m['rows'] if r.get('type') == 'bf16' and r.get('data') == 'uniform' and r.get('mode') == 'fast']
if fr_rows:
    worst = max(r['ratio'] for r in fr_rows)
    print('- ratio <= 0.75 (every size): %s, %.4f at most' % ('met' if worst <= 0.75 else 'MISSED', worst))
    G = find(m['rows'], 'bf16', 'uniform', 1 << 30, 'fast')
    if G:
        for k, name in (('compress_us', 'compress'), ('decompress_us', 'decompress')):
            gbs = (1 << 30) / G[k] / 1000
            print('- %s >= 1,800 GB/s at 1 GiB: %s, %.0f GB/s (%.1f us)' % (name, 'met' if gbs >= 1800 else 'MISSED', gbs, G[k]))
    M = find(m['rows'], 'bf16', 'uniform', 1 << 20, 'fast')
    if M:
        for k, name in (('compress_us', 'compress'), ('decompress_us', 'decompress')):
            print('- %s <= 8 us at 1 MiB: %s, %.1f us' % (name, 'met' if M[k] <= 8 else 'MISSED', M[k]))
