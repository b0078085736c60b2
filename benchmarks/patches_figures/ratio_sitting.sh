#!/bin/bash
# #50 sitting: beamcrawl before (main d6763dc) / after (lean) against Scrapy, bench50k
cd /work/wt/bench
run() { # name repo python crawlers [env]
  name=$1; repo=$2; py=$3; crawlers=$4; shift 4
  env "$@" /work/wt/lean/.venv/bin/python -m benchmarks.realweb.run --config bench50k --port 18090 --work /tmp/bp \
     --repo $repo --python $py --crawlers $crawlers > /tmp/ratio/$name.log 2>&1
  cp /tmp/bp/results-bench50k.json /tmp/ratio/$name.json
  echo "$(date +%T) $name done" >> /tmp/ratio/progress
}
B="/work/wt/i52 /work/wt/i52/.venv/bin/python"
A="/work/wt/bench /work/wt/lean/.venv/bin/python"
run before1 $B beamcrawl
run after1 $A beamcrawl
run scrapy $A scrapy
run after2 $A beamcrawl
run before2 $B beamcrawl
run after_none $A beamcrawl BEAMCRAWL_PATCHES_OFF=all
echo finished >> /tmp/ratio/progress
