#!/usr/bin/env bash
# Fails if a binary keeps an ISA-extension copy of a shared (weak/COMDAT) function.
#
# *_avx512.cc / *_avx2.cc files are compiled with ISA flags. An inline or template function from a
# header (std::vector, a codec, AlignedBuffer, ...) instantiated in such a file is a weak symbol,
# and the linker keeps one copy of it for the whole program: if it kept the AVX-512 copy, baseline
# code calling it would execute AVX-512 instructions on a CPU without them. This check lists every
# weak function of each binary whose code uses vector or BMI2/F16C/FMA instructions.
set -euo pipefail
status=0
for bin in "$@"; do
  weak=$(mktemp)
  nm -C "$bin" | awk '$2=="W"||$2=="V"{$1="";$2="";sub(/^  /,"");print}' | sort -u > "$weak"
  leaks=$(objdump -d --no-show-raw-insn -C "$bin" |
    awk '/^[0-9a-f]+ <.*>:$/{fn=$0; sub(/^[0-9a-f]+ </,"",fn); sub(/>:$/,"",fn); next}
         /%ymm|%zmm|%k[1-7]|vfmadd|vfnmadd|shlx|shrx|sarx|andn |bzhi|pdep|pext|vcvtph2ps/{print fn}' |
    sort -u | grep -Fxf "$weak" || true)
  rm -f "$weak"
  if [ -n "$leaks" ]; then
    echo "$bin: shared functions compiled with ISA extensions:" >&2
    echo "$leaks" | head -20 >&2
    status=1
  else
    echo "$bin: no ISA-specific copy of a shared function"
  fi
done
exit $status
