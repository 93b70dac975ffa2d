#!/usr/bin/env bash
# Builds the real Kubernetes components the e2e specs run against: kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl and etcd, from the Go module
# proxy, into a cache outside the repository, and reuses them when present.
#
#   spec/e2e/k8s/build.sh            build what is missing, print the bin directory
#   spec/e2e/k8s/build.sh --regen    rewrite go.mod/go.sum from upstream's go.mod
#
# Why a wrapper module: k8s.io/kubernetes requires its staging modules at v0.0.0
# and replaces them with ./staging paths that only exist in its own tree, so it
# cannot be `go install`ed. This module requires it and replaces every staging
# module at the matching published v0.x tag; --regen derives that list from the
# `=> ./staging/...` lines of upstream's own go.mod, never from a typed list.
# etcd's server module is a dependency of Kubernetes already (at the version
# upstream pins), so the same module builds it without a clash.
#
# Only go.mod, go.sum and this script are committed: no binaries, no Kubernetes
# code. The first build downloads ~0.5 GB of modules and takes 10-20 minutes
# on 2 cores; later runs find the binaries and return at once.
set -euo pipefail

K8S_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
here=$(cd "$(dirname "$0")" && pwd)
cache=${DRAENGINE_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/draengine/k8s-$K8S_VERSION}
bin=$cache/bin
COMPONENTS="kube-apiserver kube-controller-manager kube-scheduler kubectl etcd"

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
say() { printf 'k8s-build: %s\n' "$*" >&2; }

command -v go >/dev/null || { say "go is not installed (need go >= 1.26)"; exit 2; }

regen() {
    cd "$here"
    say "deriving the staging replaces from k8s.io/kubernetes@$K8S_VERSION's go.mod"
    local upstream
    upstream=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
               sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    [ -s "$upstream" ] || { say "could not download k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
    rm -f go.mod go.sum
    go mod init draengine.test/k8s >/dev/null 2>&1
    go mod edit -go="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$upstream")"
    go mod edit -require="k8s.io/kubernetes@$K8S_VERSION"
    local n=0 m
    for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$upstream"); do
        go mod edit -replace="$m=$m@$STAGING_VERSION"
        n=$((n + 1))
    done
    say "$n staging modules replaced at $STAGING_VERSION"
    local t
    for t in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
        go mod edit -tool="k8s.io/kubernetes/cmd/$t"
    done
    go mod edit -tool=go.etcd.io/etcd/server/v3
    say "resolving dependencies (go mod tidy)"
    go mod tidy
}

if [ "${1:-}" = "--regen" ]; then regen; exit 0; fi

have_all() {
    local c
    for c in $COMPONENTS; do [ -x "$bin/$c" ] || return 1; done
    "$bin/kube-apiserver" --version 2>/dev/null | grep -q "Kubernetes $K8S_VERSION"
}

if have_all; then
    echo "$bin"
    exit 0
fi

mkdir -p "$bin"
cd "$here"
ver=${K8S_VERSION#v}
ldf="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
ldf="$ldf -X k8s.io/component-base/version.gitMajor=${ver%%.*}"
ldf="$ldf -X k8s.io/component-base/version.gitMinor=$(echo "$ver" | cut -d. -f2)"
ldf="$ldf -X k8s.io/component-base/version.gitTreeState=clean"
ldf="$ldf -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
start=$(date +%s)
say "building Kubernetes $K8S_VERSION components into $bin"
say "(the first build downloads the modules and compiles for 10-20 minutes on 2 cores)"
for c in $COMPONENTS; do
    [ -x "$bin/$c" ] && [ "$c" != kube-apiserver ] && continue
    t0=$(date +%s)
    say "  $c ..."
    if [ "$c" = etcd ]; then
        go build -trimpath -ldflags "-s -w" -o "$bin/.$c.tmp" go.etcd.io/etcd/server/v3
    else
        go build -trimpath -ldflags "$ldf" -o "$bin/.$c.tmp" "k8s.io/kubernetes/cmd/$c"
    fi
    mv "$bin/.$c.tmp" "$bin/$c"
    say "  $c done in $(( $(date +%s) - t0 )) s"
done
have_all || { say "kube-apiserver --version does not print $K8S_VERSION"; exit 1; }
say "built in $(( $(date +%s) - start )) s"
echo "$bin"
