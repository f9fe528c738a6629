#!/usr/bin/env bash
# timeout: 120 (three times its longest run on a clean clone, stop 48)
# systemd_unit: scripts/proffs.service passes `systemd-analyze verify`
# (with ExecStart pointed at the built binary, since /usr/local/bin/proffs
# is not installed here), and holds none of the options that would give
# the service a private mount namespace: the mount must be visible to the
# whole host (SPEC §3).
. "$(dirname "$0")/lib.bash"
need_bins "$PROFFS"
UNIT=$ROOT/scripts/proffs.service
tmp_dir proffs-unit

# Options that make systemd set up a mount namespace for the service
# (systemd.exec(5), "Sandboxing" and "Paths").
ns_opts='ProtectSystem|ProtectHome|PrivateTmp|PrivateDevices|PrivateMounts|PrivateNetwork|PrivateUsers|PrivateIPC|ProtectKernelTunables|ProtectKernelModules|ProtectKernelLogs|ProtectControlGroups|ProtectClock|ProtectProc|ProcSubset|ProtectHostname|ReadOnlyPaths|ReadWritePaths|InaccessiblePaths|ExecPaths|NoExecPaths|TemporaryFileSystem|BindPaths|BindReadOnlyPaths|RootDirectory|RootImage|MountFlags|MountImages|ExtensionImages|ExtensionDirectories|NetworkNamespacePath|DynamicUser|LogNamespace'
found=$(grep -nE "^[[:space:]]*($ns_opts)[[:space:]]*=" "$UNIT")
[[ -z $found ]] && ok "no mount-namespace options in proffs.service" || fail "mount-namespace options in proffs.service: $found"
grep -q "mount namespace" "$UNIT" && ok "the unit says why there is no sandboxing" || fail "the unit lacks the comment on sandboxing"

if ! command -v systemd-analyze >/dev/null; then
	echo "SKIP: systemd-analyze not installed (Debian package systemd); the option check above passed"
	exit 77
fi
sed "s|/usr/local/bin/proffs|$PROFFS|g" "$UNIT" >"$T/proffs.service"
if out=$(systemd-analyze verify "$T/proffs.service" 2>&1); then
	ok "systemd-analyze verify passes${out:+ (notes: $(echo "$out" | tr '\n' ' '))}"
else
	fail "systemd-analyze verify: $out"
fi
# The check can fail: a unit with a sandboxing option is refused above,
# and a broken unit is refused by systemd-analyze.
printf '[Service]\nExecStart=%s run\nBogusOption=1\n' "$PROFFS" >"$T/broken.service"
out=$(systemd-analyze verify "$T/broken.service" 2>&1)
[[ $out == *BogusOption* ]] && ok "systemd-analyze verify flags a bad option (sanity)" || fail "systemd-analyze verify missed BogusOption: $out"
finish
