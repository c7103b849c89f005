"""End-to-end: real host CLIs, offline, against the fake model; the effect is checked on disk.

One test per (host, scenario).  See README.md in this folder.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest

import install
import scenarios

CASES = []
NOT_APPLICABLE = []
for _host in install.HOSTS:
    for _sc in scenarios.SCENARIOS:
        if scenarios.applicable(_sc, _host):
            CASES.append((_host, _sc.name))
        else:
            NOT_APPLICABLE.append((_host, _sc.name, scenarios.why_not(_sc, _host)))


@pytest.mark.parametrize("host,scenario", CASES, ids=["%s-%s" % c for c in CASES])
def test_host_effect(matrix, host, scenario):
    res = matrix.result(host, scenario)
    detail = "\n".join([res.line()] + ["note: " + n for n in res.notes]
                       + ["run folder: " + res.run_dir])
    if not res.ok:
        pytest.fail(detail, pytrace=False)  # the case's own report says it all
