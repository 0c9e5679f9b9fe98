#!/usr/bin/env bash
# Builds kube-apiserver from Debian's `kubernetes` source package (DESIGN §7) and caches the
# binary under $BERTH_CACHE/bin. Debian ships no kube-apiserver binary, only its source.
set -euo pipefail
BERTH_CACHE=${BERTH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/berth}
out="$BERTH_CACHE/bin/kube-apiserver"
if [[ -x "$out" ]]; then
  echo "kube-apiserver: cached at $out"
  exit 0
fi

log() { echo "[build-apiserver] $*"; }
work="$BERTH_CACHE/build/kubernetes"
mkdir -p "$work" "$BERTH_CACHE/bin"

if ! command -v go >/dev/null || [[ ! -d /usr/share/gocode/src/github.com/modern-go/reflect2 ]]; then
  log "installing golang-go and Debian's reflect2"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q golang-go rsync golang-github-modern-go-reflect2-dev >/dev/null
fi

# A private sources list, so the machine's own apt configuration is left untouched.
apt_state="$work/apt"
mkdir -p "$apt_state/lists/partial"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
  >"$apt_state/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_state/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$apt_state/lists")

cd "$work"
if ! ls kubernetes_*.orig.tar.gz >/dev/null 2>&1; then
  log "downloading the kubernetes source package"
  apt-get "${apt_opts[@]}" update -q >/dev/null
  apt-get "${apt_opts[@]}" source --download-only kubernetes >/dev/null
fi

src="$work/src"
if [[ ! -d "$src/cmd/kube-apiserver" ]]; then
  log "unpacking"
  rm -rf "$src" && mkdir -p "$src"
  tar -xzf kubernetes_*.orig.tar.gz -C "$src" --strip-components=1
  # reflect2 1.0.1 crashes under Go >= 1.18 on the first custom resource; Debian's copy works.
  rm -rf "$src/vendor/github.com/modern-go/reflect2"
  cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$src/vendor/github.com/modern-go/reflect2"
  rm -f "$src/vendor/github.com/modern-go/reflect2/go.mod"
  mkdir -p "$src/.go/src/k8s.io"
  ln -sfn ../../.. "$src/.go/src/k8s.io/kubernetes"
fi

log "compiling kube-apiserver (about 4.5 minutes on 2 cores, once)"
cd "$src"
mkdir -p "$work/home"
GOPATH="$src/.go" CGO_ENABLED=0 HOME="$work/home" GOFLAGS=-mod=vendor make WHAT=cmd/kube-apiserver >"$work/make.log" 2>&1 || {
  tail -30 "$work/make.log"
  exit 1
}
cp "$src/_output/bin/kube-apiserver" "$out.tmp" && mv "$out.tmp" "$out"
log "built $out"
