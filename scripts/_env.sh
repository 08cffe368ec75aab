# Shared by scripts/setup, scripts/test, scripts/develop and scripts/bench (sourced, not run).
#
# The project needs Python >= 3.14.2 (Home Assistant 2026.x). Where the host has one, or
# `uv` can install one, the virtual environment lives in .venv and commands run on the host.
# Otherwise (Debian hosts with an older Python) setup builds a Debian sid root with
# debootstrap and every command runs chrooted inside it, in a private mount namespace so
# that nothing stays mounted when the command ends.

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/botpsy"
ROOT="$CACHE/sid-root"
VENV="$REPO/.venv"
ENV_MARKER="$VENV/.botpsy-env"
LLAMA_CPP_PYTHON_VERSION="0.3.36"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# python_ok PYTHON: true when PYTHON runs and is at least 3.14.2.
python_ok() {
  "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 14, 2) else 1)' 2>/dev/null
}

# env_kind: "host" or "chroot", as setup recorded it.
env_kind() {
  if [ -f "$ENV_MARKER" ]; then cat "$ENV_MARKER"; else echo "none"; fi
}

# Paths that must be visible inside the chroot at the same place as on the host.
_bind_paths() {
  echo "$REPO"
  local shared
  shared="$(cd "$REPO/.." && pwd)/shared"
  [ -d "$shared" ] && echo "$shared"
  return 0
}

# Copy the host's network, CA and pip settings into the root, so pip and apt reach the
# same registries as the host does.
_sync_root_config() {
  cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
  cp -L /etc/hosts "$ROOT/etc/hosts" 2>/dev/null || true
  cp -L /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/ssl/certs/host-ca.crt"
  [ -f /etc/pip.conf ] && cp -L /etc/pip.conf "$ROOT/etc/pip.conf"
  if [ -d /etc/xdg/pip ]; then
    mkdir -p "$ROOT/etc/xdg" && cp -rL /etc/xdg/pip "$ROOT/etc/xdg/"
  fi
  return 0
}

# in_root CMD...: run CMD inside the sid root as root, with the repo mounted.
in_root() {
  _sync_root_config
  local binds=() p
  while IFS= read -r p; do binds+=("$p"); done < <(_bind_paths)
  local envs=(HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}"
    PATH="$VENV/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    PIP_CERT=/etc/ssl/certs/host-ca.crt SSL_CERT_FILE=/etc/ssl/certs/host-ca.crt
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/host-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1
    PIP_DEFAULT_TIMEOUT="${PIP_DEFAULT_TIMEOUT:-180}" CI="${CI:-}"
    BOTPSY_ENV=chroot)
  local v
  for v in CMAKE_ARGS BOTPSY_DEVELOP_PORT BOTPSY_MODEL PYTEST_ADDOPTS; do
    [ -n "${!v:-}" ] && envs+=("$v=${!v}")
  done
  unshare --mount --propagation private -- bash -c "$_IN_ROOT_SCRIPT" in_root \
    "$ROOT" "${binds[@]}" -- "${envs[@]}" -- "$@"
}

# Runs inside the private mount namespace: mount what the chroot needs, then enter it.
_IN_ROOT_SCRIPT='
set -e
root="$1"; shift
binds=(); while [ "$1" != "--" ]; do binds+=("$1"); shift; done; shift
envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
mkdir -p "$root/tmp" && mount -t tmpfs tmpfs "$root/tmp"
for b in "${binds[@]}"; do mkdir -p "$root$b"; mount --bind "$b" "$root$b"; done
exec chroot "$root" /usr/bin/env -i "${envs[@]}" "$@"
'

# in_env CMD...: run CMD with the project's virtual environment first on PATH, in the repo.
in_env() {
  case "$(env_kind)" in
    host) (cd "$REPO" && PATH="$VENV/bin:$PATH" BOTPSY_ENV=host "$@") ;;
    chroot) in_root bash -c 'cd "$0" && exec "$@"' "$REPO" "$@" ;;
    *) log "No environment yet: run scripts/setup first."; return 1 ;;
  esac
}
