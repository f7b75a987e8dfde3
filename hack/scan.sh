#!/usr/bin/env bash
# Checks the SBOM written by hack/sbom.sh against a vulnerability database, with grype.
#
# A scan is only as good as its database, and this script never pretends: when no grype or no
# usable database is at hand (no internet here, so none can be fetched), it says so and exits
# with status 3, distinct from 1 (vulnerabilities at or above the threshold were found).
#
# Usage: hack/scan.sh [SBOM]     (default: build/sbom/my-operator.spdx.json)
# Environment: GRYPE=<path to grype>; GRYPE_DB_CACHE_DIR=<folder holding a database that was
#   imported with `grype db import`>; FAIL_ON=<severity> (default high).
# Exit: 0 scanned, nothing at or above FAIL_ON; 1 found some; 2 usage error; 3 not scanned.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
sbom=${1:-$repo/build/sbom/my-operator.spdx.json}
fail_on=${FAIL_ON:-high}
[ -f "$sbom" ] || { echo "scan: no SBOM at $sbom (write it first: hack/sbom.sh)" >&2; exit 2; }

not_scanned() {
  cat >&2 <<MESSAGE
scan: NOT SCANNED: $1
scan: The SBOM $sbom was NOT checked for known vulnerabilities.
scan: This machine has no internet access, so no vulnerability database can be downloaded here.
scan: To scan, on a machine with a database: grype sbom:$sbom --fail-on $fail_on
scan: (or import one offline: grype db import <archive>, then GRYPE_DB_CACHE_DIR=... $0 $sbom)
MESSAGE
  exit 3
}

grype=${GRYPE:-$(command -v grype || true)}
[ -n "$grype" ] && [ -x "$grype" ] || not_scanned "grype is not installed (set GRYPE=<path>)"

# Never reach out for a database update: use what is there, or say there is none.
export GRYPE_DB_AUTO_UPDATE=false GRYPE_CHECK_FOR_APP_UPDATE=false
if ! status=$("$grype" db status 2>&1); then
  not_scanned "grype has no usable vulnerability database: $(echo "$status" | tail -n1)"
fi
echo "scan: database: $(echo "$status" | tr '\n' ' ')" >&2
"$grype" "sbom:$sbom" --fail-on "$fail_on" -o table
