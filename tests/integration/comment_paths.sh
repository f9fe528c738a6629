#!/usr/bin/env bash
# comment_paths: every file path of this repository that a source file
# names (in a comment or a string: "see sampler/unwind/table.c") exists,
# so a reader who follows one lands somewhere. System headers included as
# <bpf/...> are libbpf's, not ours, and are left out; so are paths a test
# builds in a scratch tree of its own. Likewise every BPF map a source
# names (`*_procs`, `*_scratch`, `*_ends`, `*_cache`...) is one the BPF
# objects define (issue 49: maps renamed under comments that kept the old
# names).
# About 1 s.
# timeout: 60
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT" || exit 1
FAILS=0 n=0
while read -r f p; do
	n=$((n + 1))
	[[ -e $p ]] && continue
	echo "FAIL: $f names $p, which does not exist"
	FAILS=$((FAILS + 1))
done < <(git ls-files '*.c' '*.h' '*.sh' '*.bash' '*.py' 'Makefile' | grep -v '^bpf/vmlinux.h$' |
	xargs grep -oHE '\b(bpf|sampler|store|fs|tests|scripts)/[A-Za-z0-9_./-]+\.(c|h|sh|bash|py|md|proto)\b' |
	grep -vE ':bpf/(bpf|bpf_helpers|bpf_tracing|bpf_core_read|libbpf)\.h$' |
	grep -vE '^tests/integration/runner_timeout\.sh:tests/integration/hang\.sh$' |
	sed 's/:/ /' | sort -u)
echo "$n references to files checked"
((n > 100)) || { echo "FAIL: only $n references found: the scan is broken"; FAILS=$((FAILS + 1)); }

# (tests/bpf/test_maps.h's TEST_PROCS and TEST_SCRATCH define maps too)
maps=$({
	grep -rhoE '^\} *[a-z_0-9]+ SEC\("\.maps"\)' bpf tests/bpf | sed -E 's/^\} *//; s/ SEC.*//'
	grep -rhoE '^TEST_(PROCS|SCRATCH)\([a-z_0-9]+,' tests/bpf | sed -E 's/^TEST_[A-Z]+\(//; s/,$//'
} | sort -u)
nm=$(grep -c . <<<"$maps")
((nm >= 20)) || { echo "FAIL: only $nm BPF maps found: the scan is broken"; FAILS=$((FAILS + 1)); }
k=0
while IFS=: read -r f l m; do
	k=$((k + 1))
	grep -qx "$m" <<<"$maps" && continue
	echo "FAIL: $f:$l names the BPF map $m, which no BPF object defines"
	FAILS=$((FAILS + 1))
done < <(git ls-files '*.c' '*.h' | grep -v '^bpf/vmlinux.h$' |
	xargs grep -noE '\b(py|hs|rb|v8|unw|rt)_(procs|scratch|ends|cache|lcache|mcache|events|seen|files|rows|rules|chunks|fn_cache)\b')
echo "$k mentions of $nm BPF maps checked"
((FAILS == 0)) && echo "all passed" || echo "$FAILS checks FAILED"
((FAILS == 0))
