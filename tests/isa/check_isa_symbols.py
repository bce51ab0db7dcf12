#!/usr/bin/env python3
"""Checks that libember.so runs on a baseline x86-64-v2 CPU outside the dispatched kernels.

Note [CPU dispatch] (src/ember/core/cpu_capability.h): only code in the per-ISA
namespaces ember::kernels::cpu::avx2 / ::avx512 may use AVX, FMA, F16C, BMI or AVX-512
instructions. If a copy of shared inline code compiled for a higher level were the one
the linker kept, baseline code would call it and die with SIGILL on an older CPU. This
disassembles the library and lists every global or weak function outside those
namespaces that uses such instructions. Local functions (a TU's private clones such as
`.constprop.0`) are skipped: only their own translation unit can call them, so one with
AVX code came from, and is called by, a per-ISA kernel file. Usage: check_isa_symbols.py path/to/libember.so
"""
import re
import subprocess
import sys

# Mangled names: anything nested in ember::kernels::cpu::avx2 / ::avx512 (lambdas and
# template instantiations over them included).
ALLOWED = ("3cpu4avx2", "3cpu6avx512")
# VEX/EVEX-encoded instructions (AVX, AVX2, FMA, F16C, AVX-512) all start with 'v' in
# AT&T syntax; the few legacy 'v' instructions are not vector ones.
LEGACY_V = re.compile(r"^(verr|verw|vmcall|vmlaunch|vmresume|vmxoff|vmxon|vmread|vmwrite|vmptrld|vmptrst|vmclear|vmfunc)$")
BMI = re.compile(r"^(shlx|shrx|sarx|rorx|mulx|pdep|pext|andn|bextr|blsi|blsmsk|blsr|bzhi|lzcnt|movbe)[a-z]?$")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    lib = sys.argv[1]
    nm = subprocess.run(["nm", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    local = {parts[2] for parts in (l.split() for l in nm.splitlines()) if len(parts) == 3 and parts[1] == "t"}
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", lib],
                         check=True, capture_output=True, text=True).stdout
    func = None
    offenders = {}
    dispatched_avx = 0
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            func = m.group(1)
            continue
        parts = line.split("\t")
        if func is None or len(parts) < 2:
            continue
        mnemonic = parts[1].strip().split(" ")[0]
        if not mnemonic:
            continue
        higher = (mnemonic.startswith("v") and not LEGACY_V.match(mnemonic)) or BMI.match(mnemonic)
        if not higher:
            continue
        if any(a in func for a in ALLOWED):
            dispatched_avx += 1
        elif func not in local:
            offenders.setdefault(func, mnemonic)
    if dispatched_avx == 0:
        print("FAIL: no AVX instruction found in the avx2/avx512 kernels: were they built per level?")
        return 1
    if offenders:
        print(f"FAIL: {len(offenders)} functions outside the per-ISA namespaces use instructions "
              "beyond x86-64-v2 (SIGILL on older CPUs):")
        names = sorted(offenders)[:40]
        demangled = subprocess.run(["c++filt"], input="\n".join(names), check=True, capture_output=True,
                                   text=True).stdout.splitlines()
        for f, d in zip(names, demangled):
            print(f"  {offenders[f]:10s} in {d}")
        return 1
    print(f"ok: {dispatched_avx} AVX/BMI instructions, all inside ember::kernels::cpu::avx2/avx512")
    return 0


if __name__ == "__main__":
    sys.exit(main())
