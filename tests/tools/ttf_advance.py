"""ttf_advance.py - advance widths of a TrueType font's characters, read
from its own cmap (format 4) and hmtx tables, for tests that check text fits
(tests/cli/svg_fit.sh). advances(path)(ch) is ch's width at 1 px font size."""
import struct, sys
def advances(path):
    d = open(path, "rb").read()
    n = struct.unpack(">H", d[4:6])[0]
    tables = {d[12+16*i:16+16*i].decode(): struct.unpack(">II", d[20+16*i:28+16*i]) for i in range(n)}
    head = tables["head"][0]; upem = struct.unpack(">H", d[head+18:head+20])[0]
    hhea = tables["hhea"][0]; nmet = struct.unpack(">H", d[hhea+34:hhea+36])[0]
    hmtx = tables["hmtx"][0]
    adv = [struct.unpack(">H", d[hmtx+4*i:hmtx+4*i+2])[0] for i in range(nmet)]
    cmap = tables["cmap"][0]; nsub = struct.unpack(">H", d[cmap+2:cmap+4])[0]
    for i in range(nsub):
        pid, eid, off = struct.unpack(">HHI", d[cmap+4+8*i:cmap+12+8*i])
        sub = cmap + off
        if struct.unpack(">H", d[sub:sub+2])[0] == 4 and pid in (0, 3):
            break
    segx2 = struct.unpack(">H", d[sub+6:sub+8])[0]; seg = segx2 // 2
    ends = struct.unpack(f">{seg}H", d[sub+14:sub+14+segx2])
    starts = struct.unpack(f">{seg}H", d[sub+16+segx2:sub+16+2*segx2])
    deltas = struct.unpack(f">{seg}h", d[sub+16+2*segx2:sub+16+3*segx2])
    roff_at = sub+16+3*segx2
    roffs = struct.unpack(f">{seg}H", d[roff_at:roff_at+segx2])
    def glyph(c):
        for k in range(seg):
            if starts[k] <= c <= ends[k]:
                if roffs[k] == 0:
                    return (c + deltas[k]) & 0xFFFF
                a = roff_at + 2*k + roffs[k] + 2*(c - starts[k])
                g = struct.unpack(">H", d[a:a+2])[0]
                return (g + deltas[k]) & 0xFFFF if g else 0
        return 0
    return lambda ch: adv[min(glyph(ord(ch)), nmet-1)] / upem
if __name__ == "__main__":
    for f in sys.argv[1:]:
        a = advances(f)
        print(f, [round(a(chr(c))*1000) for c in range(32, 127)])
