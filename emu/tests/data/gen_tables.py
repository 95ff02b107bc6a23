#!/usr/bin/env python3
"""Generate emu/src/decode/tables.rs from the llvm-objdump probe record (objdump_probe.py).

Usage: objdump_probe.py /tmp/probe.json && MCPU=gfx950 objdump_probe.py /tmp/probe950.json &&
       gen_tables.py /tmp/probe.json /tmp/probe950.json > emu/src/decode/tables.rs
Each (encoding, opcode) that LLVM's gfx942 disassembler accepts becomes one table row: the
printed mnemonic, the base operation (mnemonic without _e32/_e64) and the operand slots in
printed order, each naming the instruction field it comes from, its register class and width.
The gfx950 probe adds an overlay: the rows gfx950 decodes differently from gfx942 or only
gfx950 has (`lookup_gfx950`), and the gfx942 opcodes gfx950 no longer has (`removed_on_gfx950`).
"""
import json, re, sys

ok = lambda t: t and not t.startswith("s_nop") and "unknown" not in t and not t.startswith(".long")

# Variant preference per encoding (first that decodes wins).
PREF = {
    "SOPP": ["", "z"],
    "SMEM": ["", "d", "z"],
    "DS": ["", "novdst", "nod1", "d0", "vdst", "addr"],
    "FLAT": ["", "s0", "s0nod", "s0novd"],
    "GLOBAL": ["", "s0", "s0nod", "s0novd", "saddr"],
    "SCRATCH": ["", "s0", "s0nod", "s0novd", "saddr"],
}
ops = {}

def build(rec):
    global FIELDS, ENC, FIELD_RS, pick, split_ops
    by = {}
    for r in rec:
        if ok(r["text"]) or (r["enc"] == "SOPP" and r["op"] == 0):
            by.setdefault((r["enc"], r["op"]), {})[r["variant"]] = r["text"]

    # field number -> field name, per encoding
    FIELDS = {
        "SOP2": {10: "D", 20: "S0", 30: "S1"}, "SOPK": {10: "D"}, "SOP1": {10: "D", 20: "S0"},
        "SOPC": {20: "S0", 30: "S1"}, "SOPP": {}, "SMEM": {16: "D", 20: "B"},
        "VOP2": {10: "D", 20: "S0", 30: "S1"}, "VOP1": {10: "D", 20: "S0"}, "VOPC": {20: "S0", 30: "S1"},
        "VOP3": {10: "D", 20: "S0", 30: "S1", 40: "S2", 50: "SD"},
        "VOP3P": {10: "D", 20: "S0", 30: "S1", 40: "S2"},
        "DS": {10: "D", 20: "A", 30: "D0", 40: "D1"},
        "FLAT": {10: "D", 20: "A", 30: "DA", 40: "SA"}, "GLOBAL": {10: "D", 20: "A", 30: "DA", 40: "SA"},
        "SCRATCH": {10: "D", 20: "A", 30: "DA", 40: "SA"},
        "MUBUF": {30: "DA", 20: "A", 40: "R", 50: "SO"},
    }
    ENC = {"SOP2": "Sop2", "SOPK": "Sopk", "SOP1": "Sop1", "SOPC": "Sopc", "SOPP": "Sopp", "SMEM": "Smem",
           "VOP2": "Vop2", "VOP1": "Vop1", "VOPC": "Vopc", "VOP3": "Vop3", "VOP3P": "Vop3p", "DS": "Ds",
           "FLAT": "Flat", "GLOBAL": "Global", "SCRATCH": "Scratch", "MUBUF": "Mubuf"}
    FIELD_RS = {"D": "Dst", "S0": "Src0", "S1": "Src1", "S2": "Src2", "SD": "Sdst", "B": "Base", "A": "Addr",
                "D0": "Data0", "D1": "Data1", "DA": "Data", "SA": "Saddr", "R": "Rsrc", "SO": "Soffset"}

    def pick(enc, vs):
        if enc == "VOP3":
            if "sdst" in vs and re.search(r"s\[50:51\]", vs["sdst"]):
                return vs["sdst"]
            return vs.get("", vs.get("sdst"))
        if enc == "VOP3P":
            return vs.get("", vs.get("acc"))
        for p in PREF.get(enc, [""]):
            if p in vs:
                return vs[p]
        return None

    def split_ops(rest):
        toks, depth, cur = [], 0, ""
        for ch in rest:
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            if ch == "," and depth == 0:
                toks.append(cur.strip()); cur = ""
            else:
                cur += ch
        if cur.strip():
            toks.append(cur.strip())
        return toks

    rows = []
    for (enc, op), vs in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if enc == "VOP1" and op == 0 and "nop" in vs:
            text = vs["nop"]
        else:
            text = pick(enc, vs)
        if text is None:
            continue
        mn, _, rest = text.partition(" ")
        if enc == "VOP1" and op == 0 and mn != "v_nop":
            continue
        # strip trailing modifiers (offset:, offen, abid:, op_sel..., clamp, glc ...): operands end at
        # the first space-separated word after the last comma-separated operand.
        parts = split_ops(rest)
        if parts:
            last = parts[-1].split(" ")
            parts[-1] = last[0]
        slots = []
        for t in parts:
            t = t.strip("|")
            m = re.fullmatch(r"([vas])(\d+)", t) or re.fullmatch(r"([vas])\[(\d+):(\d+)\]", t)
            if m:
                cls = m.group(1)
                lo = int(m.group(2))
                hi = int(m.group(3)) if m.lastindex == 3 else lo
                w = hi - lo + 1
                f = FIELDS[enc].get(lo)
                if f is None and enc == "SMEM":
                    f = "D"
                if f is None and lo == 0 and enc == "VOP3":
                    f = "SD"  # sdst printed as s[0:1] when the probe had no sdst
                if f is None:
                    f = "Z%d" % lo
                slots.append((f, cls, w))
            elif t == "vcc":
                slots.append(("VCC", "s", 2))
            elif t == "off":
                slots.append(("OFF", "s", 0))
            elif re.fullmatch(r"0x[0-9a-f]+|-?\d+(\.\d+)?", t):
                slots.append(("K", "k", 1))
            elif t == "":
                pass
            else:
                slots.append(("T:" + t, "k", 0))
        base = re.sub(r"_e(32|64)$", "", mn)
        ops[base] = True
        opsel = enc == "VOP3" and any("op_sel" in vs.get("opsel%x" % b, "") for b in (0xF, 0x8, 0x1, 0x3, 0xC))
        # Which sources accept abs / neg: the sources LLVM prints with |x| / -x in the probes.
        mods = 0
        if enc == "VOP3":
            for i, reg in enumerate((20, 30, 40)):
                if re.search(r"\|v\[?%d\b" % reg, vs.get("abs%d" % i, "")):
                    mods |= 1 << i
                if re.search(r"-\|?v\[?%d\b" % reg, vs.get("neg%d" % i, "")):
                    mods |= 1 << (i + 3)
        rows.append((enc, op, mn, base, slots, opsel, mods))


    return rows

rows = build(json.load(open(sys.argv[1])))
rows950 = build(json.load(open(sys.argv[2])))

bad = [r for r in rows if any(s[0].startswith("Z") for s in r[4])]
for r in bad:
    print("// unresolved field:", r, file=sys.stderr)

print("// @generated by emu/tests/data/gen_tables.py from llvm-objdump (LLVM 22.1.4, --mcpu=gfx942 and gfx950)")
print("// probes; do not edit by hand.")
print("use super::{Enc, Field, OpInfo, RegClass, Slot};")
print()
print("/// Every operation the gfx942 / gfx950 decoder knows (the mnemonic without an `_e32`/`_e64` suffix).")
print("#[allow(non_camel_case_types, missing_docs)]")
print("#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]")
print("#[repr(u16)]")
print("pub enum Op {")
for b in sorted(ops):
    print("    %s," % b)
print("}")
print()
print("impl Op {")
print("    /// The operation's base mnemonic.")
print("    pub fn name(self) -> &'static str {")
print("        match self {")
for b in sorted(ops):
    print('            Op::%s => "%s",' % (b, b))
print("        }")
print("    }")
print("}")
print()
CLS = {"v": "RegClass::V", "a": "RegClass::A", "s": "RegClass::S", "k": "RegClass::K"}
def slot_rs(s):
    f, c, w = s
    if f.startswith("T:"):
        return 'Slot { field: Field::Text("%s"), class: RegClass::K, width: 0 }' % f[2:]
    fr = {"VCC": "Vcc", "OFF": "Off", "K": "Literal"}.get(f) or FIELD_RS.get(f)
    if fr is None:
        fr = "Unknown"
    return "Slot { field: Field::%s, class: %s, width: %d }" % (fr, CLS[c], w)
print("/// The table row for `(encoding, opcode)`.")
print("pub(super) fn lookup(enc: Enc, op: u16) -> Option<&'static OpInfo> {")
print("    Some(match (enc, op) {")
for enc, op, mn, base, slots, opsel, mods in rows:
    print('        (Enc::%s, %d) => &OpInfo { op: Op::%s, name: "%s", slots: &[%s], opsel: %s, mods: %d },' %
          (ENC[enc], op, base, mn, ", ".join(slot_rs(s) for s in slots), "true" if opsel else "false", mods))
print("        _ => return None,")
print("    })")
print("}")
print()
key = lambda r: (r[0], r[1])
by942 = {key(r): r for r in rows}
by950 = {key(r): r for r in rows950}
print("/// The gfx950 rows that differ from gfx942's (or that only gfx950 has), for `(encoding, opcode)`.")
print("pub(super) fn lookup_gfx950(enc: Enc, op: u16) -> Option<&'static OpInfo> {")
print("    Some(match (enc, op) {")
for k in sorted(by950):
    if by942.get(k) == by950[k]:
        continue
    enc, op, mn, base, slots, opsel, mods = by950[k]
    print('        (Enc::%s, %d) => &OpInfo { op: Op::%s, name: "%s", slots: &[%s], opsel: %s, mods: %d },' %
          (ENC[enc], op, base, mn, ", ".join(slot_rs(s) for s in slots), "true" if opsel else "false", mods))
print("        _ => return None,")
print("    })")
print("}")
print()
print("/// Whether gfx950 no longer has the gfx942 operation `(encoding, opcode)`.")
print("pub(super) fn removed_on_gfx950(enc: Enc, op: u16) -> bool {")
gone = sorted(k for k in by942 if k not in by950)
if gone:
    print("    matches!((enc, op), %s)" % " | ".join("(Enc::%s, %d)" % (ENC[e], o) for e, o in gone))
else:
    print("    false")
print("}")
