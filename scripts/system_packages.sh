#!/usr/bin/env bash
# Install the Debian packages the test suite needs, as root (what `.ci/run` runs first):
#   chromium           the real-browser tests (Playwright drives /usr/bin/chromium)
#   fonts-dejavu-core  fonts for the screenshots and the offline report's figures
#   redis-server       tests/hosting start it beside gunicorn and a Celery worker
#   nginx              tests/hosting/test_proxy.py runs compose.yaml's proxy configuration
#                      (its own prefix and port, never the package's service)
#   podman             podman-compose (test extra) needs it to parse compose.yaml
#   r-cran-rms         R with rms: the live comparison of the calibration hierarchy
#                      with rms::val.prob and R's lowess (tests/core/test_measures_hierarchy.py)
# Only what is missing is installed. Without root it prints the apt-get command instead.
set -euo pipefail

need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
fc-list 2>/dev/null | grep -qi dejavu || need+=(fonts-dejavu-core)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# /usr/sbin is not on every PATH, hence the full path.
[ -x /usr/sbin/nginx ] || need+=(nginx)
command -v podman >/dev/null 2>&1 || need+=(podman)
[ -d /usr/lib/R/site-library/rms ] || need+=(r-cran-rms)

if [ "${#need[@]}" -eq 0 ]; then
  echo "system packages: all present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "system packages missing: ${need[*]}; as root: apt-get install --no-install-recommends ${need[*]}" >&2
  exit 2
fi
echo "system packages: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
