#!/bin/sh
# Rewrites Tests/WedjatAnalysisTests/Golden/* with the current `wedjat report` output on
# Tests/WedjatAnalysisTests/Fixtures/run1 (GoldenReportTests compares against them).
# Run from the test directory with a relative path, so the paths in the reports are the
# portable "Fixtures/run1/..." the test expects. Review the diff afterwards: a golden file
# only proves that the output did not change, not that it is right.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
swift build --scratch-path .build-cli --product wedjat-cli
cli="$(swift build --scratch-path .build-cli --show-bin-path)/wedjat-cli"
cd Tests/WedjatAnalysisTests
"$cli" report --color never Fixtures/run1 > Golden/report.txt
"$cli" report --format json Fixtures/run1 > Golden/report.json
cd "$root"
git diff --stat -- Tests/WedjatAnalysisTests/Golden 2>/dev/null || true
echo "regenerated Tests/WedjatAnalysisTests/Golden/report.txt and report.json"
