#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager (and, for the stack's node, kubelet,
# kube-scheduler and kube-proxy) from Debian's `kubernetes` source package (DESIGN §7) and caches
# the binaries under $BERTH_CACHE/bin. Debian ships none of them, only the source. Each binary is built once: one already in the cache is left alone.
#
# Usage: build-kubernetes.sh [NAME...]   (default: kube-apiserver kube-controller-manager)
#
# Not safe to run twice at once (both would compile into the same tree): hack/stack.sh runs it
# under flock.
set -euo pipefail
BERTH_CACHE=${BERTH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/berth}
bin="$BERTH_CACHE/bin"

log() { echo "[build-kubernetes] $*"; }

names=("$@")
((${#names[@]})) || names=(kube-apiserver kube-controller-manager)
missing=()
for name in "${names[@]}"; do
  case "$name" in
    kube-apiserver | kube-controller-manager | kubelet | kube-scheduler | kube-proxy) ;;
    *)
      echo "build-kubernetes.sh: unsupported binary '$name'" >&2
      exit 2
      ;;
  esac
  if [[ -x "$bin/$name" ]]; then
    echo "$name: cached at $bin/$name"
  else
    missing+=("$name")
  fi
done
((${#missing[@]})) || exit 0

work="$BERTH_CACHE/build/kubernetes"
mkdir -p "$work" "$bin"

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

# The GOPATH link is made last, so its presence means the tree is unpacked and patched. The tree
# also holds the Go build cache (_output/local/go/cache), which makes later builds much faster.
src="$work/src"
if [[ ! -L "$src/.go/src/k8s.io/kubernetes" ]]; then
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

# Negative OOM score adjustments need CAP_SYS_RESOURCE, which some machines (this kind of VM)
# withhold even from root: the kubelet's pod sandbox (-998) and Guaranteed pods' containers
# (-997) would fail to start there. The stack's node only runs Berth's own pods, so both get 0.
if [[ " ${missing[*]} " == *" kubelet "* ]]; then
  sed -i 's/defaultSandboxOOMAdj int = -998/defaultSandboxOOMAdj int = 0/' \
    "$src/pkg/kubelet/dockershim/docker_sandbox.go"
  sed -i 's/guaranteedOOMScoreAdj int = -997/guaranteedOOMScoreAdj int = 0/' \
    "$src/pkg/kubelet/qos/policy.go"
fi

# Measured on 2 cores: kube-apiserver 4.5 minutes from nothing; kube-controller-manager 52 s more
# once the apiserver's packages are in the build cache (it shares most of them).
log "compiling ${missing[*]} (1 to 6 minutes on 2 cores, once; log: $work/make.log)"
cd "$src"
mkdir -p "$work/home"
what=("${missing[@]/#/cmd/}")
GOPATH="$src/.go" CGO_ENABLED=0 HOME="$work/home" GOFLAGS=-mod=vendor make WHAT="${what[*]}" >"$work/make.log" 2>&1 || {
  tail -30 "$work/make.log"
  exit 1
}
for name in "${missing[@]}"; do
  cp "$src/_output/bin/$name" "$bin/$name.tmp" && mv "$bin/$name.tmp" "$bin/$name"
  log "built $bin/$name"
done
