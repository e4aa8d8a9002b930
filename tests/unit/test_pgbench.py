"""The pgbench suite without a server: its settings and the sentence each bad one gets, its command lines, and
the parsing of what pgbench 15 writes (the load's progress and result, the -P 1 progress lines, the summary, the
per-transaction logs cut at the warm-up, aborted clients and failed transactions). The texts below are real: each
was captured from Debian's pgbench 15.18 run against a private Postgres 15 on 127.0.0.1. The runs through
`tool.run` use a stand-in pgbench that replays them; the real one runs in tests/e2e/test_pgbench.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from dbsweep.engines.base import Access
from dbsweep.engines.registry import engine_named
from dbsweep.errors import StepError
from dbsweep.loadclient import StepOutput
from dbsweep.measure import integrity
from dbsweep.suites import registry
from dbsweep.suites.pgbench import Pgbench, PgbenchSettings, logs, output, steps, tool

from .conftest import cli

VERSION = "pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
# The point query of the captured custom runs (slow.sql), and the conflicting update (conflict.sql).
SLOW_SQL = """\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
\\sleep 40 ms
"""
CONFLICT_SQL = """BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;
\\sleep 30 ms
END;
"""

# pgbench -i -s 1 -I dtgvp --quiet (stderr), on a fresh database.
INIT_STDERR = (
    """\
dropping old tables...
NOTICE:  table "pgbench_accounts" does not exist, skipping
NOTICE:  table "pgbench_branches" does not exist, skipping
NOTICE:  table "pgbench_history" does not exist, skipping
NOTICE:  table "pgbench_tellers" does not exist, skipping
creating tables...
generating data (client-side)...
100000 of 100000 tuples (100%) done (elapsed 0.01 s, remaining 0.00 s)
vacuuming...
creating primary keys...
"""  # the line of the phases, split for the width of this file:
    "done in 0.16 s (drop tables 0.00 s, create tables 0.01 s,"
    " client-side generate 0.08 s, vacuum 0.04 s, primary keys 0.03 s).\n"
)

# pgbench -i -s 120 -I dtgvp --quiet over tables it made before: a progress line every 5 s.
INIT_BIG_STDERR = (
    """\
dropping old tables...
creating tables...
generating data (client-side)...
7725400 of 12000000 tuples (64%) done (elapsed 5.14 s, remaining 2.84 s)
12000000 of 12000000 tuples (100%) done (elapsed 7.57 s, remaining 0.00 s)
vacuuming...
creating primary keys...
"""  # the line of the phases, split for the width of this file:
    "done in 10.88 s (drop tables 0.27 s, create tables 0.00 s,"
    " client-side generate 7.74 s, vacuum 0.17 s, primary keys 2.70 s).\n"
)

# pgbench -n -c 2 -j 2 -M prepared -T 3 -P 1 -l -b select-only: stdout...
RUN_STDOUT = """\
pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 1
query mode: prepared
number of clients: 2
number of threads: 2
maximum number of tries: 1
duration: 3 s
number of transactions actually processed: 184599
number of failed transactions: 0 (0.000%)
latency average = 0.031 ms
latency stddev = 0.025 ms
initial connection time = 5.349 ms
tps = 61562.837455 (without initial connection time)
"""

# ... and stderr.
RUN_STDERR = """\
progress: 1.0 s, 52093.9 tps, lat 0.037 ms stddev 0.039, 0 failed
progress: 2.0 s, 65629.0 tps, lat 0.030 ms stddev 0.011, 0 failed
"""

# pgbench -n -c 1 -t 200 -M prepared -b select-only --random-seed=1 (the instruction pass's runs): stdout.
COUNTED_STDOUT = """\
pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 1
query mode: prepared
number of clients: 1
number of threads: 1
maximum number of tries: 1
number of transactions per client: 200
number of transactions actually processed: 200/200
number of failed transactions: 0 (0.000%)
latency average = 0.045 ms
initial connection time = 3.437 ms
tps = 22244.466689 (without initial connection time)
"""

# pgbench -n -c 2 -j 2 -M prepared -T 3 -P 1 -l --random-seed=1 -f slow.sql (a point query, then \sleep 40 ms).
SLOW_STDOUT = """\
pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: slow.sql
scaling factor: 1
query mode: prepared
number of clients: 2
number of threads: 2
maximum number of tries: 1
duration: 3 s
number of transactions actually processed: 148
number of failed transactions: 0 (0.000%)
latency average = 40.529 ms
latency stddev = 0.438 ms
initial connection time = 8.642 ms
tps = 49.271596 (without initial connection time)
"""

# ... its stderr...
SLOW_STDERR = """\
pgbench: setting random seed to 1
progress: 1.0 s, 48.0 tps, lat 40.765 ms stddev 0.704, 0 failed
progress: 2.0 s, 50.0 tps, lat 40.435 ms stddev 0.110, 0 failed
progress: 3.0 s, 48.0 tps, lat 40.397 ms stddev 0.034, 0 failed
"""

# ... and its two transaction logs: thread 0's (pgbench_log.PID) ...
SLOW_LOG_0 = """\
0 1 44155 0 1795773952 226896
0 2 40677 0 1795773952 267585
0 3 40874 0 1795773952 308482
0 4 40520 0 1795773952 349011
0 5 40843 0 1795773952 389877
0 6 40616 0 1795773952 430504
0 7 41200 0 1795773952 471746
0 8 40539 0 1795773952 512296
0 9 40708 0 1795773952 553046
0 10 40707 0 1795773952 593800
0 11 40540 0 1795773952 634369
0 12 40562 0 1795773952 674962
0 13 40694 0 1795773952 715689
0 14 40547 0 1795773952 756259
0 15 40386 0 1795773952 796666
0 16 40624 0 1795773952 837311
0 17 40525 0 1795773952 877858
0 18 40483 0 1795773952 918363
0 19 40560 0 1795773952 958945
0 20 40789 0 1795773952 999770
0 21 40435 0 1795773953 40222
0 22 40567 0 1795773953 80816
0 23 40419 0 1795773953 121253
0 24 40430 0 1795773953 161704
0 25 40468 0 1795773953 202192
0 26 40503 0 1795773953 242704
0 27 40348 0 1795773953 283072
0 28 40491 0 1795773953 323587
0 29 40391 0 1795773953 363997
0 30 40404 0 1795773953 404421
0 31 40511 0 1795773953 444953
0 32 40448 0 1795773953 485430
0 33 40429 0 1795773953 525883
0 34 40493 0 1795773953 566399
0 35 40518 0 1795773953 606941
0 36 40472 0 1795773953 647440
0 37 40362 0 1795773953 687822
0 38 40420 0 1795773953 728261
0 39 40454 0 1795773953 768736
0 40 40417 0 1795773953 809173
0 41 40361 0 1795773953 849555
0 42 40395 0 1795773953 889971
0 43 40403 0 1795773953 930394
0 44 40420 0 1795773953 970835
0 45 40594 0 1795773954 11450
0 46 40419 0 1795773954 51888
0 47 40366 0 1795773954 92273
0 48 40392 0 1795773954 132683
0 49 40408 0 1795773954 173108
0 50 40386 0 1795773954 213513
0 51 40377 0 1795773954 253908
0 52 40397 0 1795773954 294322
0 53 40445 0 1795773954 334787
0 54 40399 0 1795773954 375206
0 55 40398 0 1795773954 415624
0 56 40363 0 1795773954 456006
0 57 40502 0 1795773954 496526
0 58 40336 0 1795773954 536871
0 59 40395 0 1795773954 577285
0 60 40391 0 1795773954 617693
0 61 40367 0 1795773954 658067
0 62 40376 0 1795773954 698451
0 63 40392 0 1795773954 738862
0 64 40405 0 1795773954 779286
0 65 40372 0 1795773954 819674
0 66 40351 0 1795773954 860033
0 67 40443 0 1795773954 900485
0 68 40425 0 1795773954 940919
0 69 40433 0 1795773954 981373
0 70 40389 0 1795773955 21782
0 71 40401 0 1795773955 62199
0 72 40407 0 1795773955 102615
0 73 40422 0 1795773955 143049
0 74 40348 0 1795773955 183408
"""

# ... and thread 1's (pgbench_log.PID.1).
SLOW_LOG_1 = """\
1 1 43895 0 1795773952 226706
1 2 40987 0 1795773952 267739
1 3 40561 0 1795773952 308310
1 4 40797 0 1795773952 349134
1 5 40574 0 1795773952 389716
1 6 41038 0 1795773952 430785
1 7 40749 0 1795773952 471548
1 8 41078 0 1795773952 512659
1 9 40481 0 1795773952 553152
1 10 40635 0 1795773952 593801
1 11 40540 0 1795773952 634370
1 12 40562 0 1795773952 674962
1 13 40694 0 1795773952 715690
1 14 40547 0 1795773952 756259
1 15 40392 0 1795773952 796672
1 16 40620 0 1795773952 837309
1 17 40525 0 1795773952 877859
1 18 40483 0 1795773952 918363
1 19 40544 0 1795773952 958936
1 20 40779 0 1795773952 999762
1 21 40436 0 1795773953 40223
1 22 40567 0 1795773953 80816
1 23 40419 0 1795773953 121254
1 24 40430 0 1795773953 161704
1 25 40353 0 1795773953 202080
1 26 40624 0 1795773953 242727
1 27 40432 0 1795773953 283170
1 28 40609 0 1795773953 323806
1 29 40541 0 1795773953 364373
1 30 40509 0 1795773953 404905
1 31 40727 0 1795773953 445662
1 32 40657 0 1795773953 486352
1 33 40521 0 1795773953 526897
1 34 40569 0 1795773953 567493
1 35 40533 0 1795773953 608055
1 36 40513 0 1795773953 648666
1 37 40453 0 1795773953 689150
1 38 40245 0 1795773953 729402
1 39 40236 0 1795773953 769643
1 40 40230 0 1795773953 809879
1 41 40260 0 1795773953 850146
1 42 40297 0 1795773953 890450
1 43 40233 0 1795773953 930689
1 44 40254 0 1795773953 970949
1 45 40493 0 1795773954 11451
1 46 40419 0 1795773954 51888
1 47 40401 0 1795773954 92306
1 48 40369 0 1795773954 132683
1 49 40408 0 1795773954 173109
1 50 40386 0 1795773954 213514
1 51 40377 0 1795773954 253908
1 52 40397 0 1795773954 294323
1 53 40444 0 1795773954 334788
1 54 40400 0 1795773954 375206
1 55 40420 0 1795773954 415646
1 56 40352 0 1795773954 456007
1 57 40460 0 1795773954 496485
1 58 40366 0 1795773954 536871
1 59 40395 0 1795773954 577286
1 60 40369 0 1795773954 617672
1 61 40340 0 1795773954 658033
1 62 40400 0 1795773954 698452
1 63 40394 0 1795773954 738864
1 64 40405 0 1795773954 779286
1 65 40357 0 1795773954 819660
1 66 40337 0 1795773954 860015
1 67 40429 0 1795773954 900467
1 68 40429 0 1795773954 940919
1 69 40433 0 1795773954 981373
1 70 40393 0 1795773955 21785
1 71 40349 0 1795773955 62149
1 72 40437 0 1795773955 102608
1 73 40405 0 1795773955 143034
1 74 40355 0 1795773955 183409
"""

# Two clients at repeatable read updating one row with a 30 ms sleep before COMMIT: one of them fails every time.
CONFLICT_STDOUT = """\
pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: conflict.sql
scaling factor: 1
query mode: prepared
number of clients: 2
number of threads: 1
maximum number of tries: 1
duration: 2 s
number of transactions actually processed: 65
number of failed transactions: 64 (49.612%)
latency average = 31.120 ms
latency stddev = 0.190 ms
initial connection time = 4.985 ms
tps = 32.109913 (without initial connection time)
"""

# ... its stderr...
CONFLICT_STDERR = """\
pgbench: setting random seed to 1
progress: 1.0 s, 31.0 tps, lat 31.134 ms stddev 0.265, 31 failed
progress: 2.0 s, 33.0 tps, lat 31.107 ms stddev 0.070, 33 failed
"""

# ... and its one thread's transaction log.
CONFLICT_LOG = """\
0 1 32442 0 1795773955 239334
1 1 failed 0 1795773955 239627
0 2 30914 0 1795773955 270274
1 2 failed 0 1795773955 270534
0 3 30826 0 1795773955 301115
1 3 failed 0 1795773955 301395
0 4 31004 0 1795773955 332137
1 4 failed 0 1795773955 332309
0 5 31047 0 1795773955 363202
1 5 failed 0 1795773955 363361
0 6 31074 0 1795773955 394291
1 6 failed 0 1795773955 394490
0 7 31229 0 1795773955 425536
1 7 failed 0 1795773955 425729
0 8 31172 0 1795773955 456725
1 8 failed 0 1795773955 456923
0 9 31190 0 1795773955 487934
1 9 failed 0 1795773955 488170
0 10 31135 0 1795773955 519085
1 10 failed 0 1795773955 519229
0 11 31001 0 1795773955 550103
1 11 failed 0 1795773955 550278
0 12 31047 0 1795773955 581165
1 12 failed 0 1795773955 581293
0 13 31091 0 1795773955 612273
1 13 failed 0 1795773955 612451
0 14 31131 0 1795773955 643418
1 14 failed 0 1795773955 643613
0 15 31159 0 1795773955 674594
1 15 failed 0 1795773955 674911
0 16 31167 0 1795773955 705778
1 16 failed 0 1795773955 705952
0 17 30958 0 1795773955 736752
1 17 failed 0 1795773955 736960
0 18 31165 0 1795773955 767933
1 18 failed 0 1795773955 768142
0 19 31062 0 1795773955 799009
1 19 failed 0 1795773955 799135
0 20 31083 0 1795773955 830108
1 20 failed 0 1795773955 830251
0 21 31079 0 1795773955 861203
1 21 failed 0 1795773955 861508
0 22 31048 0 1795773955 892268
1 22 failed 0 1795773955 892956
0 23 31121 0 1795773955 923406
1 23 failed 0 1795773955 923535
0 24 31144 0 1795773955 954567
1 24 failed 0 1795773955 954805
0 25 31422 0 1795773955 986005
1 25 failed 0 1795773955 986110
1 26 31202 0 1795773956 17324
0 26 failed 0 1795773956 17589
1 27 30820 0 1795773956 48161
0 27 failed 0 1795773956 48344
1 28 31216 0 1795773956 79393
0 28 failed 0 1795773956 79488
0 29 31052 0 1795773956 110542
1 29 failed 0 1795773956 110736
0 30 31046 0 1795773956 141605
1 30 failed 0 1795773956 141768
0 31 31103 0 1795773956 172723
1 31 failed 0 1795773956 172951
0 32 31029 0 1795773956 203766
1 32 failed 0 1795773956 203950
0 33 31046 0 1795773956 234819
1 33 failed 0 1795773956 235016
0 34 31051 0 1795773956 265885
1 34 failed 0 1795773956 266044
0 35 31096 0 1795773956 296999
1 35 failed 0 1795773956 297224
0 36 31086 0 1795773956 328103
1 36 failed 0 1795773956 328316
0 37 31128 0 1795773956 359249
1 37 failed 0 1795773956 359439
0 38 31138 0 1795773956 390402
1 38 failed 0 1795773956 390616
0 39 31168 0 1795773956 421586
1 39 failed 0 1795773956 421778
0 40 31071 0 1795773956 452675
1 40 failed 0 1795773956 452852
0 41 31089 0 1795773956 483778
1 41 failed 0 1795773956 483976
0 42 31078 0 1795773956 514872
1 42 failed 0 1795773956 515122
0 43 31010 0 1795773956 545900
1 43 failed 0 1795773956 546142
0 44 30917 0 1795773956 576881
1 44 failed 0 1795773956 577089
0 45 31131 0 1795773956 608031
1 45 failed 0 1795773956 608301
0 46 31141 0 1795773956 639189
1 46 failed 0 1795773956 639320
0 47 31063 0 1795773956 670269
1 47 failed 0 1795773956 670553
0 48 31175 0 1795773956 701464
1 48 failed 0 1795773956 701676
0 49 31001 0 1795773956 732484
1 49 failed 0 1795773956 732672
0 50 31211 0 1795773956 763714
1 50 failed 0 1795773956 763888
0 51 31152 0 1795773956 794885
1 51 failed 0 1795773956 795089
0 52 31220 0 1795773956 826122
1 52 failed 0 1795773956 826292
0 53 31215 0 1795773956 857356
1 53 failed 0 1795773956 857554
0 54 31212 0 1795773956 888587
1 54 failed 0 1795773956 888788
0 55 31126 0 1795773956 919733
1 55 failed 0 1795773956 919916
0 56 31206 0 1795773956 950959
1 56 failed 0 1795773956 951165
0 57 31118 0 1795773956 982093
1 57 failed 0 1795773956 982319
0 58 31101 0 1795773957 13208
1 58 failed 0 1795773957 13426
0 59 31111 0 1795773957 44333
1 59 failed 0 1795773957 44540
0 60 31094 0 1795773957 75442
1 60 failed 0 1795773957 75632
0 61 31032 0 1795773957 106488
1 61 failed 0 1795773957 106667
0 62 31018 0 1795773957 137520
1 62 failed 0 1795773957 137741
0 63 31174 0 1795773957 168708
1 63 failed 0 1795773957 168927
0 64 31117 0 1795773957 199842
1 64 failed 0 1795773957 200040
0 65 31101 0 1795773957 230960
"""

# pgbench -c 1 -R 10 -T 2 -l -b select-only: with --rate a seventh column, the schedule lag.
RATE_LOG = """\
0 1 1487 0 1795773994 753025 215
0 2 514 0 1795773994 776654 134
0 3 646 0 1795773994 893573 233
0 4 590 0 1795773994 947618 151
0 5 801 0 1795773995 274856 407
0 6 583 0 1795773995 322319 148
0 7 466 0 1795773995 332686 128
0 8 649 0 1795773995 344258 182
0 9 573 0 1795773995 373523 126
0 10 724 0 1795773995 481781 244
0 11 649 0 1795773995 495106 189
0 12 767 0 1795773995 595656 257
0 13 844 0 1795773995 847774 383
0 14 690 0 1795773995 870621 290
0 15 818 0 1795773996 125644 357
0 16 678 0 1795773996 259595 222
0 17 643 0 1795773996 459860 270
"""

# A script whose second statement divides by zero now and then: both clients abort (exit 2).
ABORT_STDOUT = """\
pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: div.sql
scaling factor: 1
query mode: prepared
number of clients: 2
number of threads: 2
maximum number of tries: 1
duration: 2 s
number of transactions actually processed: 4253
number of failed transactions: 0 (0.000%)
latency average = 0.158 ms
latency stddev = 0.133 ms
initial connection time = 5.083 ms
tps = 6802.579638 (without initial connection time)
"""

# ... its stderr.
ABORT_STDERR = """\
pgbench: error: client 1 script 0 aborted in command 2 query 0: ERROR:  division by zero
pgbench: error: client 0 script 0 aborted in command 2 query 0: ERROR:  division by zero
pgbench: error: Run was aborted; the above results are incomplete.
"""

# simple-update at 2 clients, one of whose backends pg_terminate_backend ended 1.5 s in (exit 2).
LOST_STDOUT = """\
pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: simple update>
scaling factor: 1
query mode: simple
number of clients: 2
number of threads: 1
maximum number of tries: 1
duration: 3 s
number of transactions actually processed: 4386
number of failed transactions: 0 (0.000%)
latency average = 1.029 ms
latency stddev = 0.330 ms
initial connection time = 7.111 ms
tps = 1464.986619 (without initial connection time)
"""

# ... its stderr.
LOST_STDERR = """\
progress: 1.0 s, 1859.0 tps, lat 1.060 ms stddev 0.235, 0 failed
FATAL:  terminating connection due to administrator command
pgbench: error: client 0 aborted in command 4 (SQL) of script 0; perhaps the backend died while processing
progress: 2.0 s, 1457.9 tps, lat 1.060 ms stddev 0.475, 0 failed
progress: 3.0 s, 1068.1 tps, lat 0.932 ms stddev 0.179, 0 failed
pgbench: error: Run was aborted; the above results are incomplete.
"""


# ---- a stand-in pgbench that replays a captured run ----------------------------------------------------------

FAKE = """#!{python}
# A stand-in for pgbench (tests/unit/test_pgbench.py): it answers --version and replays the scene in
# $FAKE_PGBENCH_SCENE: its stderr, its stdout, its transaction logs at --log-prefix, its exit status.
import json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print({version!r})
    sys.exit(0)
scene = json.load(open(os.environ["FAKE_PGBENCH_SCENE"]))
with open(scene["record"], "w") as f:
    json.dump({{"argv": args, "env": dict(os.environ)}}, f)
prefix = next((a.split("=", 1)[1] for a in args if a.startswith("--log-prefix=")), None)
if prefix is not None:
    for suffix, text in scene.get("logs", {{}}).items():
        with open(f"{{prefix}}.{{os.getpid()}}{{suffix}}", "w") as f:
            f.write(text)
for line in scene.get("stderr", "").splitlines(keepends=True):
    sys.stderr.write(line)
    sys.stderr.flush()
sys.stdout.write(scene.get("stdout", ""))
sys.exit(scene.get("rc", 0))
"""

CONN = Access(
    ["--host", "127.0.0.1", "--port", "5433", "--user", "dbsweep", "--dbname", "dbsweep"],
    {"DBSWEEP_PASSWORD": "s3cret"},
)


@pytest.fixture
def debian(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Debian layout with Postgres 13 (without pgbench) and 15 (with the stand-in pgbench); returns 15's."""
    root = tmp_path / "postgresql"
    (root / "13" / "bin").mkdir(parents=True)
    exe = root / "15" / "bin" / "pgbench"
    exe.parent.mkdir(parents=True)
    exe.write_text(FAKE.format(python=sys.executable, version=VERSION))
    exe.chmod(0o755)
    monkeypatch.setattr(tool, "DEBIAN_ROOT", root)
    return exe


def suite(**kw: object) -> Pgbench:
    return Pgbench(PgbenchSettings(**kw))  # type: ignore[arg-type]


def replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, s: Pgbench, step: str, clients: int, **scene: object
) -> tuple[StepOutput, list[dict[str, object]], dict[str, object]]:
    """Runs `step` through the suite against the stand-in playing `scene`: its output, the lines it streamed,
    and what the stand-in was run with (argv, env)."""
    record = tmp_path / "record.json"
    (tmp_path / "scene.json").write_text(json.dumps({**scene, "record": str(record)}))
    monkeypatch.setenv("FAKE_PGBENCH_SCENE", str(tmp_path / "scene.json"))
    live: list[dict[str, object]] = []
    out = s.run(step, s.command(step, clients), CONN, tmp_path / "client" / f"{step}.c{clients}.log", live.append)
    return out, live, json.loads(record.read_text())


def ended(line: str) -> int:
    """When a transaction's log line says it ended: µs since the epoch."""
    f = line.split()
    return int(f[4]) * 1_000_000 + int(f[5])


# ---- the registry and the settings -------------------------------------------------------------------------


def test_the_registry_knows_the_suite() -> None:
    assert registry.suite_class("pgbench") is Pgbench and "pgbench" in registry.names()
    assert "pgbench" in registry.owner_of("scale") and "pgbench" in registry.owner_of("warmup_seconds")
    assert Pgbench.kinds == ("server",)


STUDY = """\
engine = "{engine}"
base = "a"
workspace = "{workspace}"

[suite]
name = "pgbench"
{suite}

[[targets]]
name = "a"
source = "system"
config = "{config}"
"""


def refused(tmp: Path, suite_lines: str, engine: str = "postgres", config: str = "cx10a_c2r24") -> str:
    """What `dbsweep validate` says of a study with these [suite] lines: it must refuse it, before any work."""
    path = tmp / "p.toml"
    path.write_text(STUDY.format(engine=engine, workspace=tmp / "ws", suite=suite_lines, config=config))
    r = cli("validate", path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert not (tmp / "ws").exists()
    return " ".join(r.stderr.split())


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        ('mode = "fast"', "suite.mode: 'fast' is not allowed; expected 'prepared' or 'simple'"),
        ("scale = 0", "suite.scale: must be > 0, got 0"),
        ("warmup_seconds = -1", "suite.warmup_seconds: must be >= 0, got -1"),
        ("threads = 0", "suite.threads: must be > 0, got 0"),
        ("seconds = 0", "suite.seconds: must be > 0, got 0"),
        ("rows = 1000", "suite.rows: is not a setting of the pgbench suite (it is one of the sysbench suite's)"),
        ('steps = ["load", "nope"]', "suite.steps[1]: unknown pgbench step 'nope'"),
        (
            'steps = ["load", "custom:mine"]',
            "suite.steps[1]: custom:mine names no script of [suite] custom (it has: none)",
        ),
        ('steps = "custom"', "suite.steps: the set custom runs the scripts of [suite] custom, and it names none"),
        ('steps = "all"', "suite.steps: unknown step set 'all'; have: default, read-only, read-write, custom"),
        (
            'steps = ["select-only"]',
            "suite.steps[0]: pgbench step select-only runs on the pgbench tables, which no step before it loads; "
            "add load before it in [suite] steps",
        ),
        ('[suite.custom]\n"my script" = "x.sql"', "suite.custom.my script: 'my script' is not a script name"),
        ("seconds = 2147483647", "suite.seconds: 2147483647 plus warmup_seconds (5) is more than pgbench's -T"),
    ],
)
def test_a_bad_setting_is_one_sentence_naming_its_field(tmp: Path, debian: Path, lines: str, said: str) -> None:
    assert said in refused(tmp, lines)


def test_custom_scripts_must_be_readable_and_hold_sql(tmp: Path, debian: Path) -> None:
    (tmp / "meta.sql").write_text("\\sleep 10 ms\n-- nothing else\n")
    lines = f'[suite.custom]\nmissing = "{tmp / "missing.sql"}"\nmeta = "{tmp / "meta.sql"}"\n'
    err = refused(tmp, lines)
    assert (
        f"suite.custom.missing: the script file {tmp / 'missing.sql'} cannot be read (No such file or directory)" in err
    )
    assert f"suite.custom.meta: the script file {tmp / 'meta.sql'} holds no SQL statement" in err


def test_the_pgbench_binary_is_checked_before_a_run(tmp: Path, debian: Path) -> None:
    err = refused(tmp, 'pgbench = "/nonexistent/bin/pgbench"')
    assert "suite.pgbench: /nonexistent/bin/pgbench does not exist" in err
    # Debian's /usr/bin/pgbench is a link to pg_wrapper, which picks a version per cluster.
    wrapper = tmp / "pg_wrapper"
    wrapper.write_text("#!/bin/sh\nexit 0\n")
    wrapper.chmod(0o755)
    (tmp / "pgbench").symlink_to(wrapper)
    err = refused(tmp, f'pgbench = "{tmp / "pgbench"}"')
    assert f"suite.pgbench: {tmp / 'pgbench'} is Debian's pg_wrapper" in err
    # Something that is not pgbench at all.
    other = tmp / "other"
    other.write_text("#!/bin/sh\necho 'psql (PostgreSQL) 15.18'\n")
    other.chmod(0o755)
    err = refused(tmp, f'pgbench = "{other}"')
    assert f"suite.pgbench: {other} is not pgbench: `--version` printed 'psql (PostgreSQL) 15.18'" in err


def test_without_pgbench_validation_names_the_package_to_install(tmp: Path, debian: Path) -> None:
    debian.unlink()
    err = refused(tmp, "scale = 1")
    assert "suite.pgbench: no pgbench is installed" in err
    assert "install Debian's postgresql-client-15" in err and "[suite] pgbench" in err


def test_only_postgres_runs_it(tmp: Path, debian: Path) -> None:
    problems = suite().engine_problems(engine_named("mariadb"))
    assert problems[0][0] == "suite.name" and "speaks only Postgres's protocol" in problems[0][1]
    assert "MariaDB" in problems[0][1] and "\n" not in problems[0][1]
    assert suite().engine_problems(engine_named("postgres")) == []
    # An engine of another kind is refused by the study itself (the suite's kinds).
    err = refused(tmp, "scale = 1", engine="sqlite", config="default")
    assert "suite.name: the pgbench suite does not run against SQLite" in err


def test_a_good_study_validates_and_says_which_pgbench(tmp: Path, debian: Path) -> None:
    path = tmp / "p.toml"
    path.write_text(
        STUDY.format(engine="postgres", workspace=tmp / "ws", suite="scale = 2\nclients = [1, 2]", config="cx10a_c2r24")
    )
    r = cli("validate", path)
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stdout.split())
    assert f"4 pgbench steps at scale 2 (prepared), clients [1, 2], 5 + 60 s each; {debian} ({VERSION})" in said
    assert "7 cells" in said  # the load once, three scripts at two client counts


# ---- steps and command lines ---------------------------------------------------------------------------------


def test_steps_sets_groups_and_what_a_measurement_is(tmp_path: Path, debian: Path) -> None:
    mine = tmp_path / "mine.sql"
    mine.write_text(SLOW_SQL)
    s = suite(scale=3, clients=[1, 4], custom={"mine": str(mine)})
    assert s.steps() == ["load", "select-only", "simple-update", "tpcb-like", "custom:mine"]
    assert suite(steps="read-only").steps() == ["load", "select-only"]
    assert suite(steps="custom", custom={"mine": str(mine)}).steps() == ["load", "custom:mine"]
    assert Pgbench.canonical("custom:mine") == "custom:mine" and Pgbench.canonical("custom:") is None
    assert s.setup_steps() == ("load",) and s.loads("load") and not s.loads("select-only")
    assert s.clients("load") == [1] and s.clients("tpcb-like") == [1, 4]
    assert [s.group_of(st) for st in s.steps()] == ["load", "read", "write", "write", "custom"]
    assert not s.in_summaries("load") and s.in_summaries("select-only")
    assert s.ops_name("load") == "rows" and s.ops_name("tpcb-like") == "transactions"
    assert s.step_label("tpcb-like", 4) == "tpcb-like"
    assert s.tables() == ["pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"]
    # VACUUM and CHECKPOINT after the load and after each writing step, before the step that follows.
    assert s.maintenance_points() == {"select-only", "tpcb-like", "custom:mine"}
    assert suite(steps=["load", "select-only", "select-only"]).maintenance_points() == {"select-only"}
    load = s.expectation("load")
    assert load.work == ("operations", 300_000) and not load.steady and load.seconds is None
    timed = s.expectation("tpcb-like")
    assert timed.seconds == 60.0 and timed.steady
    assert s.progress("load").total == 300_000 and s.progress("select-only").total == 65.0
    d = s.duration()
    assert d.steps == 4 * 2 * 66.0 and d.maintenances == 3
    # ~16 MB a unit of scale, what the writing steps add, and the transaction logs.
    small = suite(scale=3, clients=[1], steps="read-only", seconds=1, warmup_seconds=0)
    assert 3 * 16_000_000 < small.data_bytes() < 3 * 16_300_000 + 30_000 * 40
    assert s.data_bytes() > small.data_bytes() + 3 * 65 * 3_000 * 200
    assert [c.need for c in s.connections()] == [1, 1, 4, 1, 4, 1, 4, 1, 4]


def test_command_lines(tmp_path: Path, debian: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dbsweep.suites.pgbench as module

    monkeypatch.setattr(module.machine, "cpus", lambda: 2)
    mine = tmp_path / "mine.sql"
    mine.write_text(SLOW_SQL)
    s = suite(scale=3, clients=[1, 4], seconds=30, warmup_seconds=5, seed=7, custom={"mine": str(mine)})
    exe = str(debian)
    assert s.command("load", 1) == [exe, "-i", "-s", "3", "-I", "dtgvp", "--quiet"]
    run = ["-M", "prepared", "-T", "35", "-P", "1", "-l", "--random-seed=7"]
    assert s.command("tpcb-like", 4) == [exe, "-n", "-c", "4", "-j", "2", *run, "-b", "tpcb-like"]
    assert s.command("select-only", 1) == [exe, "-n", "-c", "1", "-j", "1", *run, "-b", "select-only"]
    # A custom script gets the scale as its :scale (a built-in one reads it from pgbench_branches).
    assert s.command("custom:mine", 1)[-4:] == ["-s", "3", "-f", str(mine)]
    # threads: the setting, never more than the clients.
    assert suite(threads=8).command("select-only", 4)[3:6] == ["4", "-j", "4"]
    assert suite(threads=1).command("select-only", 4)[3:6] == ["4", "-j", "1"]
    assert suite(mode="simple").command("select-only", 1)[6:8] == ["-M", "simple"]
    # The instruction pass: one client, a fixed number of transactions, no progress lines or logs.
    counted = [exe, "-n", "-c", "1", "-j", "1", "-M", "prepared"]
    assert s.instruction_command("select-only", 2) == [*counted, "-T", "2", "--random-seed=7", "-b", "select-only"]
    plan = s.instruction_plan("select-only", 2, 300)
    assert plan.command(300) == [*counted, "-t", "300", "--random-seed=7", "-b", "select-only"]
    assert plan.short == 300 and plan.keeps_state and plan.probe is not None and plan.probe()[-5:-3] == ["-T", "2"]
    assert not s.instruction_plan("tpcb-like", 2).keeps_state
    assert list(s.instruction_steps()) == ["select-only", "simple-update", "tpcb-like", "custom:mine"]
    assert s.client() is tool.run
    # The pgbench setting wins over Debian's newest.
    other = tmp_path / "pgbench"
    other.symlink_to(debian)
    assert suite(pgbench=str(other)).command("load", 1)[0] == str(other)


def test_the_connection_becomes_pgbenchs_and_the_password_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGOPTIONS", "-c default_transaction_isolation=serializable")
    monkeypatch.setenv("PGDATABASE", "elsewhere")
    args, env = tool.connection(CONN)
    assert args == ["--host", "127.0.0.1", "--port", "5433", "--username", "dbsweep", "dbsweep"]
    assert env["PGPASSWORD"] == "s3cret" and "DBSWEEP_PASSWORD" not in env
    assert "PGOPTIONS" not in env and "PGDATABASE" not in env and env["LC_ALL"] == "C"
    with pytest.raises(StepError, match="cannot take the instance's connection argument --library x"):
        tool.connection(Access(["--library", "x"], {}))


def test_statements_per_transaction() -> None:
    assert {name: b.statements for name, b in steps.BUILTINS.items()} == {
        "select-only": 1,
        "simple-update": 5,
        "tpcb-like": 7,
    }
    assert steps.statements_in(SLOW_SQL) == 1 and steps.statements_in(CONFLICT_SQL) == 3
    script = """-- a comment; with a semicolon
\\set aid random(1, 10)
BEGIN;
SELECT 'a;b' FROM t WHERE x = :aid; /* c;d */
UPDATE t
   SET y = 1
 WHERE x = :aid;
SELECT y FROM t WHERE x = :aid \\gset
END
"""
    assert steps.statements_in(script) == 5
    assert steps.statements_in("\\sleep 1 ms\n") == 0


# ---- parsing what pgbench 15 writes ----------------------------------------------------------------------------


def test_the_loads_result_and_progress() -> None:
    done = output.loaded(INIT_STDERR)
    assert done.seconds == 0.16
    assert done.phases == {
        "drop_tables": 0.0,
        "create_tables": 0.01,
        "client_side_generate": 0.08,
        "vacuum": 0.04,
        "primary_keys": 0.03,
    }
    assert output.loaded(INIT_BIG_STDERR).phases["client_side_generate"] == 7.74
    progress = [p for line in INIT_BIG_STDERR.splitlines() if (p := output.load_progress(line)) is not None]
    assert progress == [(7725400, 12000000, 5.14), (12000000, 12000000, 7.57)]
    with pytest.raises(ValueError, match="no 'done in"):
        output.loaded("creating tables...\n")


def test_progress_lines_and_the_summary() -> None:
    seconds = [output.progress(line) for line in RUN_STDERR.splitlines()]
    assert seconds == [
        output.Second(t=1.0, tps=52093.9, latency_ms=0.037, stddev_ms=0.039, failed=0),
        output.Second(t=2.0, tps=65629.0, latency_ms=0.030, stddev_ms=0.011, failed=0),
    ]
    assert [output.progress(line).failed for line in CONFLICT_STDERR.splitlines()[1:]] == [31, 33]  # type: ignore[union-attr]
    assert output.progress("pgbench: setting random seed to 1") is None
    run = output.summary(RUN_STDOUT)
    assert (run.transactions, run.failed, run.tps, run.latency_ms, run.stddev_ms) == (
        184599,
        0,
        61562.837455,
        0.031,
        0.025,
    )
    assert run.fields["query mode"] == "prepared" and run.fields["number of threads"] == "2"
    assert output.summary(COUNTED_STDOUT).transactions == 200  # "200/200" with -t
    assert output.summary(CONFLICT_STDOUT).failed == 64
    assert output.summary("").transactions is None


def test_aborted_clients_are_read_from_both_forms() -> None:
    aborts = [(output.aborted(ln), output.message(ln)) for ln in (ABORT_STDERR + LOST_STDERR).splitlines()]
    found = [(c, m) for c, m in aborts if c is not None]
    assert found == [
        (1, "client 1 script 0 aborted in command 2 query 0: ERROR:  division by zero"),
        (0, "client 0 script 0 aborted in command 2 query 0: ERROR:  division by zero"),
        (0, "client 0 aborted in command 4 (SQL) of script 0; perhaps the backend died while processing"),
    ]


def test_transaction_logs_are_cut_at_the_warm_up(tmp_path: Path) -> None:
    (tmp_path / "pgbench_log.24740").write_text(SLOW_LOG_0)
    (tmp_path / "pgbench_log.24740.1").write_text(SLOW_LOG_1)
    tx = logs.read_logs(tmp_path.glob("pgbench_log.*"))
    lines = (SLOW_LOG_0 + SLOW_LOG_1).splitlines()
    assert len(tx) == len(lines) == 148 and tx.malformed == 0
    # Worked out here from the text: second 0 is when the first transaction began (its end less its latency).
    origin = min(ended(ln) - int(ln.split()[2]) for ln in lines)
    after = [ln for ln in lines if ended(ln) > origin + 1_000_000]
    m = logs.measured(tx, warmup_s=1)
    assert m.start_us == origin
    assert m.events == len(after) and m.warmup_events == len(lines) - len(after) and m.errors == {}
    assert 0 < m.warmup_events < m.events
    assert m.seconds == (max(map(ended, lines)) - origin - 1_000_000) / 1e6
    assert 1.9 < m.seconds < 2.05 and m.rate == m.events / m.seconds
    # The sleep of 40 ms is every transaction's latency.
    latencies = sorted(int(ln.split()[2]) for ln in after)
    assert m.latency.min == latencies[0] and m.latency.max == latencies[-1] and 40_000 < m.latency.p50 < 41_000
    assert m.latency.mean == pytest.approx(sum(latencies) / len(latencies))
    h = HdrHistogram.decode(m.histogram)
    assert h.get_total_count() == m.events and h.get_max_value() >= latencies[-1]
    # A line per second: the first is the warm-up; together they hold every transaction. pgbench's -T clock
    # started before the clients connected (8.6 ms), and the last transactions ended after it ran out: the
    # last second holds those few.
    assert [(ln["t"], ln["phase"], ln["ops"]) for ln in m.lines] == [
        (1, "warmup", 48),
        (2, "measure", 50),
        (3, "measure", 48),
        (4, "measure", 2),
    ]
    assert m.lines[0]["ops"] == m.warmup_events
    assert all(40_000 < int(ln["max_us"]) < 45_000 for ln in m.lines)
    # Without a warm-up every transaction is measured.
    assert logs.measured(tx, warmup_s=0).events == 148


def test_failed_transactions_are_counted_as_errors(tmp_path: Path) -> None:
    (tmp_path / "pgbench_log.24747").write_text(CONFLICT_LOG)
    tx = logs.read_logs([tmp_path / "pgbench_log.24747"])
    lines = CONFLICT_LOG.splitlines()
    failed = [ln for ln in lines if ln.split()[2] == "failed"]
    assert len(failed) == 64 and len(tx) == 129
    m = logs.measured(tx, warmup_s=0)
    assert m.errors == {"failed": 64} and m.error_count == 64 and m.events == 65
    assert sum(int(ln["errors"]) for ln in m.lines) == 64


def test_a_log_with_the_rate_limits_schedule_lag(tmp_path: Path) -> None:
    (tmp_path / "pgbench_log.1").write_text(RATE_LOG)
    tx = logs.read_logs([tmp_path / "pgbench_log.1"])
    assert len(tx) == 17 and tx.latency_us.tolist()[:3] == [1487, 514, 646]
    # A file cut short by a crash: the whole lines are read, the broken one left out.
    (tmp_path / "pgbench_log.1").write_text(RATE_LOG + "0 18 5")
    cut = logs.read_logs([tmp_path / "pgbench_log.1"])
    assert len(cut) == 17 and cut.malformed == 1
    assert np.array_equal(cut.end_us, tx.end_us)


# ---- runs through the suite, against the stand-in ------------------------------------------------------------


def test_a_timed_run_streams_its_seconds_and_is_cut_at_its_warm_up(
    tmp_path: Path, debian: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGOPTIONS", "-c statement_timeout=1")
    mine = tmp_path / "slow.sql"
    mine.write_text(SLOW_SQL)
    s = suite(scale=1, clients=[2], seconds=2, warmup_seconds=1, custom={"slow": str(mine)})
    written = {"": SLOW_LOG_0, ".1": SLOW_LOG_1}
    out, live, ran = replay(
        tmp_path, monkeypatch, s, "custom:slow", 2, stderr=SLOW_STDERR, stdout=SLOW_STDOUT, logs=written
    )
    r = out.result
    assert r.suite == "pgbench" and r.step == "custom:slow" and r.ops_name == "transactions"
    # The logs the stand-in wrote where the command said, beside the step's log.
    tx = tmp_path / "client" / "custom:slow.c2.log.transactions"
    assert r.events == r.operations == logs.measured(logs.read_logs(tx.glob("pgbench_log.*")), 1).events
    assert r.ended_early is None and r.error_count == 0 and r.tps == r.rate > 0
    # pgbench's progress lines, streamed as they came; the stored ones are the logs' seconds.
    assert [(ln["t"], ln["phase"], ln["ops"]) for ln in live] == [
        (1, "warmup", 48),
        (2, "measure", 50),
        (3, "measure", 48),
    ]
    assert out.seconds == logs.measured(logs.read_logs(tx.glob("pgbench_log.*")), 1).lines
    d = r.detail
    assert d["pgbench"] == str(debian) and d["pgbench_version"] == VERSION
    assert d["script"] == str(mine) and d["statements_per_event"] == 1 and len(d["script_sha256"]) == 64
    assert d["warmup_events"] + r.events == 148 and d["transaction_logs"] == 2
    assert d["pgbench_summary"]["transactions"] == 148 and d["clients"] == 2 and d["mode"] == "prepared"
    assert integrity.check(s.expectation("custom:slow"), r.flat(), out.seconds) is None
    # The connection as pgbench takes it, the database last; the password in its environment only.
    argv = ran["argv"]
    assert argv[-7:] == ["--host", "127.0.0.1", "--port", "5433", "--username", "dbsweep", "dbsweep"]
    assert any(a.startswith("--log-prefix=") for a in argv) and "s3cret" not in " ".join(argv)
    env = ran["env"]
    assert env["PGPASSWORD"] == "s3cret" and "DBSWEEP_PASSWORD" not in env and "PGOPTIONS" not in env  # type: ignore[operator,index]
    assert d["command"][0] == "pgbench" and "s3cret" not in json.dumps(r.flat())


def test_the_load_reports_its_rows_and_phases(tmp_path: Path, debian: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = suite(scale=1)
    out, live, _ = replay(tmp_path, monkeypatch, s, "load", 1, stderr=INIT_STDERR)
    r = out.result
    assert (r.step, r.ops_name, r.operations, r.seconds) == ("load", "rows", 100_000, 0.16)
    assert r.rate == pytest.approx(100_000 / 0.16)
    assert r.detail["phases"]["primary_keys"] == 0.03 and r.detail["pgbench_version"] == VERSION
    assert live == [{"type": "second", "t": 0.01, "phase": "measure", "ops": 100_000, "errors": 0, "max_us": 0}]
    assert integrity.check(s.expectation("load"), r.flat(), out.seconds) is None
    with pytest.raises(StepError, match="pgbench -i failed \\(exit 1\\): could not create connection"):
        replay(tmp_path, monkeypatch, s, "load", 1, stderr="pgbench: error: could not create connection\n", rc=1)


def test_a_client_that_aborted_ends_the_step_early(
    tmp_path: Path, debian: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = suite(scale=1, clients=[2], seconds=2, warmup_seconds=1)
    out, _, _ = replay(tmp_path, monkeypatch, s, "simple-update", 2, stderr=LOST_STDERR, stdout=LOST_STDOUT, rc=2)
    early = out.result.ended_early
    assert early is not None and early.connections_lost == 1
    assert early.reason == (
        "client 0 aborted in command 4 (SQL) of script 0; perhaps the backend died while processing (pgbench exited 2)"
    )
    problem = integrity.check(s.expectation("simple-update"), out.result.flat(), out.seconds)
    assert problem is not None and problem.startswith("the load client lost 1 connection")
    # Both clients of a script that divides by zero now and then.
    out, _, _ = replay(tmp_path, monkeypatch, s, "simple-update", 2, stderr=ABORT_STDERR, stdout=ABORT_STDOUT, rc=2)
    assert out.result.ended_early is not None and out.result.ended_early.connections_lost == 2
    assert "division by zero" in out.result.ended_early.reason
    assert len(out.result.detail["aborted"]) == 2
    # A non-zero exit without a line that says why still ends it early.
    out, _, _ = replay(tmp_path, monkeypatch, s, "simple-update", 2, stderr="", stdout=LOST_STDOUT, rc=2)
    assert out.result.ended_early is not None and out.result.ended_early.reason == "pgbench exited 2"


def test_failed_transactions_fail_the_step(tmp_path: Path, debian: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "conflict.sql"
    mine.write_text(CONFLICT_SQL)
    s = suite(scale=1, clients=[2], seconds=2, warmup_seconds=0, custom={"conflict": str(mine)})
    out, _, _ = replay(
        tmp_path,
        monkeypatch,
        s,
        "custom:conflict",
        2,
        stderr=CONFLICT_STDERR,
        stdout=CONFLICT_STDOUT,
        logs={"": CONFLICT_LOG},
    )
    r = out.result
    assert r.errors == {"failed": 64} and r.error_count == 64 and r.events == 65
    assert r.detail["statements_per_event"] == 3 and r.ended_early is None
    problem = integrity.check(s.expectation("custom:conflict"), r.flat(), out.seconds)
    assert problem is not None and problem.startswith("64 of 129 events failed")


def test_a_run_that_never_started_is_a_step_error(
    tmp_path: Path, debian: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = suite(scale=1, seconds=2, warmup_seconds=1)
    refused_by = 'pgbench: error: connection to server at "127.0.0.1", port 5433 failed: Connection refused\n'
    with pytest.raises(StepError, match="pgbench failed \\(exit 1\\): connection to server at"):
        replay(tmp_path, monkeypatch, s, "select-only", 1, stderr=refused_by, rc=1)


def test_the_instruction_pass_runs_a_fixed_number_of_transactions(
    tmp_path: Path, debian: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = suite(scale=1, seed=1)
    record = tmp_path / "record.json"
    (tmp_path / "scene.json").write_text(
        json.dumps({"stdout": COUNTED_STDOUT, "stderr": "pgbench: setting random seed to 1\n", "record": str(record)})
    )
    monkeypatch.setenv("FAKE_PGBENCH_SCENE", str(tmp_path / "scene.json"))
    plan = s.instruction_plan("select-only", 2)
    out = s.client()(plan.command(200), CONN, tmp_path / "count.log")
    flat = out.result.flat()
    # What the instruction pass reads of a run: every transaction is an event, and its statements.
    assert flat["events"] + flat["warmup_events"] == 200 and flat["statements_per_event"] == 1
    assert flat["error_count"] == 0 and flat["step"] == "select-only"
    assert "-t" in json.loads(record.read_text())["argv"]
