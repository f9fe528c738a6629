#!/usr/bin/env bash
# timeout: 60 (a few seconds of grep)
# source_refs.sh - what the sources' comments point a reader to exists
# (issue 49): every repository path a comment of the shipped code names
# (bpf/, sampler/, store/, fs/, tests/, scripts/ + a file name), and every
# BPF map a comment names (`*_procs`, `*_scratch`, `*_ends`, `*_cache`...)
# is a map the BPF objects define. A file moved or a map renamed without
# its comments fails here, naming the comment.
. "$(dirname "$0")/lib.bash"

cd "$ROOT" || { echo "FAIL: no ROOT"; exit 1; }
SRC=(bpf sampler store fs main.c cmd.h)

# Paths: a folder of ours, then a file with an extension we write.
missing=()
while IFS=: read -r file line path; do
	[[ -e $path ]] || missing+=("$file:$line: $path")
done < <(grep -rnoE "\b(bpf|sampler|store|fs|tests|scripts)/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(c|h|sh|bash|py|md|js|rb|java|proto)\b" \
	--include=*.c --include=*.h "${SRC[@]}" | grep -vE ":bpf/(bpf|bpf_helpers|bpf_tracing|bpf_core_read|libbpf|bpf_endian)\.h$")
n=$(grep -rhoE "\b(bpf|sampler|store|fs|tests|scripts)/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(c|h|sh|bash|py|md|js|rb|java|proto)\b" \
	--include=*.c --include=*.h "${SRC[@]}" | sort -u | wc -l)
((n > 100)) || fail "only $n distinct paths found in comments: the pattern is broken"
((${#missing[@]} == 0)) && ok "all $n distinct repository paths the sources name exist" ||
	{ fail "${#missing[@]} path(s) named in the sources do not exist"; printf '    %s\n' "${missing[@]:0:10}"; }

# Maps: the names the BPF objects define, then every map-like name the
# sources mention.
maps=$(grep -rhoE "^\} *[a-z_0-9]+ SEC\(\"\.maps\"\)" bpf tests/bpf | sed -E 's/^\} *//; s/ SEC.*//' | sort -u)
nm=$(echo "$maps" | grep -c .)
((nm >= 20)) || fail "only $nm BPF maps found: the pattern is broken"
gone=()
while IFS=: read -r file line name; do
	grep -qx "$name" <<<"$maps" || gone+=("$file:$line: $name")
done < <(grep -rnoE "\b(py|hs|rb|v8|unw|rt)_(procs|scratch|ends|cache|lcache|mcache|events|seen|files|rows|rules|chunks|fn_cache)\b" \
	--include=*.c --include=*.h bpf sampler)
((${#gone[@]} == 0)) && ok "every BPF map the sources name is one of the $nm the objects define" ||
	{ fail "${#gone[@]} mention(s) of BPF maps that do not exist"; printf '    %s\n' "${gone[@]:0:10}"; }

finish
