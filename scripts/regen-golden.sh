#!/bin/sh
# Rewrites Tests/WedjatAnalysisTests/Golden/* with the current `wedjat report` output on the
# fixtures (GoldenReportTests compares against them):
#   Fixtures/run1 -> Golden/report.txt, report.json   (processes, connections, tree)
#   Fixtures/http -> Golden/http.txt, http.json       (http, http_summary, TLS, UDP, unix)
#   Fixtures/vitals -> Golden/vitals.txt, vitals.json (sample, startup: VITALS, STARTUP)
#   Fixtures/stalls -> Golden/stalls.txt, stalls.json (stall, modules, loops: STALLS)
#   Fixtures/shim -> Golden/shim.txt                   (a real run through pyenv's shim: helpers folded)
#   (Golden/stalls.folded comes from programs compiled at test time: WEDJAT_REGEN_GOLDEN=1
#   swift test --filter StallReportTests/testFoldedGolden)
#   Fixtures/export -> Golden/export/fixture.{har,trace.json,otlp.jsonl} (wedjat export)
#   Fixtures/diff/{a,b} -> Golden/diff.txt, diff.json (wedjat diff with thresholds)
# Run from the test directory with a relative path, so the paths in the reports are the
# portable "Fixtures/<name>/..." the tests expect. Review the diff afterwards: a golden file
# only proves that the output did not change, not that it is right (the tests also pin
# hand-checked values).
# WEDJAT_SCRATCH: the build directory to use (default .build-cli).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scratch=${WEDJAT_SCRATCH:-.build-cli}
swift build --scratch-path "$scratch" --product wedjat-cli
cli="$(swift build --scratch-path "$scratch" --show-bin-path)/wedjat-cli"
cd Tests/WedjatAnalysisTests
"$cli" report --color never Fixtures/run1 > Golden/report.txt
"$cli" report --format json Fixtures/run1 > Golden/report.json
"$cli" report --color never Fixtures/http > Golden/http.txt
"$cli" report --format json Fixtures/http > Golden/http.json
"$cli" report --color never Fixtures/vitals > Golden/vitals.txt
"$cli" report --format json Fixtures/vitals > Golden/vitals.json
"$cli" report --color never Fixtures/stalls > Golden/stalls.txt
"$cli" report --format json Fixtures/stalls > Golden/stalls.json
"$cli" report --color never Fixtures/shim > Golden/shim.txt
# diff exits 1 when a threshold is crossed, which these are meant to show.
thresholds="--fail-if ttfb.p99>+10% --fail-if http.5xx_rate>+0.5pp --fail-if rss.peak>+20% --fail-if total.p95@api.local>5ms --fail-if requests<-10%"
"$cli" diff --color never $thresholds Fixtures/diff/a Fixtures/diff/b > Golden/diff.txt || [ $? = 1 ]
"$cli" diff --format json $thresholds Fixtures/diff/a Fixtures/diff/b > Golden/diff.json || [ $? = 1 ]
mkdir -p Golden/export
"$cli" export --har Golden/export/fixture.har --chrome-trace Golden/export/fixture.trace.json \
    --otlp-json Golden/export/fixture.otlp.jsonl Fixtures/export 2>/dev/null
cd "$root"
git diff --stat -- Tests/WedjatAnalysisTests/Golden 2>/dev/null || true
echo "regenerated Tests/WedjatAnalysisTests/Golden/{report,http,vitals}.{txt,json}"
