# Simulation of the GPU encoder's words area (kernels/ans_encode.cuh, v6): encode() with its checks
# before each read of symbols, the flat-table fallback, then a decode by docs/FORMAT.md compared with
# the input. python3 kernels/encode_words_sim.py [PB]; SL=320 (the smallest slack) makes the fallback
# fire on the crafted cases; at the default 1536 float-like and random data never need it.
# Simulates the GPU encoder's encode() (ans_encode.cuh, v6) on one block: shared buffer with symbols,
# words growing down from top, the checks, the flat fallback; then decodes (docs/FORMAT.md) and compares.
import random, math
import sys,os; SL=int(os.environ.get("SL","1536")); PB=int(sys.argv[1]) if len(sys.argv)>1 else 10; M=1<<PB; L=1<<16
def words_top(lb,pb):
    b=1<<lb; proven=(b+(b*(pb-8)+b//8)//8+64+15)//16*16
    top=proven if (lb<=12 or proven<b+SL) else b+SL
    return max(top,b+320)
def table_from(sym,flat):
    if flat: return {s:M>>8 for s in range(256)}
    cnt=[0]*256; pres=[0]*256
    for i,s in enumerate(sym):
        pres[s]=1
        if i%4==0: cnt[s]+=1
    n=sum(cnt); sc=M/n
    f={s:max(1,int(cnt[s]*sc+0.5)) for s in range(256) if pres[s]}
    tot=sum(f.values())
    while tot!=M:
        s=max(f,key=lambda s:(f[s],s)); nf=max(1,f[s]+M-tot); tot+=nf-f[s]; f[s]=nf
    return f
def encode(sym,lb,f):
    n=len(sym); top=words_top(lb,PB); buf=bytearray(top); buf[:n]=bytes(sym)
    c={}; run=0
    for s in sorted(f): c[s]=run; run+=f[s]
    x=[L]*32; pos=top; G=(n+31)//32
    def step(g, syms):  # syms: per lane symbol or None; read before any write (as in the kernel)
        nonlocal pos
        emit=[syms[l] is not None and x[l]>=(f[syms[l]]<<(32-PB)) for l in range(32)]
        k=sum(emit); pos-=2*k; assert pos>=0
        j=0
        for l in range(32):
            if emit[l]:
                buf[pos+2*j:pos+2*j+2]=(x[l]&0xFFFF).to_bytes(2,'little'); j+=1; x[l]>>=16
        for l in range(32):
            s=syms[l]
            if s is not None: x[l]=(x[l]//f[s])*M+x[l]%f[s]+c[s]
    def rd(g): return [buf[32*g+l] if 32*g+l<n else None for l in range(32)]
    gl=G-1; step(gl, rd(gl)); g=gl-1
    nxt=[rd(g-u) for u in range(4)] if g>=3 else None
    while g>=3:
        if pos<32*(g+5): return None
        e=nxt
        if g>=7: nxt=[rd(g-4-u) for u in range(4)]
        for u in range(4): step(g-u, e[u])
        g-=4
    while g>=0:
        if pos<32*(g+3): return None
        step(g, rd(g)); g-=1
    return x, bytes(buf[pos:top])
def decode(n,f,x,words):
    c={}; run=0; slot=[0]*M
    for s in sorted(f):
        c[s]=run
        for i in range(f[s]): slot[run+i]=s
        run+=f[s]
    x=list(x); w=[int.from_bytes(words[2*i:2*i+2],'little') for i in range(len(words)//2)]; p=0; out=[]
    for g in range((n+31)//32):
        for l in range(32):
            if 32*g+l>=n: continue
            r=x[l]&(M-1); s=slot[r]; x[l]=f[s]*(x[l]>>PB)+r-c[s]; out.append(s)
        for l in range(32):
            if 32*g+l<n and x[l]<L: x[l]=(x[l]<<16)|w[p]; p+=1
    assert all(v==L for v in x) and p==len(w), "not closed"
    return out
def block(sym,lb):
    f=table_from(sym,False); r=encode(sym,lb,f); fb=False
    if r is None: f=table_from(sym,True); r=encode(sym,lb,f); fb=True; assert r is not None
    assert decode(len(sym),f,*r)==sym
    return fb, len(r[1])/len(sym)
random.seed(1)
B=1<<14
cases={
 'geometric': [min(255,int(random.expovariate(0.7))) +100 for _ in range(B)],
 'uniform256': [random.randrange(256) for _ in range(B)],
 'unsampled': [ (random.randrange(256) if i%4==0 else 7+ (i%3)) for i in range(B)],
 'adversarial': [ (5 if i%4==0 else 200+random.randrange(50)) for i in range(B)],
 'tail-heavy': [100]*(B//2)+[random.randrange(256) for _ in range(B//2)],
 'partial': [random.randrange(256) for _ in range(B-77)],
}
for k,v in cases.items(): print(k, block(v,14), block(v[:4096],12) if k!='partial' else '')
adv=[5 if (i<B//2 or i%4==0) else 200+random.randrange(50) for i in range(B)]
print('adv-tail', block(adv,14), block(adv[:B-45],14), block(adv[B//2:B//2+4096],12))
adv2=[5 if i%4==0 else 200+random.randrange(56) for i in range(B)]
print('adv-all', block(adv2,14), block(adv2[:1000],10))
for S in (6100, 7000):
    adv3=[5]*(B-S)+[ [s for s in range(256) if s!=5][i%255] for i in range(S)]
    random.shuffle(adv3[B-S:]) if False else None
    r=adv3[:B-S]+random.sample(adv3[B-S:],S)
    print('adv-suffix',S, block(r,14), block(r[:B-13],14))
