#!/usr/bin/env python3
"""Probe llvm-objdump (the independent oracle) with raw gfx942 instruction words.

Usage: objdump_probe.py OUT.json [LISTING.txt]
       MCPU=gfx950 objdump_probe.py OUT950.json [LISTING950.txt emu/tests/data/llvm_probe.txt]
Builds, for every encoding and every opcode value, one instruction with distinctive operand
fields (dst 10, src0 20, src1 30, src2 40, sdst 50), disassembles them all with the toolchain's
llvm-objdump --mcpu=$MCPU (default gfx942) and records the printed text per (encoding, opcode). The emulator's
opcode tables (emu/src/decode/tables.rs) are generated from this record by gen_tables.py, so
mnemonics and operand layouts come from LLVM's disassembler, not from hand transcription. With a
second argument it also writes the listing emu/tests/data/llvm_probe.txt (probe slot words and
LLVM's text) that tests/disasm_llvm.rs replays against the emulator's printer. For gfx950 the
probes also cover the MUBUF `lds` forms and every f8f6f4 MFMA operand format, and with a third
argument (the gfx942 listing) the listing keeps only the lines gfx942's lacks
(emu/tests/data/llvm_probe_gfx950.txt).
"""
import json, os, re, struct, subprocess, sys

SYSROOT = subprocess.check_output(["rustc", "--print", "sysroot"], text=True).strip()
OBJDUMP = os.path.join(SYSROOT, "lib/rustlib/x86_64-unknown-linux-gnu/bin/llvm-objdump")
NOP = 0xBF800000
MCPU = os.environ.get("MCPU", "gfx942")
SLOT = 16  # bytes per probe slot (max probed instruction is 8 bytes, padded with s_nop)

def elf(text: bytes) -> bytes:
    shstr = b"\0.text\0.shstrtab\0"
    ehsize, shentsize = 64, 64
    text_off = ehsize
    shstr_off = text_off + len(text)
    sh_off = (shstr_off + len(shstr) + 7) & ~7
    hdr = b"\x7fELF" + bytes([2, 1, 1, 64, 3]) + bytes(7)
    hdr += struct.pack("<HHIQQQIHHHHHH", 1, 224, 1, 0, 0, sh_off, 0x4C, ehsize, 0, 0, shentsize, 3, 2)
    body = hdr + text + shstr
    body += bytes(sh_off - len(body))
    sh = bytes(64)
    sh += struct.pack("<IIQQQQIIQQ", 1, 1, 6, 0, text_off, len(text), 0, 0, 4, 0)
    sh += struct.pack("<IIQQQQIIQQ", 7, 3, 0, 0, shstr_off, len(shstr), 0, 0, 1, 0)
    return body + sh

def probes():
    out = []  # (enc, op, variant, words)
    for op in range(0x60):
        out.append(("SOP2", op, "", [0x80000000 | op << 23 | 10 << 16 | 30 << 8 | 20]))
    for op in range(0x1D):
        out.append(("SOPK", op, "", [0xB0000000 | op << 23 | 10 << 16 | 0x1234]))
    for op in range(256):
        out.append(("SOP1", op, "", [0xBE800000 | 10 << 16 | op << 8 | 20]))
    for op in range(128):
        out.append(("SOPC", op, "", [0xBF000000 | op << 16 | 30 << 8 | 20]))
    for op in range(128):
        out.append(("SOPP", op, "", [0xBF800000 | op << 16 | 3]))
        out.append(("SOPP", op, "z", [0xBF800000 | op << 16]))
    for op in range(256):
        out.append(("SMEM", op, "", [0xC0000000 | op << 18 | 1 << 17 | 16 << 6 | 10, 0x10]))
        out.append(("SMEM", op, "z", [0xC0000000 | op << 18, 0]))
        out.append(("SMEM", op, "d", [0xC0000000 | op << 18 | 16 << 6, 0]))
    for op in range(0x3F):
        out.append(("VOP2", op, "", [op << 25 | 10 << 17 | 30 << 9 | (256 + 20)]))
    out.append(("VOP1", 0, "nop", [0x7E000000]))
    for op in range(256):
        out.append(("VOP1", op, "", [0x7E000000 | 10 << 17 | op << 9 | (256 + 20)]))
    for op in range(256):
        out.append(("VOPC", op, "", [0x7C000000 | op << 17 | 30 << 9 | (256 + 20)]))
    for op in range(0x380):
        out.append(("VOP3", op, "", [0xD0000000 | op << 16 | 10, (256 + 20) | (256 + 30) << 9 | (256 + 40) << 18]))
        out.append(("VOP3", op, "sdst", [0xD0000000 | op << 16 | 50 << 8 | 10, (256 + 20) | (256 + 30) << 9 | (256 + 40) << 18]))
        # abs on all three sources (neg is probed separately: LLVM prints -|x| for both)
        for i in range(3):
            out.append(("VOP3", op, "abs%d" % i, [0xD0000000 | op << 16 | 1 << (8 + i) | 10, (256 + 20) | (256 + 30) << 9 | (256 + 40) << 18]))
            out.append(("VOP3", op, "neg%d" % i, [0xD0000000 | op << 16 | 10, (256 + 20) | (256 + 30) << 9 | (256 + 40) << 18 | 1 << (29 + i)]))
        for bitsel in (0xF, 0x8, 0x1, 0x3, 0xC):
            out.append(("VOP3", op, "opsel%x" % bitsel, [0xD0000000 | op << 16 | bitsel << 11 | 10, (256 + 20) | (256 + 30) << 9 | (256 + 40) << 18]))
    for op in range(128):
        # opsel_hi = 1 for all sources (the default printed as nothing)
        out.append(("VOP3P", op, "", [0xD3800000 | op << 16 | 1 << 14 | 10, (256 + 20) | (256 + 30) << 9 | (256 + 40) << 18 | 3 << 27]))
        # MAI form with acc_cd (bit 15) set
        out.append(("VOP3P", op, "acc", [0xD3800000 | op << 16 | 1 << 15 | 10, (256 + 20) | (256 + 30) << 9 | (256 + 40) << 18]))
    for op in range(256):
        for var, (d0, d1, vd) in (("", (30, 40, 10)), ("novdst", (30, 40, 0)), ("nod1", (30, 0, 10)),
                                  ("d0", (30, 0, 0)), ("vdst", (0, 0, 10)), ("addr", (0, 0, 0))):
            out.append(("DS", op, var, [0xD8000000 | op << 17 | 0x0403, 20 | d0 << 8 | d1 << 16 | vd << 24]))
    for seg, name in ((0, "FLAT"), (1, "SCRATCH"), (2, "GLOBAL")):
        for op in range(128):
            out.append((name, op, "", [0xDC000000 | op << 18 | seg << 14 | 8, 20 | 30 << 8 | 0x7F << 16 | 10 << 24]))
            out.append((name, op, "s0", [0xDC000000 | op << 18 | seg << 14 | 8, 20 | 30 << 8 | 0 << 16 | 10 << 24]))
            out.append((name, op, "s0nod", [0xDC000000 | op << 18 | seg << 14 | 8, 20 | 0 << 8 | 0 << 16 | 10 << 24]))
            out.append((name, op, "s0novd", [0xDC000000 | op << 18 | seg << 14 | 8, 20 | 30 << 8 | 0 << 16 | 0 << 24]))
            if seg != 0:
                out.append((name, op, "saddr", [0xDC000000 | op << 18 | seg << 14 | 8, 20 | 30 << 8 | 40 << 16 | 10 << 24]))
    for op in range(128):
        out.append(("MUBUF", op, "", [0xE0000000 | op << 18 | 1 << 12 | 8, 20 | 30 << 8 | (40 // 4) << 16 | 50 << 24]))
    if MCPU == "gfx950":
        for op in range(128):
            out.append(("MUBUF", op, "lds", [0xE0000000 | op << 18 | 1 << 16 | 1 << 12 | 8, 20 | 30 << 8 | (40 // 4) << 16 | 50 << 24]))
        # Block-scaled MFMAs: v_mfma_ld_scale_b32 prefix (scales v50, v51; op_sel bits 11-13,
        # op_sel_hi bit 14 and w1 bits 27-28) + the f8f6f4 MFMA with w0 bit 11 set.
        for op in (0x2D, 0x2E):
            for sel in range(16):
                for hi01 in range(4):
                    for fmt in ((0, 0), (4, 2)):
                        pre = [0xD3AC0000 | (sel & 7) << 11 | (sel >> 3) << 14, (256 + 50) | (256 + 51) << 9 | hi01 << 27]
                        mf = [0xD3800000 | op << 16 | 1 << 15 | 1 << 11 | fmt[0] << 8 | 10, (256 + 20) | (256 + 30) << 9 | (256 + 40) << 18 | fmt[1] << 29]
                        out.append(("VOP3P", 0x2C, "scale%d_%d_%d_%d%d" % (op, sel, hi01, *fmt), pre + mf))
        for op in (0x2D, 0x2E):
            for cbsz in range(6):
                for blgp in range(6):
                    out.append(("VOP3P", op, "fmt%d%d" % (cbsz, blgp),
                                [0xD3800000 | op << 16 | 1 << 15 | cbsz << 8 | 10, (256 + 20) | (256 + 30) << 9 | (256 + 40) << 18 | blgp << 29]))
    return out

def main():
    ps = probes()
    text = bytearray()
    for _, _, _, words in ps:
        slot = list(words) + [NOP] * (SLOT // 4 - len(words))
        text += b"".join(struct.pack("<I", w) for w in slot)
    path = "/tmp/objdump_probe.elf"
    with open(path, "wb") as f:
        f.write(elf(bytes(text)))
    dis = subprocess.check_output([OBJDUMP, "-d", "--mcpu=" + MCPU, path], text=True)
    by_addr = {}
    for line in dis.splitlines():
        m = re.match(r"^\s*(.*?)\s*// ([0-9A-F]{12}):", line)
        if not m:
            continue
        by_addr[int(m.group(2), 16)] = m.group(1)
    rec = []
    for i, (enc, op, var, words) in enumerate(ps):
        t = by_addr.get(i * SLOT, "")
        rec.append({"enc": enc, "op": op, "variant": var, "words": words, "text": t})
    with open(sys.argv[1], "w") as f:
        json.dump(rec, f, indent=0)
    if len(sys.argv) > 2:
        skip = set(open(sys.argv[3]).read().splitlines()) if len(sys.argv) > 3 else set()
        out, seen = [], set()
        for x in rec:
            t = x["text"]
            if not t or "unknown" in t or t.startswith(".long"):
                continue
            if t.startswith("s_nop") and not (x["enc"] == "SOPP" and x["op"] == 0):
                continue
            words = list(x["words"]) + [NOP] * (SLOT // 4 - len(x["words"]))
            if tuple(words) in seen:
                continue
            seen.add(tuple(words))
            line = " ".join("%08X" % w for w in words) + "\t" + t
            if line in skip:
                continue
            out.append(" ".join("%08X" % w for w in words) + "\t" + t)
        with open(sys.argv[2], "w") as f:
            f.write("# Generated by objdump_probe.py: 16-byte probe slots and the text llvm-objdump -d --mcpu=%s\n" % MCPU)
            f.write("# (LLVM 22.1.4) prints for the first instruction of each.\n")
            f.write("\n".join(out) + "\n")

main()
