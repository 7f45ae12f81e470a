#!/usr/bin/env bash
# Checks the container deployment without a Docker engine:
#  1. docker-compose accepts docker-compose.yml (`docker-compose config -q`),
#     and each profile (fdb, etcd, embedded) holds the roles a cluster needs;
#  2. everything the Dockerfile COPYs/ADDs exists in the build context and is
#     not excluded by .dockerignore;
#  3. no file the flyfs build needs (Go sources, embedded assets of every
#     package ./cmd/flyfs imports, with and without -tags fdb) is excluded by
#     .dockerignore.
# Skips step 1 with a message when docker-compose is not installed (Debian
# package docker-compose).
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
err() { echo "check-compose: $*" >&2; fail=1; }

# --- 1. the compose file --------------------------------------------------
if command -v docker-compose >/dev/null 2>&1; then
    # Roles per profile, read from the resolved file: the first word of each
    # flyfs service's command (services without a profile run with all).
    resolved=""
    if docker-compose -f docker-compose.yml config -q; then
        resolved=$(docker-compose -f docker-compose.yml config)
    else
        err "docker-compose config rejects docker-compose.yml"
    fi
    if [ -z "$resolved" ]; then
        :
    elif [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
        printf '%s\n' "$resolved" | /usr/bin/python3 -c '
import sys, yaml, collections
doc = yaml.safe_load(sys.stdin)
want = {
    "fdb": {"mgmtd": 2, "metad": 2, "storaged": 3, "gateway": 1, "console": 1},
    "etcd": {"mgmtd": 2, "metad": 2, "storaged": 3, "gateway": 1, "console": 1},
    "embedded": {"server": 1},
}
bad = False
for prof, roles in want.items():
    got = collections.Counter()
    stores = collections.Counter()
    for name, svc in doc["services"].items():
        if svc.get("profiles") and prof not in svc["profiles"]:
            continue
        cmd = svc.get("command") or []
        if isinstance(cmd, str):
            cmd = cmd.split()
        if svc.get("image", "").startswith("flyfs") and cmd:
            got[cmd[0]] += 1
            if "--kv" in cmd:
                stores[cmd[cmd.index("--kv") + 1]] += 1
        if "etcd" in svc.get("image", "") and "coreos" in svc.get("image", ""):
            stores["etcd-member"] += 1
        if svc.get("image", "").startswith("foundationdb/"):
            stores["fdb-image"] += 1
    for role, n in roles.items():
        if got[role] < n:
            print(f"profile {prof}: {got[role]} {role} service(s), want {n}", file=sys.stderr)
            bad = True
    if prof == "etcd" and stores["etcd-member"] < 3:
        print("profile etcd: fewer than three etcd members", file=sys.stderr); bad = True
    # The roles that open the store: two mgmtd and two metad.
    if prof == "fdb" and (stores["fdb-image"] < 1 or stores["fdb"] < 4):
        print("profile fdb: no FoundationDB service, or mgmtd/metad not on --kv fdb", file=sys.stderr); bad = True
    for name, svc in doc["services"].items():
        if prof == "fdb" and prof in (svc.get("profiles") or []) and svc.get("image") == "flyfs:fdb":
            if (svc.get("build") or {}).get("args", {}).get("TAGS") != "fdb":
                print(f"service {name}: flyfs:fdb built without TAGS=fdb", file=sys.stderr); bad = True
sys.exit(1 if bad else 0)
' || err "a compose profile lacks a role (see above)"
    else
        echo "check-compose: python3 with PyYAML not found; skipping the per-profile role check"
    fi
else
    echo "check-compose: SKIP docker-compose config: docker-compose is not installed (apt-get install docker-compose)"
fi

# --- 2 and 3. the build context -------------------------------------------
# .dockerignore patterns (comments and blanks dropped), in order; a later
# "!pattern" re-includes.
patterns=()
if [ -f .dockerignore ]; then
    while IFS= read -r line || [ -n "$line" ]; do
        line="${line%%#*}"
        line="$(echo "$line" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')"
        [ -n "$line" ] && patterns+=("$line")
    done < .dockerignore
fi

# excluded PATH: does .dockerignore keep PATH (relative to the context) out?
# A path is out when it or one of its parent directories matches.
excluded() {
    local path="${1#./}" out=1 p neg pat prefix rest
    for p in "${patterns[@]+"${patterns[@]}"}"; do
        neg=0
        pat="$p"
        if [ "${pat#!}" != "$pat" ]; then neg=1; pat="${pat#!}"; fi
        pat="${pat#/}"
        pat="${pat%/}"
        prefix=""
        rest="$path"
        while :; do
            prefix="${prefix:+$prefix/}${rest%%/*}"
            # shellcheck disable=SC2053 # glob match on purpose
            if [[ "$prefix" == $pat ]]; then
                if [ $neg = 1 ]; then out=1; else out=0; fi
                break
            fi
            [ "$rest" = "${rest#*/}" ] && break
            rest="${rest#*/}"
        done
    done
    return $out
}

# Sources of COPY/ADD lines that read the context (not --from=another stage).
while read -r src; do
    [ -z "$src" ] && continue
    if [ "$src" = "." ]; then continue; fi
    if ! compgen -G "$src" >/dev/null; then
        err "Dockerfile copies $src, which is not in the build context"
    elif excluded "$src"; then
        err "Dockerfile copies $src, which .dockerignore excludes"
    fi
done < <(awk '
    toupper($1) == "COPY" || toupper($1) == "ADD" {
        n = 0
        for (i = 2; i <= NF; i++) { if ($i ~ /^--/) { if ($i ~ /^--from/) next; continue } a[++n] = $i }
        if (a[1] ~ /^\[/) next   # JSON form: not used here
        for (i = 1; i < n; i++) print a[i]
    }' Dockerfile)

# Files of every package the binary is built from, both build flavours.
if command -v go >/dev/null 2>&1; then
    module_dir="$(pwd)"
    for tags in "" fdb; do
        while read -r f; do
            rel="${f#"$module_dir"/}"
            [ "$rel" = "$f" ] && continue # outside the module (module cache)
            if excluded "$rel"; then err "the build needs $rel (tags '$tags'), but .dockerignore excludes it"; fi
        done < <(go list -deps -tags "$tags" -f '{{if not .Standard}}{{range .GoFiles}}{{$.Dir}}/{{.}}
{{end}}{{range .CgoFiles}}{{$.Dir}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$.Dir}}/{{.}}
{{end}}{{end}}' ./cmd/flyfs)
    done
    for f in go.mod go.sum; do
        if excluded "$f"; then err ".dockerignore excludes $f"; fi
    done
else
    echo "check-compose: SKIP build-context check of Go sources: go not found"
fi

if [ $fail != 0 ]; then
    echo "check-compose: FAILED" >&2
    exit 1
fi
echo "check-compose: ok"
