# Sourced by the hack/ensure-*.sh scripts, which print only their answer on stdout: everything here goes to
# stderr.

# apt_install_once <script> <package> <missing> installs Debian's <package> with apt-get (through sudo unless
# root), updating the package lists only when the first try fails. <script> names the caller in its messages;
# <missing> says what is missing, for when there is no apt-get to install it with, which ends the script.
apt_install_once() {
  local script=$1 package=$2 missing=$3 sudo=""
  if ! command -v apt-get >/dev/null; then
    echo "$script: $missing and there is no apt-get to install Debian's $package" >&2
    exit 1
  fi
  [[ $(id -u) == 0 ]] || sudo="sudo"
  echo ">> installing $package with apt-get (once)" >&2
  if ! $sudo apt-get install -y -q "$package" >&2; then
    $sudo apt-get update -q >&2
    $sudo apt-get install -y -q "$package" >&2
  fi
}
