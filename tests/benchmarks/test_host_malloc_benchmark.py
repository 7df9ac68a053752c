"""benchmarks/host_malloc.py runs the quickstart's SFT update in one child process per policy: under `keep` the
child re-faults far fewer pages than under glibc's defaults (its temporaries stay mapped between calls)."""
import json

from benchmarks.host_malloc import POLICIES, VARIANT, main


def test_keep_child_faults_less_than_system_child(tmp_path):
    out = tmp_path / "out.json"
    main(["--batches", "3", "--rounds", "1", "--repeats", "1", "--json", str(out)])
    result = json.loads(out.read_text())
    assert set(result["runs"]) == set(POLICIES) and all(len(r) == 1 for r in result["runs"].values())
    keep, system = result["runs"]["keep"][0], result["runs"]["system"][0]
    assert set(keep["update_s"]) == {"512_fixed", VARIANT} and keep["update_s"][VARIANT] > 0
    assert keep["minor_faults"] * 2 < system["minor_faults"], (keep, system)
    assert result["speedup_keep_over_system"] == system["update_s"][VARIANT] / keep["update_s"][VARIANT]
