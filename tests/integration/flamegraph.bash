# flamegraph.bash - flamegraph.pl for the tests that draw our folded.txt
# with it, and readers of the SVG it writes (sourced, not run).
#
# Debian 12 packages no FlameGraph, but Devel::NYTProf
# (libdevel-nytprof-perl, which scripts/deps.sh installs) ships a copy of
# Brendan Gregg's flamegraph.pl, differential (two-column) input included.
# FLAMEGRAPH_PL overrides it; one on PATH comes next.
FLAMEGRAPH_PL=${FLAMEGRAPH_PL:-$(command -v flamegraph.pl || echo /usr/share/perl5/Devel/NYTProf/flamegraph.pl)}

# fg_have: 0 when flamegraph.pl is there; else says where it was looked for.
fg_have() {
	[[ -r $FLAMEGRAPH_PL ]] && return 0
	echo "flamegraph.pl not found at $FLAMEGRAPH_PL (scripts/deps.sh installs libdevel-nytprof-perl; or set FLAMEGRAPH_PL)"
	return 1
}

# fg ARGS...: runs flamegraph.pl (perl, so a copy without the x bit works).
fg() { perl "$FLAMEGRAPH_PL" "$@"; }

# fg_titles SVG: one line per frame, its tooltip: "NAME (COUNT UNIT, P%)",
# or "NAME (COUNT UNIT, P%; +D%)" for a differential graph.
fg_titles() { sed -n 's/.*<title>\(.*\)<\/title>.*/\1/p' "$1"; }

# fg_count SVG NAME: the counts of NAME's frames, added up (flamegraph.pl
# groups the count's digits with commas); "all" is the whole graph.
fg_count() {
	fg_titles "$1" | awk -v f="$2" '{
		i = length($0); while (i > 0 && substr($0, i, 2) != " (") i--
		if (i == 0 || substr($0, 1, i - 1) != f) next
		n = substr($0, i + 2); sub(/ .*/, "", n); gsub(/,/, "", n); s += n; seen = 1
	} END { if (seen) printf "%.0f\n", s; else print 0 }'
}

# fg_delta_sum SVG: the changes in percent a differential graph gives its
# frames, added up. flamegraph.pl puts a stack's change on its leaf frame
# and draws widths from the second column: a stack only in the second
# profile adds its whole share, one only in the first is not drawn.
fg_delta_sum() {
	fg_titles "$1" | awk '{ d = $0; if (!sub(/.*; /, "", d)) next; sub(/%\)$/, "", d); s += d }
		END { printf "%.2f\n", s }'
}
