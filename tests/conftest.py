"""Suite-wide collection order: the longest tests run first, so `pytest -n 2` does not end on one worker
running a several-minute test alone (CI's wall time is bounded by that tail)."""

# file names of the tests that take minutes on 2 cores (measured with --durations), longest first
LONGEST_FIRST = ("test_learns_lookup.py", "test_quickstart_determinism.py", "test_pretrain_job.py",
                 "test_resume_cli.py", "test_notebooks.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)    # stable: every other test keeps its collection order
